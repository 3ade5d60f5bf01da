package fileparser

import (
	"mime"
	"net/url"
	"strings"

	"github.com/switchyard/switchyard/abi"
)

// Files given by URL (file_data "https://…") are fetched through the
// host's http function: the host refuses loopback, private and metadata
// addresses (the SSRF guard, checked on the address it dials), caps the
// response (modules.http.max_response_bytes) and follows no redirect, so
// each redirect comes back here and is fetched as a new call — checked
// again by the host. Plain http:// is refused: a file the gateway hands to
// a model should not be open to tampering on the way.

// maxRedirects is how many redirects one file may take.
const maxRedirects = 3

// fetch returns the PDF at rawURL.
func (m *Module) fetch(rawURL string, lim Limits) ([]byte, *FileError) {
	if m.HTTP == nil {
		return nil, fileErr("unsupported", "this gateway cannot fetch files by URL here; send the file as a data URL (data:application/pdf;base64,…)")
	}
	for hop := 0; ; hop++ {
		u, err := url.Parse(rawURL)
		switch {
		case err != nil || u.Host == "":
			return nil, fileErr("malformed", "file.file_data is not a valid URL")
		case u.Scheme == "http":
			return nil, fileErr("insecure_url", "plain http URLs are not fetched: use an https URL or a data URL")
		case u.Scheme != "https":
			return nil, fileErr("malformed", "file.file_data must be an https URL or a data URL")
		case u.User != nil:
			return nil, fileErr("malformed", "file.file_data must not carry credentials in the URL")
		}
		status, headers, body, err := m.HTTP("GET", u.String(), "Accept: application/pdf", nil)
		if err != nil {
			code := int64(abi.HTTPFailed)
			if he, ok := err.(*HostErr); ok {
				code = he.Code
			}
			switch {
			case code == abi.HTTPDenied:
				return nil, fileErr("fetch_denied", "the gateway may not fetch %s (%s)", u.Host, short(err.Error()))
			case code == abi.HTTPBudget:
				return nil, fileErr("budget", "this request's budget of outbound calls is spent; send fewer files by URL")
			case strings.Contains(err.Error(), "larger than"):
				return nil, fileErr("too_large", "the file at the URL is over the gateway's size limit for fetched files (%s)", short(err.Error()))
			}
			return nil, fileErr("fetch_failed", "fetching the URL failed (%s)", short(err.Error()))
		}
		if status >= 300 && status < 400 {
			loc := header(headers, "Location")
			if loc == "" {
				return nil, fileErr("fetch_failed", "the URL answered %d without a Location", status)
			}
			if hop >= maxRedirects {
				return nil, fileErr("fetch_failed", "the URL redirects more than %d times", maxRedirects)
			}
			next, err := u.Parse(loc)
			if err != nil {
				return nil, fileErr("fetch_failed", "the URL redirects to an invalid Location")
			}
			rawURL = next.String()
			continue
		}
		if status != 200 {
			return nil, fileErr("fetch_failed", "fetching the URL answered HTTP %d", status)
		}
		if len(body) > lim.Bytes {
			return nil, fileErr("too_large", "the file is %d bytes, over the limit of %d", len(body), lim.Bytes)
		}
		mt, _, _ := mime.ParseMediaType(header(headers, "Content-Type"))
		switch {
		case mt == "application/pdf" || mt == "application/x-pdf":
		case (mt == "application/octet-stream" || mt == "binary/octet-stream" || mt == "") && isPDF(body):
			// Object stores often serve files untyped: a PDF is a PDF.
		default:
			if mt == "" {
				mt = "no content type"
			}
			return nil, fileErr("unsupported", "the URL serves %s, not a PDF (application/pdf)", mt)
		}
		// The host reuses the buffer on its next call.
		return append([]byte(nil), body...), nil
	}
}

// header finds a response header in the host's "Name: value" lines.
func header(lines, name string) string {
	for _, l := range strings.Split(lines, "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.EqualFold(strings.TrimSpace(k), name) {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
