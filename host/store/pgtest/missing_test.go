package pgtest

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// fakeTB records how New ends a test.
type fakeTB struct {
	testing.TB
	fatal, skip string
}

func (f *fakeTB) Helper()                   {}
func (f *fakeTB) Fatal(args ...any)         { f.fatal = fmt.Sprint(args...); runtime.Goexit() }
func (f *fakeTB) Skip(args ...any)          { f.skip = fmt.Sprint(args...); runtime.Goexit() }
func (f *fakeTB) Cleanup(func())            {}
func (f *fakeTB) Fatalf(s string, a ...any) { f.Fatal(fmt.Sprintf(s, a...)) }

// TestNotInstalled: without PostgreSQL a test fails and says to run
// `make deps`; SWITCHYARD_SKIP_PG=1 skips it instead.
func TestNotInstalled(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	old1, old2 := debianBinDirs, pgConfig
	debianBinDirs, pgConfig = t.TempDir()+"/*/bin", "no-pg_config"
	defer func() { debianBinDirs, pgConfig = old1, old2 }()
	run := func() *fakeTB {
		f := &fakeTB{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			New(f)
		}()
		<-done
		return f
	}
	t.Setenv("SWITCHYARD_SKIP_PG", "")
	if f := run(); !strings.Contains(f.fatal, "make deps") || f.skip != "" {
		t.Errorf("without PostgreSQL: fatal %q, skip %q; want a failure naming make deps", f.fatal, f.skip)
	}
	t.Setenv("SWITCHYARD_SKIP_PG", "1")
	if f := run(); f.skip == "" || f.fatal != "" {
		t.Errorf("with SWITCHYARD_SKIP_PG=1: fatal %q, skip %q; want a skip", f.fatal, f.skip)
	}
}
