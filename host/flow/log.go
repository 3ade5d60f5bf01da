package flow

import (
	"context"
	"log/slog"

	"github.com/switchyard/switchyard/host/apierr"
)

// LogCause logs the internal cause of an error a client receives. Error
// responses (host/server's writeError) and failed streams call it, and
// nothing else logs a request's error, so each is logged once.
func (s *Core) LogCause(path string, e *apierr.Error) {
	if e.Cause == nil {
		return
	}
	level := slog.LevelWarn // the caller's to fix
	if e.Status >= 500 {
		level = slog.LevelError
	}
	s.Log.Log(context.Background(), level, "request failed", "path", path, "status", e.Status, "message", e.Message, "err", e.Cause)
}
