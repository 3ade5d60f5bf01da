package wasm

import (
	"log/slog"
	"strconv"
	"testing"
)

// The module log ring keeps the last LogRingLines lines of each module,
// oldest first, per publishing account: an account reads its own module's
// lines, not those of another account's module of the same name; and the
// number of modules it remembers is bounded.
func TestModuleLogs(t *testing.T) {
	var l ModuleLogs
	for i := range LogRingLines + 50 {
		l.add("acct-a", "guard@1.0."+strconv.Itoa(i%2), slog.LevelInfo, "line "+strconv.Itoa(i))
	}
	l.add("acct-b", "guard@1.0.0", slog.LevelWarn, "b's line")
	got := l.Lines("acct-a", "guard")
	if len(got) != LogRingLines || got[0].Message != "line 50" || got[len(got)-1].Message != "line "+strconv.Itoa(LogRingLines+49) {
		t.Fatalf("%d lines, first %q last %q; want the last %d, oldest first", len(got), got[0].Message, got[len(got)-1].Message, LogRingLines)
	}
	if got[0].Module != "guard@1.0.0" || got[0].Level != "info" {
		t.Errorf("line %+v", got[0])
	}
	if b := l.Lines("acct-b", "guard"); len(b) != 1 || b[0].Message != "b's line" || b[0].Level != "warn" {
		t.Errorf("account b reads %+v", b)
	}
	if g := l.Lines("", "guard"); len(g) != 0 {
		t.Errorf("the gateway scope reads an account's lines: %+v", g)
	}
	for i := range LogRingModules + 10 {
		l.add("acct-c", "m"+strconv.Itoa(i)+"@1.0.0", slog.LevelInfo, "x")
	}
	if n := len(l.rings); n > LogRingModules {
		t.Errorf("%d modules remembered, want at most %d", n, LogRingModules)
	}
}
