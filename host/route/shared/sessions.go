// Package shared keeps sticky sessions in Redis for every gateway instance
// that uses it (docs/cluster.md): route.Options.Shared. It is apart from
// host/route so that what only parses routing preferences (host/validate)
// does not link a Redis client (issue 30 §5).
package shared

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/switchyard/switchyard/host/backoff"
)

// Sessions keeps sticky sessions in Redis, so that every gateway
// instance using the same Redis pins a session to the same endpoint
// (docs/cluster.md). A session is one string key, prefix + session id,
// whose value names the endpoint stably across instances — model id and
// provider slug, as endpointKey — and whose TTL is the router's SessionTTL,
// renewed by every lookup and every Stick (every successful attempt).
//
// Redis is the authority: Plan reads it first (GETEX, bounded by Timeout)
// and keeps the router's in-process map as a copy, used only when Redis
// has no entry (one written while Redis was unreachable, or before it
// restarted empty) or cannot be reached. An endpoint that this instance's catalog lacks (a catalog not yet
// reloaded here) is ignored, and the plan is load-balanced as without a
// session. Unreachable, the store is left alone for RetryEvery after each
// failure, so that an outage costs one timeout per second, not one per
// request; the switch is logged once each way.
type Sessions struct {
	c       redis.UniversalClient
	prefix  string
	timeout time.Duration

	backoff *backoff.Switch
}

// Options tune Sessions; the zero value gives the defaults.
type Options struct {
	// Prefix starts every key; default "switchyard:session:".
	Prefix string
	// Timeout bounds one Redis call; default 100ms.
	Timeout time.Duration
	// RetryEvery is how long Redis is left alone after a failure; default 1s.
	RetryEvery time.Duration
	Log        *slog.Logger // default slog.Default()
}

// New returns a session store in c.
func New(c redis.UniversalClient, o Options) *Sessions {
	if o.Prefix == "" {
		o.Prefix = "switchyard:session:"
	}
	if o.Timeout <= 0 {
		o.Timeout = 100 * time.Millisecond
	}
	if o.RetryEvery <= 0 {
		o.RetryEvery = time.Second
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	return &Sessions{c: c, prefix: o.Prefix, timeout: o.Timeout,
		backoff: backoff.New(o.RetryEvery, o.Log,
			"sticky sessions: Redis unreachable, sessions are pinned per instance until it is back",
			"sticky sessions: Redis reachable again, sessions are shared across instances")}
}

// Failures counts the Redis calls that failed (for tests and metrics).
func (s *Sessions) Failures() uint64 { return s.backoff.Failures() }

var errDown = errors.New("session store unreachable (waiting to retry)")

// Get returns the endpoint key of id ("" when there is none) and renews
// its TTL (GETEX, Redis ≥ 6.2): a session lives ttl after it was last
// pinned or looked up.
func (s *Sessions) Get(id string, ttl time.Duration) (string, error) {
	if s.backoff.Paused() {
		return "", errDown
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	v, err := s.c.GetEx(ctx, s.prefix+id, ttl).Result()
	if errors.Is(err, redis.Nil) {
		s.backoff.OK()
		return "", nil
	}
	if err != nil {
		s.backoff.Failed(err)
		return "", err
	}
	s.backoff.OK()
	return v, nil
}

// Put pins id to the endpoint key for ttl.
func (s *Sessions) Put(id, key string, ttl time.Duration) {
	if s.backoff.Paused() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	if err := s.c.Set(ctx, s.prefix+id, key, ttl).Err(); err != nil {
		s.backoff.Failed(err)
		return
	}
	s.backoff.OK()
}
