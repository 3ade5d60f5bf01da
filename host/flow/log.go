package flow

import (
	"context"
	"log/slog"
	"strconv"

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

// HumanBytes writes a byte limit as an operator configured it: 4 MiB,
// 512 KiB, or bytes.
func HumanBytes(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + " KiB"
	}
	return strconv.Itoa(n) + " bytes"
}
