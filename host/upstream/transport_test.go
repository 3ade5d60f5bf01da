package upstream

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// server is a loopback HTTP/1.1 server that counts the connections it
// accepted.
func server(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var conns atomic.Int64
	s := httptest.NewUnstartedServer(h)
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s, &conns
}

func newTransport(t *testing.T) *Transport {
	tr := &Transport{Fallback: http.DefaultTransport}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

func post(t *testing.T, tr http.RoundTripper, ctx context.Context, u, body string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "POST", u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return tr.RoundTrip(req)
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return string(b)
}

// TestKeepAlive: sequential requests share one connection whatever the
// body's framing — Content-Length, chunked (with a trailer), empty — and
// each gets its own response.
func TestKeepAlive(t *testing.T) {
	cases := []struct {
		name string
		h    http.HandlerFunc
	}{
		{"content-length", func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			w.Header().Set("Content-Length", fmt.Sprint(len(b)+5))
			fmt.Fprintf(w, "echo:%s", b)
		}},
		{"chunked with a trailer", func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			w.Header().Set("Trailer", "X-Done")
			fmt.Fprint(w, "echo:")
			w.(http.Flusher).Flush()
			fmt.Fprintf(w, "%s", b)
			w.Header().Set("X-Done", "yes")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, conns := server(t, tc.h)
			tr := newTransport(t)
			for i := range 20 {
				resp, err := post(t, tr, context.Background(), s.URL+"/v1/x", fmt.Sprintf(`{"n":%d}`, i))
				if err != nil {
					t.Fatal(err)
				}
				if got, want := readAll(t, resp), fmt.Sprintf(`echo:{"n":%d}`, i); got != want || resp.StatusCode != 200 {
					t.Fatalf("request %d: %d %q, want %q", i, resp.StatusCode, got, want)
				}
			}
			if n := conns.Load(); n != 1 {
				t.Fatalf("%d connections for 20 sequential requests, want 1", n)
			}
		})
	}
	t.Run("no body", func(t *testing.T) {
		s, conns := server(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
		tr := newTransport(t)
		for range 5 {
			resp, err := post(t, tr, context.Background(), s.URL, "{}")
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close() // not read: there is nothing to read
			if resp.StatusCode != 204 {
				t.Fatalf("status %d", resp.StatusCode)
			}
		}
		if n := conns.Load(); n != 1 {
			t.Fatalf("%d connections, want 1", n)
		}
	})
}

// TestUnreadBodyClosesConnection: a body closed before its end leaves the
// rest of the response on the connection, so the connection is closed, and
// the next request gets a fresh one and its own answer.
func TestUnreadBodyClosesConnection(t *testing.T) {
	s, conns := server(t, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, strings.Repeat("x", 64<<10))
	})
	tr := newTransport(t)
	resp, err := post(t, tr, context.Background(), s.URL, "{}")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 10)
	if _, err := io.ReadFull(resp.Body, buf); err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	resp, err = post(t, tr, context.Background(), s.URL, "{}")
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, resp); len(got) != 64<<10 {
		t.Fatalf("second response %d bytes", len(got))
	}
	if n := conns.Load(); n != 2 {
		t.Fatalf("%d connections, want 2", n)
	}
}

// TestServerClosedIdleConnection: an upstream that closes idle connections
// (uvicorn's keep-alive is 5 s) costs nothing: the request is sent again
// on a fresh connection.
func TestServerClosedIdleConnection(t *testing.T) {
	var calls atomic.Int64
	s, conns := server(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		calls.Add(1)
		w.Write(b)
	})
	tr := newTransport(t)
	for i := range 3 {
		resp, err := post(t, tr, context.Background(), s.URL, fmt.Sprint(i))
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if got := readAll(t, resp); got != fmt.Sprint(i) {
			t.Fatalf("request %d: %q", i, got)
		}
		s.CloseClientConnections() // the server drops the idle connection
		time.Sleep(20 * time.Millisecond)
	}
	if n, c := conns.Load(), calls.Load(); n != 3 || c != 3 {
		t.Fatalf("%d connections and %d handler calls, want 3 and 3 (one send each)", n, c)
	}
}

// TestNoResendAfterTheUpstreamReadIt: a POST the upstream read on a
// pooled connection, then dropped the connection without answering, may
// have been run (and charged for): it is not sent again. The same request
// with an Idempotency-Key is sent once more, on a fresh connection.
func TestNoResendAfterTheUpstreamReadIt(t *testing.T) {
	var calls atomic.Int64
	s, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if calls.Add(1) == 2 { // the second request is read, then the connection dropped
			c, _, _ := w.(http.Hijacker).Hijack()
			c.Close()
			return
		}
		w.Write(b)
	})
	tr := newTransport(t)
	resp, err := post(t, tr, context.Background(), s.URL, "a")
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	if _, err := post(t, tr, context.Background(), s.URL, "b"); err == nil {
		t.Fatal("no error")
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("%d handler calls, want 2: a request the upstream read is not sent twice", n)
	}
	resp, err = post(t, tr, context.Background(), s.URL, "c")
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)

	calls.Store(1) // the next one is dropped again
	req, _ := http.NewRequest("POST", s.URL, strings.NewReader("d"))
	req.Header.Set("Idempotency-Key", "k1")
	resp, err = tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("with an Idempotency-Key: %v", err)
	}
	if got := readAll(t, resp); got != "d" || calls.Load() != 3 {
		t.Fatalf("%q after %d calls, want \"d\" after 3", got, calls.Load())
	}
}

// TestCancel: the request's context ends a call blocked on the upstream
// at any point — waiting for the head, or in the middle of the body — at
// once, and the connection is not reused.
func TestCancel(t *testing.T) {
	release := make(chan struct{})
	s, conns := server(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/body" {
			fmt.Fprint(w, "first part")
			w.(http.Flusher).Flush()
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(func() { close(release) }) // before the server's Close, which waits for the handlers
	tr := newTransport(t)
	t.Run("waiting for the head", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)
		_, err := post(t, tr, ctx, s.URL+"/head", "{}")
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err %v, want context.Canceled", err)
		}
	})
	t.Run("waiting for the head, after the grace", func(t *testing.T) {
		// The call watches its context by then (the grace is over).
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(3*Grace, cancel)
		_, err := post(t, tr, ctx, s.URL+"/head", "{}")
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err %v, want context.Canceled", err)
		}
	})
	t.Run("the context's deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*Grace)
		defer cancel()
		_, err := post(t, tr, ctx, s.URL+"/head", "{}")
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err %v, want context.DeadlineExceeded", err)
		}
	})
	t.Run("in the body", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		resp, err := post(t, tr, ctx, s.URL+"/body", "{}")
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 10)
		if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != "first part" {
			t.Fatalf("read %q, %v", buf, err)
		}
		time.AfterFunc(50*time.Millisecond, cancel)
		if _, err := resp.Body.Read(buf); err == nil {
			t.Fatal("a read went on after the context ended")
		}
		_ = resp.Body.Close()
	})
	t.Run("closed from another goroutine", func(t *testing.T) {
		resp, err := post(t, tr, context.Background(), s.URL+"/body", "{}")
		if err != nil {
			t.Fatal(err)
		}
		time.AfterFunc(50*time.Millisecond, func() { _ = resp.Body.Close() })
		if _, err := io.ReadAll(resp.Body); err == nil {
			t.Fatal("a read went on after Close")
		}
	})
	if n := conns.Load(); n != 5 {
		t.Fatalf("%d connections, want 5: a cancelled call's connection is never reused", n)
	}
}

// TestAttemptDeadline: RoundTripWithin's deadline ends a call that has not
// answered in time, in its head or in its body, with ErrAttemptTimeout and
// without reusing the connection; EndAttempt lifts it, and a call that
// outlived the grace (its context watched) gives its connection back.
func TestAttemptDeadline(t *testing.T) {
	release := make(chan struct{})
	s, conns := server(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.URL.Path != "/head" {
			fmt.Fprint(w, "first part")
			w.(http.Flusher).Flush()
		}
		if r.URL.Path == "/slow" {
			time.Sleep(6 * Grace)
			fmt.Fprint(w, ", the rest")
			return
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(func() { close(release) })
	tr := newTransport(t)
	call := func(path string, attempt time.Duration) (*http.Response, error) {
		t.Helper()
		// A context that can end: the call watches it after the grace.
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		req, err := http.NewRequestWithContext(ctx, "POST", s.URL+path, strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp, served, err := tr.RoundTripWithin(req, time.Now().Add(attempt))
		if !served {
			t.Fatal("a plain-HTTP call was not served by the transport")
		}
		return resp, err
	}
	t.Run("waiting for the head", func(t *testing.T) {
		if _, err := call("/head", 2*Grace); !errors.Is(err, ErrAttemptTimeout) {
			t.Fatalf("err %v, want ErrAttemptTimeout", err)
		}
	})
	t.Run("in the body", func(t *testing.T) {
		resp, err := call("/body", 2*Grace)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if _, err := io.ReadAll(resp.Body); !errors.Is(err, ErrAttemptTimeout) {
			t.Fatalf("err %v, want ErrAttemptTimeout", err)
		}
	})
	before := conns.Load()
	t.Run("lifted after the head", func(t *testing.T) {
		resp, err := call("/slow", 2*Grace)
		if err != nil {
			t.Fatal(err)
		}
		EndAttempt(resp)
		if got := readAll(t, resp); got != "first part, the rest" {
			t.Fatalf("body %q", got)
		}
		resp, err = call("/slow", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, resp); got != "first part, the rest" {
			t.Fatalf("body %q", got)
		}
	})
	if n := conns.Load() - before; n != 1 {
		t.Fatalf("%d connections for two calls in a row, want 1: a call that ended well gives its connection back", n)
	}
	if n := conns.Load(); n != 3 {
		t.Fatalf("%d connections, want 3: a timed-out call's connection is never reused", n)
	}
	t.Run("https goes its own way", func(t *testing.T) {
		req, _ := http.NewRequest("POST", "https://example.invalid/", nil)
		if _, served, _ := tr.RoundTripWithin(req, time.Now()); served {
			t.Fatal("an https call was served by the plain-HTTP transport")
		}
	})
}

// TestHostileUpstreams: what a lying or broken upstream sends fails the
// call with an error, bounded.
func TestHostileUpstreams(t *testing.T) {
	cases := []struct {
		name, reply string
		want        string
	}{
		{"endless headers", "HTTP/1.1 200 OK\r\n" + strings.Repeat("X-Pad: "+strings.Repeat("a", 1000)+"\r\n", 2000), "exceed"},
		{"not HTTP", "SSH-2.0-OpenSSH_9.6\r\n\r\n", "malformed"},
		{"closes at once", "", "EOF"},
		{"too many informational responses", strings.Repeat("HTTP/1.1 102 Processing\r\n\r\n", 6), "informational"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := post(t, newTransport(t), context.Background(), rawServer(t, tc.reply), "{}")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one containing %q", err, tc.want)
			}
		})
	}
	t.Run("informational responses before the real one", func(t *testing.T) {
		u := rawServer(t, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		resp, err := post(t, newTransport(t), context.Background(), u, "{}")
		if err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, resp); got != "ok" || resp.StatusCode != 200 {
			t.Fatalf("%d %q", resp.StatusCode, got)
		}
	})
}

// rawServer answers one request with reply, byte for byte, and returns
// its URL.
func rawServer(t *testing.T, reply string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		if _, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
			_, _ = io.WriteString(c, reply)
		}
	}()
	return "http://" + ln.Addr().String() + "/"
}

// TestInvalidHeaders: a header that would split the request is refused
// before anything is sent.
func TestInvalidHeaders(t *testing.T) {
	var calls atomic.Int64
	s, _ := server(t, func(w http.ResponseWriter, r *http.Request) { calls.Add(1) })
	for _, h := range [][2]string{{"X-Ok", "a\r\nX-Smuggled: 1"}, {"Bad Name", "v"}, {"X-Nul", "a\x00b"}} {
		req, _ := http.NewRequest("POST", s.URL, strings.NewReader("{}"))
		req.Header[h[0]] = []string{h[1]}
		if _, err := newTransport(t).RoundTrip(req); err == nil || !strings.Contains(err.Error(), "invalid header") {
			t.Fatalf("header %q: err %v", h, err)
		}
	}
	if calls.Load() != 0 {
		t.Fatal("a request with an invalid header reached the upstream")
	}
}

// TestFallback: https and proxied requests go to Fallback.
func TestFallback(t *testing.T) {
	var fell atomic.Int64
	fb := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		fell.Add(1)
		return &http.Response{StatusCode: 299, Body: http.NoBody, Request: r}, nil
	})
	s, _ := server(t, func(w http.ResponseWriter, r *http.Request) {})
	proxy, _ := url.Parse("http://proxy.invalid:3128")
	cases := []struct {
		name, url string
		proxy     func(*http.Request) (*url.URL, error)
		wantFall  bool
	}{
		{"https", "https://api.example.com/v1", nil, true},
		{"plain http", s.URL, nil, false},
		{"plain http through a proxy", s.URL, http.ProxyURL(proxy), true},
		{"plain http, no proxy for it", s.URL, func(*http.Request) (*url.URL, error) { return nil, nil }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := fell.Load()
			tr := &Transport{Fallback: fb, Proxy: tc.proxy}
			defer tr.CloseIdleConnections()
			resp, err := post(t, tr, context.Background(), tc.url, "{}")
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if got := fell.Load() > before; got != tc.wantFall {
				t.Fatalf("went to Fallback: %v, want %v", got, tc.wantFall)
			}
		})
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestIdleConnectionsExpire: connections idle past the timeout are closed
// by the reaper, and none is handed out once expired.
func TestIdleConnectionsExpire(t *testing.T) {
	s, conns := server(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") })
	tr := &Transport{Fallback: http.DefaultTransport, IdleTimeout: 30 * time.Millisecond}
	defer tr.CloseIdleConnections()
	for range 2 {
		resp, err := post(t, tr, context.Background(), s.URL, "{}")
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		time.Sleep(100 * time.Millisecond)
	}
	if n := conns.Load(); n != 2 {
		t.Fatalf("%d connections, want 2 (the first expired)", n)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		tr.mu.Lock()
		n := len(tr.idle)
		tr.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the reaper left an expired idle connection")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestConcurrent: many goroutines at once each get their own answer, over
// at most as many connections as run concurrently.
func TestConcurrent(t *testing.T) {
	s, conns := server(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Write(b)
	})
	tr := newTransport(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				want := fmt.Sprintf("%d-%d", g, i)
				resp, err := post(t, tr, context.Background(), s.URL, want)
				if err != nil {
					errs <- err
					return
				}
				b, err := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				if err != nil || string(b) != want {
					errs <- fmt.Errorf("got %q, %v; want %q", b, err, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := conns.Load(); n > 8 {
		t.Fatalf("%d connections for 8 concurrent callers", n)
	}
}

// BenchmarkRoundTrip: one 1 KB request and its response over loopback,
// through this transport and through net/http's.
func BenchmarkRoundTrip(b *testing.B) {
	payload := `{"messages":[{"role":"user","content":"` + strings.Repeat("x", 1000) + `"}]}`
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"x","choices":[{"message":{"role":"assistant","content":"hello"}}]}`)
	}))
	defer s.Close()
	for _, tc := range []struct {
		name string
		tr   http.RoundTripper
	}{{"upstream", &Transport{}}, {"net-http", &http.Transport{}}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req, _ := http.NewRequest("POST", s.URL, strings.NewReader(payload))
				resp, err := tc.tr.RoundTrip(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			}
		})
	}
}
