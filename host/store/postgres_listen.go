package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// channelOf names topic's NOTIFY channel. The prefix keeps the gateway's
// channels apart from anything else on the database; a topic too long for
// an identifier (63 bytes) is named by its hash, the same in every
// instance.
func channelOf(topic string) string {
	const prefix = "sy_"
	if len(prefix)+len(topic) <= 63 {
		return prefix + topic
	}
	h := sha256.Sum256([]byte(topic))
	return prefix + "h_" + hex.EncodeToString(h[:20])
}

// listener is the one connection (outside the pool: it sits in LISTEN for
// good) that receives every subscribed topic's notifications and hands
// them to the subscribers. When the connection is lost it reconnects with
// backoff, LISTENs again and tells every subscriber to Resync: what was
// published meanwhile is gone.
type listener struct {
	cfg     *pgx.ConnConfig
	subs    *subs
	timeout time.Duration
	cancel  context.CancelFunc
	done    chan struct{}
	wake    chan struct{}

	mu sync.Mutex
	// topics by channel; listening: the channels LISTENed on the current
	// connection; waiters: Subscribe calls waiting for their channel.
	topics    map[string]string
	listening map[string]bool
	waiters   map[string][]chan struct{}
	// missed: a Subscribe gave up waiting (no connection): Resync after
	// the next connect even if it is the first.
	missed bool
	// down: the listener has no connection (it is reconnecting), so a
	// Subscribe does not wait for its LISTEN.
	down bool
}

func startListener(cfg *pgx.ConnConfig, s *subs, timeout time.Duration) *listener {
	ctx, cancel := context.WithCancel(context.Background())
	l := &listener{
		cfg: cfg, subs: s, timeout: timeout, cancel: cancel,
		done: make(chan struct{}), wake: make(chan struct{}, 1),
		topics: map[string]string{}, listening: map[string]bool{}, waiters: map[string][]chan struct{}{},
	}
	go l.run(ctx)
	return l
}

func (l *listener) stop() {
	l.cancel()
	<-l.done
}

// listen adds topic and waits (at most the store's timeout) until its
// channel is LISTENed on.
func (l *listener) listen(topic string) {
	ch := channelOf(topic)
	l.mu.Lock()
	l.topics[ch] = topic
	if l.listening[ch] {
		l.mu.Unlock()
		return
	}
	ready := make(chan struct{})
	l.waiters[ch] = append(l.waiters[ch], ready)
	if l.down {
		// It LISTENs on reconnecting, then sends Resync.
		l.missed = true
		l.mu.Unlock()
		return
	}
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
	select {
	case <-ready:
	case <-time.After(l.timeout):
		l.mu.Lock()
		l.missed = true
		l.mu.Unlock()
	}
}

func (l *listener) run(ctx context.Context) {
	defer close(l.done)
	backoff := 100 * time.Millisecond
	connected := false
	for ctx.Err() == nil {
		conn, err := l.connect(ctx)
		if err != nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		l.mu.Lock()
		resync := connected || l.missed
		l.missed, l.down = false, false
		l.mu.Unlock()
		connected = true
		if resync {
			l.subs.resyncAll()
		}
		l.serve(ctx, conn)
		conn.Close(context.Background())
		l.mu.Lock()
		l.listening = map[string]bool{}
		l.down = true
		l.mu.Unlock()
	}
}

func (l *listener) connect(ctx context.Context) (*pgx.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(cctx, l.cfg)
	if err != nil {
		return nil, err
	}
	if err := l.sync(cctx, conn); err != nil {
		conn.Close(context.Background())
		return nil, err
	}
	return conn, nil
}

// sync LISTENs on every channel not yet listened on and releases the
// Subscribe calls waiting for them.
func (l *listener) sync(ctx context.Context, conn *pgx.Conn) error {
	l.mu.Lock()
	var todo []string
	for ch := range l.topics {
		if !l.listening[ch] {
			todo = append(todo, ch)
		}
	}
	l.mu.Unlock()
	for _, ch := range todo {
		if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
			return err
		}
		l.mu.Lock()
		l.listening[ch] = true
		for _, w := range l.waiters[ch] {
			close(w)
		}
		delete(l.waiters, ch)
		l.mu.Unlock()
	}
	return nil
}

// serve waits for notifications until the connection fails or ctx ends;
// a wake (a new topic) interrupts the wait to LISTEN.
func (l *listener) serve(ctx context.Context, conn *pgx.Conn) {
	for ctx.Err() == nil {
		if l.pending() {
			sctx, scancel := context.WithTimeout(ctx, l.timeout)
			err := l.sync(sctx, conn)
			scancel()
			if err != nil {
				return
			}
		}
		wctx, cancel := context.WithCancel(ctx)
		stopWake := make(chan struct{})
		go func() {
			select {
			case <-l.wake:
				cancel()
			case <-stopWake:
			}
		}()
		n, err := conn.WaitForNotification(wctx)
		close(stopWake)
		woken := wctx.Err() != nil
		cancel()
		switch {
		case err == nil:
			l.mu.Lock()
			topic, ok := l.topics[n.Channel]
			l.mu.Unlock()
			if ok {
				l.subs.publish(topic, n.Payload)
			}
		case ctx.Err() != nil || !woken || conn.PgConn().IsClosed():
			// Closing, or the connection failed: reconnect.
			return
		}
		// Otherwise the wait was interrupted by a wake: LISTEN above.
	}
}

// pending reports whether a topic is not yet listened on.
func (l *listener) pending() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.waiters) > 0 || len(l.listening) < len(l.topics)
}
