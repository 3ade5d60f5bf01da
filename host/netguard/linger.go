package netguard

import (
	"io"
	"net"
	"sync"
	"time"
)

// Lingering close. A server that answers before it has read a request's
// whole body — a 413 for a body over the limit, a 401 before the body is
// read — and then closes the socket while the client is still uploading
// makes the kernel send a TCP reset, because unread data sits in the
// receive buffer. The reset can reach the client before it has read the
// answer, and the client reports ECONNRESET instead of the 413 (Node's
// fetch, and so the official openai SDK, 4 times in 5 with an 11 MiB body;
// fasthttp issue #1348). Closing gracefully means: half-close (our FIN
// follows the answer), then read and discard what the client still sends,
// bounded in bytes and time, then close. It costs a goroutine and a small
// buffer per lingering connection, so lingering connections are counted
// and one over the bound is closed at once, as before.

// LingerConfig bounds lingering closes; zero values take the defaults.
type LingerConfig struct {
	MaxBytes   int64         // discarded at most per connection; default 128 MiB
	Timeout    time.Duration // at most per connection; default 5 s
	MaxPending int           // lingering connections at once; default 1024
}

// Lingerer closes connections gracefully when the client may still be
// sending.
type Lingerer struct {
	cfg LingerConfig
	sem chan struct{}
}

// NewLingerer returns a Lingerer with cfg's bounds.
func NewLingerer(cfg LingerConfig) *Lingerer {
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = 128 << 20
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.MaxPending <= 0 {
		cfg.MaxPending = 1024
	}
	return &Lingerer{cfg: cfg, sem: make(chan struct{}, cfg.MaxPending)}
}

// Close closes c, lingering in the background. It returns at once; the
// descriptor is closed when the client has closed its side (it does so on
// our FIN once it has read the answer) or stops sending, or when the bounds
// are reached. done, when not nil, runs once the descriptor is really
// closed (the caller's connection count drops then, not before).
//
// Every close lingers, not only those with unread bytes waiting: a client
// that writes its body in several writes may not have sent the rest yet
// when the server answers, and its next write would then meet a reset
// (seen as a flaky "broken pipe" with a 70 KiB body over a 64 KiB limit).
// A well-behaved client answers the FIN at once, so lingering costs a
// round trip; a silent one is bounded by Timeout and MaxPending.
func (l *Lingerer) Close(c net.Conn, done func()) error {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		err := c.Close()
		if done != nil {
			done()
		}
		return err
	}
	select {
	case l.sem <- struct{}{}:
	default: // too many lingering already: close now, as a plain close would
		err := c.Close()
		if done != nil {
			done()
		}
		return err
	}
	go func() {
		defer func() { <-l.sem }()
		_ = tc.CloseWrite() // the answer is followed by our FIN
		_ = tc.SetReadDeadline(time.Now().Add(l.cfg.Timeout))
		var buf [4096]byte
		_, _ = io.CopyBuffer(io.Discard, io.LimitReader(onlyReader{tc}, l.cfg.MaxBytes), buf[:])
		_ = tc.Close()
		if done != nil {
			done()
		}
	}()
	return nil
}

// onlyReader hides TCPConn's WriteTo, so io.CopyBuffer reads into the
// given buffer instead of splicing.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

// Listener wraps ln so that every connection it accepts closes through l.
func (l *Lingerer) Listener(ln net.Listener) net.Listener { return lingerListener{ln, l} }

type lingerListener struct {
	net.Listener
	l *Lingerer
}

func (ll lingerListener) Accept() (net.Conn, error) {
	c, err := ll.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &lingerConn{Conn: c, l: ll.l}, nil
}

type lingerConn struct {
	net.Conn
	l    *Lingerer
	once sync.Once
}

func (c *lingerConn) Close() error {
	err := net.ErrClosed
	c.once.Do(func() { err = c.l.Close(c.Conn, nil) })
	return err
}
