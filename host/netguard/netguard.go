// Package netguard keeps the listening socket alive under connection
// floods. It wraps the gateway's net.Listener so that
//
//   - running out of file descriptors (EMFILE, ENFILE) or other transient
//     accept errors never reach fasthttp, whose Server.Serve returns on any
//     accept error that is not a timeout (acceptConn in fasthttp's server.go)
//     and so stops the process; Accept backs off instead (5 ms doubling to
//     1 s, as net/http's server does) and keeps accepting;
//   - open connections are capped in total and per client address, with
//     defaults from the process's descriptor limit, and a connection over a
//     cap is answered with a minimal 503 (Retry-After, the spec's error
//     envelope) and closed at once, before it costs a goroutine or a buffer.
//
// The per-address cap is netguard's own because fasthttp's MaxConnsPerIP
// (which fiber.Config does not expose) counts IPv4 only: IPv6 clients are not
// limited at all. The total cap overlaps fiber.Config.Concurrency (fasthttp
// serves each open connection with one worker, so Concurrency is a cap on
// open connections too); netguard's applies first, keeps its refusals
// in the spec's format, and derives its default from the descriptor limit.
// Idle and slow connections are bounded by fiber.Config's ReadTimeout,
// WriteTimeout and IdleTimeout, which the server sets; netguard does not time
// connections out.
package netguard

import (
	"errors"
	"log"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/switchyard/switchyard/host/sockio"
)

// Config sets the caps. Zero values take the defaults of Defaults.
type Config struct {
	// MaxConns caps open client connections; 0 = the default for the
	// descriptor limit.
	MaxConns int
	// MaxConnsPerIP caps open connections from one client address (an IPv6
	// client by its /64, the block one host usually holds); 0 = the default,
	// negative = no per-address cap (behind a reverse proxy, where every
	// connection comes from the proxy's address, on this host or another).
	// Every address is capped alike, loopback included: exempting loopback
	// let one reconnecting local client hold the whole total cap (issue 31
	// item 11). The default cap binds once half the total cap is in use:
	// below that one address (a load generator, a sidecar carrying many
	// clients) may open more, and no address can take more than half the
	// connections from the others. A cap set explicitly always binds.
	MaxConnsPerIP int
	// RetryAfter is the Retry-After of a refusal; 0 = 1 s.
	RetryAfter time.Duration
	// Logf reports refusals and accept errors, at most once a second per
	// kind; nil = the standard logger.
	Logf func(format string, args ...any)
	// Linger, when set, closes accepted connections gracefully (see
	// Lingerer). The connection's slot is freed only when the descriptor
	// is really closed, after the lingering, so the caps count descriptors,
	// not requests. Refused connections are closed at once.
	Linger *Lingerer
}

// Backoff bounds of Accept after a transient error.
const (
	minBackoff = 5 * time.Millisecond
	maxBackoff = time.Second
)

// Listener is a guarded net.Listener.
type Listener struct {
	net.Listener
	maxConns, maxPerIP int
	// strictPerIP: the per-address cap binds at any load (it was set
	// explicitly); otherwise only from half the total cap on.
	strictPerIP bool
	refusal     []byte
	logf        func(string, ...any)
	linger      *Lingerer

	mu    sync.Mutex
	open  int
	perIP map[string]int

	refused atomic.Int64
	closed  chan struct{}
	once    sync.Once
	// sleep waits d or until the listener closes; a field so a test can
	// record the backoff instead of waiting it.
	sleep func(d time.Duration)

	lastLog [2]atomic.Int64 // unix nanos of the last log line: [accept error, refusal]
}

// Wrap guards inner with cfg's caps.
func Wrap(inner net.Listener, cfg Config) *Listener {
	total, perIP := Defaults(FDLimit())
	if cfg.MaxConns > 0 {
		total = cfg.MaxConns
	}
	switch {
	case cfg.MaxConnsPerIP > 0:
		perIP = cfg.MaxConnsPerIP
	case cfg.MaxConnsPerIP < 0:
		perIP = 0
	default:
		perIP = min(perIP, total)
	}
	retry := cfg.RetryAfter
	if retry <= 0 {
		retry = time.Second
	}
	l := &Listener{
		Listener:    inner,
		maxConns:    total,
		maxPerIP:    perIP,
		strictPerIP: cfg.MaxConnsPerIP > 0,
		refusal:     refusal(retry),
		logf:        cfg.Logf,
		linger:      cfg.Linger,
		perIP:       map[string]int{},
		closed:      make(chan struct{}),
	}
	if l.logf == nil {
		l.logf = log.Printf
	}
	l.sleep = func(d time.Duration) {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-l.closed:
		}
	}
	return l
}

// Defaults derives the caps from a descriptor limit: each client connection
// may need one upstream connection as well, and a fixed reserve covers the
// store, module files, listeners and logs, so clients get half of what is
// left of 80% of the limit; one address gets a tenth of that (at least 8).
func Defaults(fdLimit uint64) (total, perIP int) {
	const fixedReserve = 128
	usable := int(min(fdLimit, 1<<30)) * 8 / 10
	total = max((usable-fixedReserve)/2, 16)
	return total, max(total/10, 8)
}

// Caps reports the caps in force (perIP 0 = none).
func (l *Listener) Caps() (total, perIP int) { return l.maxConns, l.maxPerIP }

// Open is the number of accepted connections not yet closed.
func (l *Listener) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

// Refused is the number of connections refused over a cap so far.
func (l *Listener) Refused() int64 { return l.refused.Load() }

// Close closes the listener and ends a backoff in progress.
func (l *Listener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// Accept returns the next connection within the caps. Transient errors are
// waited out, never returned; only a closed listener or a permanent error
// ends it.
func (l *Listener) Accept() (net.Conn, error) {
	delay := time.Duration(0)
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			if !transient(err) {
				return nil, err
			}
			select {
			case <-l.closed:
				return nil, net.ErrClosed
			default:
			}
			delay = min(max(2*delay, minBackoff), maxBackoff)
			l.throttledLog(0, "netguard: accept: %v; retrying in %v", err, delay)
			l.sleep(delay)
			continue
		}
		delay = 0
		addr := clientKey(c.RemoteAddr())
		if !l.admit(addr) {
			l.refuse(c, addr)
			continue
		}
		gc := &conn{Conn: c, l: l, addr: addr, rcErr: errors.ErrUnsupported}
		if sc, ok := c.(syscall.Conn); ok {
			gc.rc, gc.rcErr = sc.SyscallConn()
			if gc.rcErr == nil {
				gc.raw = sockio.New(c, gc.rc)
			}
		}
		return gc, nil
	}
}

func (l *Listener) admit(addr string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	perIP := l.maxPerIP > 0 && addr != ""
	contended := l.strictPerIP || 2*l.open >= l.maxConns
	if l.open >= l.maxConns || (perIP && contended && l.perIP[addr] >= l.maxPerIP) {
		return false
	}
	l.open++
	if perIP {
		l.perIP[addr]++
	}
	return true
}

func (l *Listener) release(addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if l.maxPerIP > 0 && addr != "" {
		if l.perIP[addr]--; l.perIP[addr] <= 0 {
			delete(l.perIP, addr) // idle addresses cost no memory
		}
	}
}

// refuse answers an over-cap connection and closes it. The write goes to an
// empty socket buffer, so it does not block; the deadline guards the odd
// case where it would, so a refusal never holds up Accept.
func (l *Listener) refuse(c net.Conn, addr string) {
	l.refused.Add(1)
	l.throttledLog(1, "netguard: refusing a connection from %s: %d open of %d, per-address cap %d",
		addr, l.Open(), l.maxConns, l.maxPerIP)
	_ = c.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
	_, _ = c.Write(l.refusal)
	_ = c.Close()
}

func (l *Listener) throttledLog(kind int, format string, args ...any) {
	now := time.Now().UnixNano()
	last := l.lastLog[kind].Load()
	if now-last < int64(time.Second) || !l.lastLog[kind].CompareAndSwap(last, now) {
		return
	}
	l.logf(format, args...)
}

// refusal is the whole HTTP response to an over-cap connection.
func refusal(retry time.Duration) []byte {
	const body = `{"error":{"code":503,"message":"The gateway has too many open connections; retry later."}}`
	secs := max(int(retry/time.Second), 1)
	return []byte("HTTP/1.1 503 Service Unavailable\r\n" +
		"Content-Type: application/json\r\n" +
		"Retry-After: " + strconv.Itoa(secs) + "\r\n" +
		"Connection: close\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)
}

// transient reports whether an accept error will pass by itself: no
// descriptors left (EMFILE, ENFILE), no kernel memory, or a connection that
// failed before it was accepted.
func transient(err error) bool {
	if errors.Is(err, net.ErrClosed) {
		return false
	}
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM,
		syscall.ECONNABORTED, syscall.ECONNRESET, syscall.EINTR, syscall.EAGAIN, syscall.EPROTO, syscall.EPERM} {
		if errors.Is(err, errno) {
			return true
		}
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// clientKey is the address a per-IP cap counts: the IP, or an IPv6 client's
// /64.
func clientKey(a net.Addr) string {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return a.String()
	}
	if ip4 := ta.IP.To4(); ip4 != nil {
		return ip4.String()
	}
	return ta.IP.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// conn releases its slot once, when first closed.
type conn struct {
	net.Conn
	l    *Listener
	addr string
	once sync.Once

	// The socket's raw connection, made once at the accept (SyscallConn).
	rc    syscall.RawConn
	rcErr error
	// raw, when set, reads and writes the socket with raw system calls
	// (host/sockio says why).
	raw *sockio.Conn
}

func (c *conn) Read(b []byte) (int, error) {
	if c.raw != nil {
		return c.raw.Read(b)
	}
	return c.Conn.Read(b)
}

func (c *conn) Write(b []byte) (int, error) {
	if c.raw != nil {
		return c.raw.Write(b)
	}
	return c.Conn.Write(b)
}

// SyscallConn returns the socket's raw connection, the same one every
// time: a handler asks for it with each request (host/hangup watches the
// client), and *net.TCPConn makes a new one at each call.
func (c *conn) SyscallConn() (syscall.RawConn, error) { return c.rc, c.rcErr }

func (c *conn) Close() error {
	err := net.ErrClosed
	c.once.Do(func() {
		release := func() { c.l.release(c.addr) }
		if c.l.linger != nil {
			err = c.l.linger.Close(c.Conn, release)
			return
		}
		err = c.Conn.Close()
		release()
	})
	return err
}
