package upstream

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
)

// writeBoth writes the request newReq builds with writeFast and with
// net/http's Request.Write, and reports whether writeFast took it.
func writeBoth(t testing.TB, newReq func() *http.Request) (fast, std string, took bool) {
	t.Helper()
	var a, b bytes.Buffer
	bw := bufio.NewWriter(&a)
	took, err := writeFast(bw, newReq())
	if err != nil {
		t.Fatalf("writeFast: %v", err)
	}
	_ = bw.Flush()
	_ = newReq().Write(&b) // an error leaves what it wrote; writeFast must not take such a request
	return a.String(), b.String(), took
}

// The hand-written writer sends exactly the bytes net/http would, for every
// request it takes; the rest it leaves to Request.Write.
func TestWriteMatchesNetHTTP(t *testing.T) {
	body := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`
	cases := []struct {
		name   string
		method string
		url    string
		body   string
		header map[string][]string
		host   string
		mutate func(*http.Request)
		took   bool
	}{
		{name: "chat", method: "POST", url: "http://127.0.0.1:18000/v1/chat/completions", body: body,
			header: map[string][]string{"Content-Type": {"application/json"}, "Authorization": {"Bearer sk-x"}, "Traceparent": {"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}, took: true},
		{name: "query and port", method: "POST", url: "http://example.com:8080/v1beta/models/g:generateContent?alt=sse&key=abc%20d", body: body, took: true},
		{name: "default port", method: "POST", url: "http://localhost/v1/embeddings", body: "x", took: true},
		{name: "get without body", method: "GET", url: "http://127.0.0.1:1/v1/models", took: true},
		{name: "post without body", method: "POST", url: "http://127.0.0.1:1/x", took: true},
		{name: "delete without body", method: "DELETE", url: "http://127.0.0.1:1/x", took: true},
		{name: "own user agent", method: "POST", url: "http://h/x", body: "b", header: map[string][]string{"User-Agent": {"  switchyard/1  "}}, took: true},
		{name: "blank user agent", method: "POST", url: "http://h/x", body: "b", header: map[string][]string{"User-Agent": {"   "}}, took: true},
		{name: "empty user agent", method: "POST", url: "http://h/x", body: "b", header: map[string][]string{"User-Agent": {""}}, took: true},
		{name: "no user agent values", method: "POST", url: "http://h/x", body: "b", header: map[string][]string{"User-Agent": {}}, took: true},
		{name: "values trimmed, repeated, excluded", method: "POST", url: "http://h/x", body: "b",
			header: map[string][]string{"X-A": {" 1 ", "\t2"}, "Host": {"evil"}, "Content-Length": {"99"}, "Transfer-Encoding": {"chunked"}, "Trailer": {"X"}, "x-lower": {"v"}}, took: true},
		{name: "request host", method: "POST", url: "http://127.0.0.1:1/x", body: "b", host: "api.example.com", took: true},
		{name: "unicode host", method: "POST", url: "http://127.0.0.1:1/x", body: "b", host: "bücher.example", took: false},
		{name: "zone in host", method: "POST", url: "http://[fe80::1%25eth0]:80/x", body: "b", took: false},
		{name: "connection close", method: "POST", url: "http://h/x", body: "b", mutate: func(r *http.Request) { r.Close = true }, took: false},
		{name: "unknown length", method: "POST", url: "http://h/x", body: "b", mutate: func(r *http.Request) { r.ContentLength = -1 }, took: false},
		{name: "body of length zero", method: "POST", url: "http://h/x", body: "b", mutate: func(r *http.Request) { r.ContentLength = 0 }, took: false},
		{name: "chunked", method: "POST", url: "http://h/x", body: "b", mutate: func(r *http.Request) { r.TransferEncoding = []string{"chunked"} }, took: false},
		{name: "trailer", method: "POST", url: "http://h/x", body: "b", mutate: func(r *http.Request) { r.Trailer = http.Header{"X": nil} }, took: false},
		{name: "opaque", method: "POST", url: "http://h/x", body: "b", mutate: func(r *http.Request) { r.URL.Opaque = "//h/y" }, took: false},
		{name: "control in path", method: "POST", url: "http://h/x", body: "b", mutate: func(r *http.Request) { r.URL.Path = "/a\nb" }, took: true}, // escaped
		{name: "control in query", method: "POST", url: "http://h/x", body: "b", mutate: func(r *http.Request) { r.URL.RawQuery = "a\nb" }, took: false},
		{name: "patch without body", method: "PATCH", url: "http://127.0.0.1:1/x", took: true},
		{name: "connect", method: "CONNECT", url: "http://h:1", took: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			newReq := func() *http.Request {
				var rd io.Reader
				if tc.body != "" {
					rd = strings.NewReader(tc.body)
				}
				req, err := http.NewRequest(tc.method, tc.url, rd)
				if err != nil {
					t.Fatal(err)
				}
				for k, v := range tc.header {
					req.Header[k] = v
				}
				if tc.host != "" {
					req.Host = tc.host
				}
				if tc.mutate != nil {
					tc.mutate(req)
				}
				return req
			}
			fast, std, took := writeBoth(t, newReq)
			if took != tc.took {
				t.Fatalf("writeFast took it: %v, want %v", took, tc.took)
			}
			if took && fast != std {
				t.Fatalf("writeFast wrote\n%q\nnet/http writes\n%q", fast, std)
			}
			if !took && fast != "" {
				t.Fatalf("writeFast declined but wrote %q", fast)
			}
		})
	}
}

// A body shorter than its declared length is an error, as in net/http,
// not a request the upstream waits on for the missing bytes.
func TestWriteShortBody(t *testing.T) {
	req, _ := http.NewRequest("POST", "http://h/x", strings.NewReader("abc"))
	req.ContentLength = 5
	_, err := writeFast(bufio.NewWriter(io.Discard), req)
	if err == nil || !strings.Contains(err.Error(), "ContentLength=5 with Body length 3") {
		t.Fatalf("err = %v", err)
	}
}

func FuzzWriteMatchesNetHTTP(f *testing.F) {
	f.Add("POST", "/v1/chat/completions?x=1", "127.0.0.1:18000", "Content-Type", "application/json", "{}")
	f.Add("GET", "/", "h", "User-Agent", " a ", "")
	f.Add("PUT", "/a%20b", "h:1", "x-y", "", "body")
	f.Fuzz(func(t *testing.T, method, path, host, hk, hv, body string) {
		newReq := func() *http.Request {
			var rd io.Reader
			if body != "" {
				rd = strings.NewReader(body)
			}
			req, err := http.NewRequest(method, "http://placeholder", rd)
			if err != nil {
				t.Skip()
			}
			req.URL.Path, req.URL.RawQuery, _ = strings.Cut(path, "?")
			req.Host = host
			req.Header[hk] = []string{hv}
			return req
		}
		if validHeader(newReq().Header) != nil {
			t.Skip() // RoundTrip refuses it before either writer runs
		}
		fast, std, took := writeBoth(t, newReq)
		if took && fast != std {
			t.Fatalf("writeFast wrote\n%q\nnet/http writes\n%q", fast, std)
		}
	})
}

// BenchmarkWriteRequest is a 1 KB chat request written by writeFast and by
// net/http's Request.Write.
func BenchmarkWriteRequest(b *testing.B) {
	body := bytes.Repeat([]byte("x"), 1024)
	h := http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer sk-bench"},
		"Traceparent": {"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}
	bw := bufio.NewWriterSize(io.Discard, 4<<10)
	for _, name := range []string{"fast", "nethttp"} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req, _ := http.NewRequest("POST", "http://127.0.0.1:18000/v1/chat/completions", bytes.NewReader(body))
				req.Header = h
				if name == "fast" {
					if ok, err := writeFast(bw, req); !ok || err != nil {
						b.Fatal(ok, err)
					}
				} else if err := req.Write(bw); err != nil {
					b.Fatal(err)
				}
				_ = bw.Flush()
			}
		})
	}
}
