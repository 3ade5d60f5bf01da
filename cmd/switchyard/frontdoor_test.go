package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/demo"
)

// Attacks on the front door of the real binary: connection floods, running
// out of descriptors, and memory spent before authentication. Each test
// starts the gateway from the sources under test as a child process, so
// what is measured (its RSS, whether it exits) is the production process.

// frontdoorStart starts the binary with one chat model (test/chat) served
// by upstream (an OpenAI-compatible base URL without /v1) and the given
// limits section; wrap, when set, is a command prefix that execs the
// binary (to start it under a lower descriptor limit).
func frontdoorStart(t *testing.T, limits, upstream string, wrap ...string) (*crashGateway, string) {
	t.Helper()
	run := newTestRun(t, fmt.Sprintf(`bootstrap_credits: 10
timeouts: {attempt: 20s, request: 1m}
limits: %s
providers:
  - {slug: up, adapter: openai, base_url: "%s/v1", data_collection: deny}
models:
  - id: test/chat
    endpoints:
      - {provider: up, upstream_model: echo, max_output: 256, price: {prompt: 1, completion: 2}}
`, limits, upstream))
	argv := append(append([]string{}, wrap...), crashBuild(t), "-config", run.cfg)
	return startCommand(t, argv, run.addr, run.log), run.addr
}

// demoUpstream is an OpenAI-compatible fake upstream.
func demoUpstream(t *testing.T) string {
	hs := httptest.NewServer(demo.New())
	t.Cleanup(func() { hs.CloseClientConnections(); hs.Close() })
	return hs.URL
}

const chatBody = `{"model":"test/chat","messages":[{"role":"user","content":"hello"}]}`

// serves reports whether the gateway answers /health and a real chat
// request with 200 through client.
func serves(client *http.Client, addr string) error {
	resp, err := client.Get("http://" + addr + "/health")
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("/health: %d", resp.StatusCode)
	}
	req, _ := http.NewRequest("POST", "http://"+addr+"/api/v1/chat/completions", strings.NewReader(chatBody))
	req.Header.Set("Authorization", "Bearer "+crashKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err = client.Do(req)
	if err != nil {
		return err
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"choices"`) {
		return fmt.Errorf("chat: %d %s", resp.StatusCode, b)
	}
	return nil
}

// clientFrom is an HTTP client whose connections come from local address ip.
func clientFrom(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
}

// eventually retries f until it succeeds, for at most about 30 s.
func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	var err error
	for range 300 {
		if err = f(); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: %v", what, err)
}

func (g *crashGateway) alive(t *testing.T) {
	t.Helper()
	select {
	case <-g.exited:
		t.Fatalf("the gateway exited:\n%s", g.logText())
	default:
	}
}

// 300 idle connections from one address against caps of 64 in total and
// 32 per address: exactly 32 are served, the others are refused with the
// 503 envelope; while the flood is open a client from another address is
// served (/health and a real chat request), and after it closes the
// flooding address is served again.
func TestConnectionFloodOverCaps(t *testing.T) {
	const total, perIP, flood = 64, 32, 300
	g, addr := frontdoorStart(t, fmt.Sprintf("{max_connections: %d, max_connections_per_ip: %d, header_timeout: 60s}", total, perIP), demoUpstream(t))
	conns := make([]net.Conn, 0, flood)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range flood {
		c, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	// Each flood connection asks for /health: a served one answers 200, a
	// refused one has its 503 (or is already closed).
	served, refused := 0, 0
	for _, c := range conns {
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		_, _ = io.WriteString(c, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
	}
	for _, c := range conns {
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		switch {
		case err == nil && resp.StatusCode == 200:
			served++
		case err != nil || resp.StatusCode == 503:
			refused++
		default:
			t.Fatalf("flood connection: status %d", resp.StatusCode)
		}
	}
	t.Logf("flood of %d: %d served, %d refused", flood, served, refused)
	if served != perIP || refused != flood-perIP {
		t.Fatalf("served %d, refused %d; want %d and %d", served, refused, perIP, flood-perIP)
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	raw, _ := io.ReadAll(c)
	c.Close()
	if !strings.HasPrefix(string(raw), "HTTP/1.1 503") || !strings.Contains(string(raw), "Retry-After:") || !strings.Contains(string(raw), `"code":503`) {
		t.Fatalf("over the per-address cap: %q", raw)
	}
	if err := serves(clientFrom("127.0.0.2"), addr); err != nil {
		t.Fatalf("another address while the flood is open: %v", err)
	}
	for _, c := range conns {
		c.Close()
	}
	conns = nil
	eventually(t, "the flooding address after the flood", func() error { return serves(clientFrom("127.0.0.1"), addr) })
	g.alive(t)
}

// Under a descriptor limit of 256 and caps set above it, a flood of 600
// connections makes accept fail with EMFILE; the gateway must wait it out,
// not exit (fasthttp's Serve returns on that error), and serve again once
// the flood is gone.
func TestDescriptorExhaustionDoesNotStopGateway(t *testing.T) {
	const flood = 600
	g, addr := frontdoorStart(t, "{max_connections: 5000, max_connections_per_ip: -1, header_timeout: 60s}", demoUpstream(t),
		"sh", "-c", `ulimit -n 256 && exec "$0" "$@"`)
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range flood { // the kernel completes handshakes into the backlog even when accept fails
		c, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	eventually(t, "accept running out of descriptors", func() error {
		if !strings.Contains(g.logText(), "too many open files") {
			return fmt.Errorf("no EMFILE logged yet")
		}
		return nil
	})
	g.alive(t)
	for _, c := range conns {
		c.Close()
	}
	conns = nil
	eventually(t, "serving after the flood", func() error { return serves(clientFrom("127.0.0.1"), addr) })
	g.alive(t)
}

// memKB reads a field of /proc/PID/status in KiB.
func memKB(t *testing.T, pid int, field string) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// Memory before authentication. Two attacks from the issue, at half its
// scale: 100 unauthenticated posts of 9.9 MB each, and 100 connections
// (with a valid key) that declare a 10 MB body and send 30 bytes. The
// gateway must answer the first with 401 without reading the bodies, and
// must not allocate what the second only promised: its peak RSS stays
// within 200 MB of its idle RSS (fasthttp alone would hold about 1 GB for
// either attack).
func TestMemoryBeforeAuthentication(t *testing.T) {
	const clients, bound = 100, 200 << 10 // KiB
	// The header timeout is the slow-loris bound, not what is tested here:
	// with 100 clients pushing 1 GB at a race-built gateway beside other
	// test packages on 2 cores, a few connections' headers waited past the
	// default 10 s for a thread and were answered 408 by fasthttp before
	// any handler ran (CI, 2026-11-28). The 401 is what is checked.
	g, addr := frontdoorStart(t, "{header_timeout: 60s}", demoUpstream(t))
	pid := g.cmd.Process.Pid
	if err := serves(http.DefaultClient, addr); err != nil {
		t.Fatal(err)
	}
	idle := memKB(t, pid, "VmRSS")

	body := strings.Repeat("x", 9_900_000)
	var wg sync.WaitGroup
	statuses := make(chan string, clients)
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				statuses <- err.Error()
				return
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(60 * time.Second))
			_, _ = io.WriteString(c, "POST /api/v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 9900000\r\n\r\n")
			_, _ = io.WriteString(c, body) // may fail once the gateway has answered
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				statuses <- err.Error()
				return
			}
			resp.Body.Close()
			statuses <- resp.Status
		}()
	}
	wg.Wait()
	close(statuses)
	for s := range statuses {
		if !strings.HasPrefix(s, "401") {
			t.Errorf("unauthenticated 9.9 MB post: %s", s)
		}
	}
	afterPosts := memKB(t, pid, "VmHWM")

	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range clients {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		_, _ = io.WriteString(c, "POST /api/v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+crashKey+
			"\r\nContent-Type: application/json\r\nContent-Length: 10000000\r\n\r\n"+`{"model":"test/chat","messages"`[:30])
	}
	// /health answered after the promises means the gateway has accepted
	// and started reading all of them (one accept loop, in order).
	if err := serves(http.DefaultClient, addr); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // let the reads settle; what is measured is the peak
	afterPromises := memKB(t, pid, "VmHWM")
	t.Logf("RSS idle %d MiB; peak after %d unauthenticated 9.9 MB posts %d MiB; peak with %d open 10 MB promises %d MiB (now %d MiB)",
		idle>>10, clients, afterPosts>>10, clients, afterPromises>>10, memKB(t, pid, "VmRSS")>>10)
	if afterPosts-idle > bound || afterPromises-idle > bound {
		t.Fatalf("peak RSS grew by %d MiB (posts) / %d MiB (promises) over idle %d MiB; bound %d MiB",
			(afterPosts-idle)>>10, (afterPromises-idle)>>10, idle>>10, bound>>10)
	}
	g.alive(t)
}

// bigUpstream answers every chat completion with a JSON completion whose
// content is size bytes, with usage, as an OpenAI-compatible server would.
func bigUpstream(t *testing.T, size int, usage string) string {
	content := strings.Repeat("lorem ipsum ", size/12+1)[:size]
	answer := []byte(`{"id":"chatcmpl-big","object":"chat.completion","created":1,"model":"echo","choices":[{"index":0,"message":{"role":"assistant","content":"` +
		content + `"},"finish_reason":"stop"}]` + usage + `}`)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	}))
	t.Cleanup(func() { hs.CloseClientConnections(); hs.Close() })
	return hs.URL
}

// A 30 MB JSON answer from an upstream is passed to the client whole and
// costs the gateway a bounded multiple of its size (the bound is under 7
// times the answer), with the upstream's usage and without it (then the
// gateway counts the 30 MB completion with the tokenizer). Several full
// copies (read, identity rewrite, usage, counting) cost +163 MiB and
// +500 MiB of peak RSS before.
func TestLargeUpstreamAnswerMemory(t *testing.T) {
	const size, bound = 30 << 20, 200 << 10 // bytes; KiB of peak RSS over idle
	for _, tc := range []struct{ name, usage string }{
		{"upstream usage", `,"usage":{"prompt_tokens":5,"completion_tokens":200,"total_tokens":205}`},
		{"counted by the gateway", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, addr := frontdoorStart(t, "{}", bigUpstream(t, size, tc.usage))
			pid := g.cmd.Process.Pid
			resp, err := http.Get("http://" + addr + "/health")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			idle := memKB(t, pid, "VmRSS")
			_, body := g.do(t, "POST", "/chat/completions", chatBody)
			if got := len(body.Get("choices.0.message.content").Str); got != size || body.Get("usage.completion_tokens").Int() <= 0 {
				t.Fatalf("content of %d bytes reached the client, want %d: %.300s", got, size, body.Raw)
			}
			peak := memKB(t, pid, "VmHWM")
			t.Logf("RSS idle %d MiB, peak after one %d MiB upstream answer %d MiB (+%d MiB)", idle>>10, size>>20, peak>>10, (peak-idle)>>10)
			if peak-idle > bound {
				t.Fatalf("peak RSS grew by %d MiB for a %d MiB answer; bound %d MiB", (peak-idle)>>10, size>>20, bound>>10)
			}
		})
	}
}
