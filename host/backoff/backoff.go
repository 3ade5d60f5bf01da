// Package backoff is the "leave it alone for a while" switch the gateway's
// optional shared services (Redis for rate limits and for sticky sessions)
// use when they fail: after a failure the caller skips the service for a
// fixed pause and uses its local fallback, so an outage costs one timeout
// per pause rather than one per request; the switch is logged once each
// way.
package backoff

import (
	"log/slog"
	"sync/atomic"
	"time"
)

// Switch is safe for concurrent use.
type Switch struct {
	pause    time.Duration
	log      *slog.Logger
	downMsg  string
	upMsg    string
	until    atomic.Int64 // UnixNano: skip the service until then
	down     atomic.Bool  // the state last logged
	failures atomic.Uint64
}

// New returns a switch that pauses for pause after each failure and logs
// downMsg (with the error) and upMsg on log when the state changes.
func New(pause time.Duration, log *slog.Logger, downMsg, upMsg string) *Switch {
	return &Switch{pause: pause, log: log, downMsg: downMsg, upMsg: upMsg}
}

// Paused reports whether the service is to be skipped now.
func (s *Switch) Paused() bool { return s.until.Load() > time.Now().UnixNano() }

// Failed records a failure: the service is skipped for the pause.
func (s *Switch) Failed(err error) {
	s.failures.Add(1)
	s.until.Store(time.Now().Add(s.pause).UnixNano())
	if !s.down.Swap(true) {
		s.log.Warn(s.downMsg, "err", err)
	}
}

// OK records a success.
func (s *Switch) OK() {
	if s.down.Load() && s.down.Swap(false) {
		s.log.Info(s.upMsg)
	}
}

// Failures counts the failures recorded.
func (s *Switch) Failures() uint64 { return s.failures.Load() }
