package wasm

import (
	"log/slog"
	"strings"
	"sync"
	"time"
)

// ModuleLogs keeps the last lines each module logged through the log host
// function, per publishing account and module name (all versions), so an
// account can read its own plugin's lines (GET /api/v1/modules/:name/logs)
// without access to the gateway's log. Bounded: LogRingLines lines a
// module (each at most 4 KiB, maxLogLine), LogRingModules modules; past
// that the module written to longest ago is forgotten. In memory, per
// gateway: a cluster's other gateways keep their own.
type ModuleLogs struct {
	mu    sync.Mutex
	rings map[string]*logRing
}

// LogRingLines and LogRingModules bound ModuleLogs.
const (
	LogRingLines   = 200
	LogRingModules = 4096
)

// LogLine is one line a module logged.
type LogLine struct {
	Time    time.Time `json:"time"`
	Level   string    `json:"level"`  // debug, info, warn, error
	Module  string    `json:"module"` // name@version
	Message string    `json:"message"`
}

type logRing struct {
	lines []LogLine // a circular buffer of at most LogRingLines
	next  int       // where the next line goes once full
	last  time.Time
}

func logKey(account, name string) string { return account + "\x00" + name }

// add records a line of module id (name@version) published by account
// ("" for the gateway's).
func (l *ModuleLogs) add(account, id string, lv slog.Level, msg string) {
	name, _, _ := strings.Cut(id, "@")
	line := LogLine{Time: time.Now().UTC(), Level: strings.ToLower(lv.String()), Module: id, Message: msg}
	k := logKey(account, name)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.rings == nil {
		l.rings = map[string]*logRing{}
	}
	r := l.rings[k]
	if r == nil {
		if len(l.rings) >= LogRingModules {
			l.evictOldest()
		}
		r = &logRing{}
		l.rings[k] = r
	}
	r.last = line.Time
	if len(r.lines) < LogRingLines {
		r.lines = append(r.lines, line)
		return
	}
	r.lines[r.next] = line
	r.next = (r.next + 1) % LogRingLines
}

func (l *ModuleLogs) evictOldest() {
	var oldest string
	var at time.Time
	for k, r := range l.rings {
		if oldest == "" || r.last.Before(at) {
			oldest, at = k, r.last
		}
	}
	delete(l.rings, oldest)
}

// Lines returns the lines module name of account logged, oldest first.
func (l *ModuleLogs) Lines(account, name string) []LogLine {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.rings[logKey(account, name)]
	if r == nil {
		return []LogLine{}
	}
	out := make([]LogLine, 0, len(r.lines))
	out = append(out, r.lines[r.next:]...)
	return append(out, r.lines[:r.next]...)
}

// ModuleLogs is the engine's record of what its modules logged.
func (e *Engine) ModuleLogs() *ModuleLogs { return &e.modLogs }
