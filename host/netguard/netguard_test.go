package netguard

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
)

// serve starts a fiber app (fasthttp, as the gateway) on a guarded loopback
// listener.
func serve(t *testing.T, cfg Config) (*Listener, string) {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Logf = t.Logf
	ln := Wrap(inner, cfg)
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Get("/health", func(c *fiber.Ctx) error { return c.SendString("ok") })
	go func() { _ = app.Listener(ln) }()
	t.Cleanup(func() { _ = app.Shutdown() })
	return ln, inner.Addr().String()
}

// request sends one GET /health on c and returns the status, or 0 when the
// connection was closed or reset instead.
func request(c net.Conn, r *bufio.Reader) int {
	if _, err := io.WriteString(c, "GET /health HTTP/1.1\r\nHost: gw\r\n\r\n"); err != nil {
		return 0
	}
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

func dial(t *testing.T, addr, from string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second}
	if from != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from)}
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second)) // a hang fails the test instead of blocking it
	return c
}

// 200 connections against a cap of 50: exactly 50 are served (and stay
// open, keep-alive), 150 are refused and closed; a refused client that
// reads gets the 503 envelope with Retry-After; once the flood goes away a
// new client is served again.
func TestConnectionCap(t *testing.T) {
	const limit, flood = 50, 200
	ln, addr := serve(t, Config{MaxConns: limit, MaxConnsPerIP: -1})
	var held []net.Conn
	served, refused := 0, 0
	for range flood {
		c := dial(t, addr, "")
		switch status := request(c, bufio.NewReader(c)); status {
		case http.StatusOK:
			served++
			held = append(held, c)
		case 0, http.StatusServiceUnavailable:
			refused++
			_ = c.Close()
		default:
			t.Fatalf("status %d", status)
		}
	}
	if served != limit || refused != flood-limit {
		t.Fatalf("served %d, refused %d; want %d and %d", served, refused, limit, flood-limit)
	}
	if ln.Open() != limit || ln.Refused() < int64(flood-limit) {
		t.Errorf("open %d, refused %d", ln.Open(), ln.Refused())
	}

	// A refused client that does not write first reads the whole refusal.
	c := dial(t, addr, "")
	raw, err := io.ReadAll(c)
	_ = c.Close()
	if err != nil || !strings.HasPrefix(string(raw), "HTTP/1.1 503 ") || !strings.Contains(string(raw), "Retry-After: 1\r\n") ||
		!strings.HasSuffix(string(raw), `{"error":{"code":503,"message":"The gateway has too many open connections; retry later."}}`) {
		t.Errorf("refusal %q, %v", raw, err)
	}

	// The served connections still work, and after the flood closes a new
	// client is served: the slots come back as fasthttp closes its ends.
	if status := request(held[0], bufio.NewReader(held[0])); status != http.StatusOK {
		t.Errorf("held connection: status %d", status)
	}
	for _, c := range held {
		_ = c.Close()
	}
	for attempt := 0; ; attempt++ {
		c := dial(t, addr, "")
		status := request(c, bufio.NewReader(c))
		_ = c.Close()
		if status == http.StatusOK {
			break
		}
		if attempt == 100 {
			t.Fatalf("no request served after the flood closed (open %d)", ln.Open())
		}
		time.Sleep(20 * time.Millisecond) // fasthttp closes the released connections asynchronously
	}
}

// One address cannot take the whole server: with a per-address cap of 10,
// a flood from 127.0.0.1 gets 10 connections and 127.0.0.2 is still served.
func TestPerAddressCap(t *testing.T) {
	_, addr := serve(t, Config{MaxConns: 50, MaxConnsPerIP: 10})
	served := 0
	var held []net.Conn
	for range 30 {
		c := dial(t, addr, "127.0.0.1")
		if request(c, bufio.NewReader(c)) == http.StatusOK {
			served++
			held = append(held, c)
		} else {
			_ = c.Close()
		}
	}
	if served != 10 {
		t.Errorf("127.0.0.1 got %d connections, want 10", served)
	}
	c := dial(t, addr, "127.0.0.2")
	if status := request(c, bufio.NewReader(c)); status != http.StatusOK {
		t.Errorf("127.0.0.2: status %d, want 200", status)
	}
	_ = c.Close()
	for _, c := range held {
		_ = c.Close()
	}
}

// TestDefaultCapCoversLoopback (issue 31, item 11): under the default
// per-address cap a loopback client is capped like any other once half the
// connections are in use, so one local client reconnecting in a loop cannot
// hold the total cap; another address is still served.
func TestDefaultCapCoversLoopback(t *testing.T) {
	ln, addr := serve(t, Config{MaxConns: 10})
	ln.mu.Lock()
	ln.maxPerIP = 3 // the default derived from a small descriptor limit
	ln.mu.Unlock()
	var held []net.Conn
	defer func() {
		for _, c := range held {
			_ = c.Close()
		}
	}()
	served := 0
	for range 10 {
		c := dial(t, addr, "127.0.0.1")
		if status := request(c, bufio.NewReader(c)); status == http.StatusOK {
			served++
			held = append(held, c)
		} else {
			_ = c.Close()
		}
	}
	// Past its share of 3 only while fewer than half the 10 are open.
	if served != 5 {
		t.Fatalf("one loopback address got %d of 10 connections, want 5 (half the total cap)", served)
	}
	c := dial(t, addr, "127.0.0.2")
	if status := request(c, bufio.NewReader(c)); status != http.StatusOK {
		t.Errorf("127.0.0.2: status %d, want 200", status)
	}
	_ = c.Close()
}

// fakeListener fails Accept with errs in turn, then hands out pipes.
type fakeListener struct {
	errs []error
}

func (f *fakeListener) Accept() (net.Conn, error) {
	if len(f.errs) > 0 {
		err := f.errs[0]
		f.errs = f.errs[1:]
		return nil, err
	}
	a, b := net.Pipe()
	_ = b.Close()
	return a, nil
}
func (f *fakeListener) Close() error   { return nil }
func (f *fakeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

func acceptErr(errno syscall.Errno) error {
	return &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", errno)}
}

// EMFILE and ENFILE are waited out with a doubling backoff from 5 ms to 1 s,
// never returned (fasthttp would stop serving); a permanent error is.
func TestAcceptBacksOff(t *testing.T) {
	var errs []error
	for i := range 12 {
		errs = append(errs, acceptErr([]syscall.Errno{syscall.EMFILE, syscall.ENFILE}[i%2]))
	}
	ln := Wrap(&fakeListener{errs: errs}, Config{MaxConns: 10, Logf: t.Logf})
	var waits []time.Duration
	ln.sleep = func(d time.Duration) { waits = append(waits, d) }
	c, err := ln.Accept()
	if err != nil || c == nil {
		t.Fatalf("Accept after 12 EMFILE/ENFILE: %v, %v", c, err)
	}
	want := fmt.Sprint([]time.Duration{5e6, 10e6, 20e6, 40e6, 80e6, 160e6, 320e6, 640e6, 1e9, 1e9, 1e9, 1e9})
	if got := fmt.Sprint(waits); got != want {
		t.Errorf("backoff %s, want %s", got, want)
	}
	if ln.Open() != 1 {
		t.Errorf("open %d", ln.Open())
	}
	_ = c.Close()
	_ = c.Close() // a second close does not release twice
	if ln.Open() != 0 {
		t.Errorf("open %d after close", ln.Open())
	}

	perm := errors.New("listener broken")
	ln = Wrap(&fakeListener{errs: []error{acceptErr(syscall.EMFILE), perm}}, Config{Logf: t.Logf})
	ln.sleep = func(time.Duration) {}
	if _, err := ln.Accept(); !errors.Is(err, perm) {
		t.Errorf("permanent error: %v", err)
	}
}

func TestDefaults(t *testing.T) {
	for _, tc := range []struct {
		limit        uint64
		total, perIP int
	}{
		{1024, 345, 34},
		{65536, 26150, 2615},
		{1 << 20, 419366, 41936},
		{64, 16, 8},
	} {
		if total, perIP := Defaults(tc.limit); total != tc.total || perIP != tc.perIP {
			t.Errorf("Defaults(%d) = %d, %d; want %d, %d", tc.limit, total, perIP, tc.total, tc.perIP)
		}
	}
	before := FDLimit()
	got, err := RaiseFDLimit()
	if err != nil || got < before {
		t.Errorf("RaiseFDLimit = %d, %v (was %d)", got, err, before)
	}
}

// With a Lingerer, a connection closed while the client is still connected
// keeps its slot until the lingering ends (the descriptor is still open),
// and frees it then.
func TestLingeringConnectionKeepsItsSlot(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := Wrap(inner, Config{MaxConns: 4, MaxConnsPerIP: -1, Linger: NewLingerer(LingerConfig{Timeout: 30 * time.Second})})
	defer ln.Close()
	client, err := net.Dial("tcp", inner.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if _, err := client.Write([]byte("POST / HTTP/1.1\r\nContent-Length: 100000\r\n\r\nabc")); err != nil {
		t.Fatal(err)
	}
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	_ = c.Close() // every close lingers
	if ln.Open() != 1 {
		t.Fatalf("open %d while the connection lingers, want 1", ln.Open())
	}
	_ = client.Close() // the client gives up: the lingering read ends
	for attempt := 0; ln.Open() != 0; attempt++ {
		if attempt == 500 {
			t.Fatalf("open %d after the lingering ended, want 0", ln.Open())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// An accepted connection hands out its socket's raw connection once made:
// the same one at every request of the connection, with no allocation.
func TestSyscallConnIsKept(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := Wrap(inner, Config{MaxConns: 10, Logf: t.Logf})
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sc, ok := c.(syscall.Conn)
	if !ok {
		t.Fatal("an accepted connection is not a syscall.Conn")
	}
	first, err := sc.SyscallConn()
	if err != nil || first == nil {
		t.Fatalf("SyscallConn: %v, %v", first, err)
	}
	if n := testing.AllocsPerRun(100, func() {
		if rc, _ := sc.SyscallConn(); rc != first {
			t.Fatal("a second SyscallConn returned another raw connection")
		}
	}); n != 0 {
		t.Errorf("SyscallConn allocated %v times, want 0", n)
	}
}
