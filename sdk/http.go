//go:build wasip1

package sdk

import (
	"strconv"
	"unsafe"

	"github.com/switchyard/switchyard/abi"
)

//go:wasmimport switchyard http_request
func hostHTTPRequest(ptr unsafe.Pointer, n int32) int64

//go:wasmimport switchyard http_response
func hostHTTPResponse(ptr unsafe.Pointer, limit int32) int32

var (
	httpReq  []byte
	httpResp []byte
	httpFlds [][]byte
)

// HTTPError is a failed outbound call: Denied when the destination is not
// granted or not public (or a secret it names is not), otherwise the call
// itself failed. Code is the host's code (abi.HTTPDenied, abi.HTTPFailed,
// or abi.HTTPBudget when the request's budget of calls is spent).
type HTTPError struct {
	Denied  bool
	Code    int64
	Message string
}

func (e *HTTPError) Error() string { return e.Message }

// HTTP makes an outbound call through the host. The manifest must grant
// host function "http" and list the URL's host in grants.http_domains.
// headers are "Name: value" lines. A header value or the URL's query may
// hold ${secret:NAME} for an operator secret the manifest lists in
// grants.secrets: the host substitutes it, and the module never sees it.
// The returned slices are reused by the next call.
func HTTP(method, url, headers string, body []byte) (status int, respHeaders string, respBody []byte, err error) {
	httpReq = abi.AppendFieldString(httpReq[:0], method)
	httpReq = abi.AppendFieldString(httpReq, url)
	httpReq = abi.AppendFieldString(httpReq, headers)
	httpReq = abi.AppendField(httpReq, body)
	n := hostHTTPRequest(unsafe.Pointer(&httpReq[0]), int32(len(httpReq)))
	size := n
	if size < 0 {
		size = int64(hostHTTPResponse(nil, 0))
	}
	if int(size) > cap(httpResp) {
		httpResp = make([]byte, size)
	}
	httpResp = httpResp[:size]
	if size > 0 {
		hostHTTPResponse(unsafe.Pointer(&httpResp[0]), int32(size))
	}
	httpFlds, _ = abi.Fields(httpFlds, httpResp)
	if n < 0 {
		msg := "outbound call failed"
		if len(httpFlds) > 0 {
			msg = string(httpFlds[0])
		}
		return 0, "", nil, &HTTPError{Denied: n == abi.HTTPDenied, Code: n, Message: msg}
	}
	if len(httpFlds) < 3 {
		return 0, "", nil, &HTTPError{Code: abi.HTTPFailed, Message: "malformed response from host"}
	}
	status, _ = strconv.Atoi(string(httpFlds[0]))
	return status, string(httpFlds[1]), httpFlds[2], nil
}
