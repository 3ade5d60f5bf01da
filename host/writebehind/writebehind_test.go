package writebehind_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/writebehind"
)

// gated records each write it is given and, while gated, holds every write
// until the test lets it go: a stand-in for a slow stderr.
type gated struct {
	mu      sync.Mutex
	writes  []string
	entered chan string   // each write's bytes, as it starts
	release chan struct{} // one receive per write lets it finish
	err     error
}

func newGated() *gated {
	return &gated{entered: make(chan string, 100), release: make(chan struct{}, 100)}
}

func (g *gated) Write(p []byte) (int, error) {
	g.entered <- string(p)
	<-g.release
	g.mu.Lock()
	defer g.mu.Unlock()
	g.writes = append(g.writes, string(p))
	return len(p), g.err
}

func (g *gated) got() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.writes...)
}

// safe is a bytes.Buffer for one writer goroutine and a reading test.
type safe struct {
	mu sync.Mutex
	b  bytes.Buffer
	n  int // writes
}

func (s *safe) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	return s.b.Write(p)
}

func (s *safe) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestLinesWrittenWhileAWriteIsInFlightAreBatched: the first line is
// written alone (nothing waits for company), the lines that arrive while
// it is in flight go out together in the next write, in order.
func TestLinesWrittenWhileAWriteIsInFlightAreBatched(t *testing.T) {
	g := newGated()
	w := writebehind.New(g, 1<<10)
	must(t, w, "a\n")
	if got := <-g.entered; got != "a\n" {
		t.Fatalf("first write = %q, want the first line alone", got)
	}
	for _, l := range []string{"b\n", "c\n", "d\n"} {
		must(t, w, l)
	}
	g.release <- struct{}{}
	if got := <-g.entered; got != "b\nc\nd\n" {
		t.Fatalf("second write = %q, want the three lines that arrived meanwhile, in order", got)
	}
	g.release <- struct{}{}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got, want := g.got(), []string{"a\n", "b\nc\nd\n"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("writes = %q, want %q", got, want)
	}
}

// TestALineIsWrittenWithoutFlush: there is no timer and nothing waits for
// a batch to fill; a lone line reaches the output by itself.
func TestALineIsWrittenWithoutFlush(t *testing.T) {
	var out safe
	w := writebehind.New(&out, 1<<10)
	defer w.Close()
	must(t, w, "alone\n")
	deadline := time.Now().Add(10 * time.Second) // safety bound, not a timing assertion
	for out.String() != "alone\n" {
		if time.Now().After(deadline) {
			t.Fatalf("the line never reached the output without a Flush (got %q)", out.String())
		}
		time.Sleep(time.Millisecond)
	}
}

// TestAFullBufferMakesWritersWait: with a write in flight and the buffer
// full, a writer is held until the buffer is taken: memory stays bounded
// and no line is dropped.
func TestAFullBufferMakesWritersWait(t *testing.T) {
	g := newGated()
	w := writebehind.New(g, 10)
	must(t, w, "111111\n") // in flight
	<-g.entered
	must(t, w, "222222\n") // pending: 7 of 10 bytes
	var released atomic.Bool
	third := make(chan error)
	go func() {
		_, err := w.Write([]byte("333333\n")) // 14 > 10: must wait
		if !released.Load() {
			err = errors.New("the third write returned while the buffer was full")
		}
		third <- err
	}()
	time.Sleep(20 * time.Millisecond) // give a wrong Writer the chance to return early
	released.Store(true)
	g.release <- struct{}{}
	if err := <-third; err != nil {
		t.Fatal(err)
	}
	if got := <-g.entered; got != "222222\n" {
		t.Fatalf("second write = %q", got)
	}
	g.release <- struct{}{}
	<-g.entered
	g.release <- struct{}{}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(g.got(), ""); got != "111111\n222222\n333333\n" {
		t.Fatalf("output = %q, want every line once, in order", got)
	}
}

// TestALineLongerThanTheBufferIsWritten: the bound holds back lines while
// others are pending; it never refuses a long line.
func TestALineLongerThanTheBufferIsWritten(t *testing.T) {
	var out safe
	w := writebehind.New(&out, 4)
	long := strings.Repeat("x", 100) + "\n"
	must(t, w, "ab\n")
	must(t, w, long)
	must(t, w, "cd\n")
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "ab\n"+long+"cd\n" {
		t.Fatalf("output = %q", got)
	}
	w.Close()
}

// TestConcurrentLoggersLoseNothing: slog loggers on many goroutines, every
// line arrives whole and once, each goroutine's lines in its order, and
// fewer writes reach the output than lines when they contend.
func TestConcurrentLoggersLoseNothing(t *testing.T) {
	var out safe
	w := writebehind.New(&out, 1<<12)
	log := slog.New(slog.NewTextHandler(w, nil))
	const goroutines, lines = 8, 500
	var wg sync.WaitGroup
	for gi := range goroutines {
		wg.Go(func() {
			for i := range lines {
				log.Info("request", "g", gi, "i", i)
			}
		})
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	next := make([]int, goroutines)
	n := 0
	for l := range strings.SplitSeq(strings.TrimSuffix(out.String(), "\n"), "\n") {
		var gi, i int
		if _, err := fmt.Sscanf(l[strings.Index(l, " g=")+1:], "g=%d i=%d", &gi, &i); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		if i != next[gi] {
			t.Fatalf("goroutine %d: line %d came when %d was due", gi, i, next[gi])
		}
		next[gi]++
		n++
	}
	if n != goroutines*lines {
		t.Fatalf("%d lines arrived, want %d", n, goroutines*lines)
	}
}

// TestWriteAfterCloseGoesThrough: a line logged after Close (a goroutine
// finishing late) is written, not lost.
func TestWriteAfterCloseGoesThrough(t *testing.T) {
	var out safe
	w := writebehind.New(&out, 1<<10)
	must(t, w, "before\n")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if out.String() != "before\n" {
		t.Fatalf("Close returned before the pending line was written: %q", out.String())
	}
	must(t, w, "after\n")
	if out.String() != "before\nafter\n" {
		t.Fatalf("output = %q", out.String())
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestFlushReportsTheOutputsError: the error a write met is not lost with
// the line's caller gone.
func TestFlushReportsTheOutputsError(t *testing.T) {
	g := newGated()
	g.err = io.ErrShortWrite
	w := writebehind.New(g, 1<<10)
	must(t, w, "x\n")
	<-g.entered
	g.release <- struct{}{}
	if err := w.Flush(); !errors.Is(err, io.ErrShortWrite) {
		t.Fatalf("Flush = %v, want the output's error", err)
	}
	w.Close()
}

func must(t *testing.T, w io.Writer, s string) {
	t.Helper()
	if n, err := w.Write([]byte(s)); err != nil || n != len(s) {
		t.Fatalf("Write(%q) = %d, %v", s, n, err)
	}
}

// BenchmarkLog is one request-sized log line through slog's text handler
// to a file, from 16 goroutines: "direct" is the file itself (one write
// per line), "writebehind" batches lines that meet a write in flight.
func BenchmarkLog(b *testing.B) {
	for _, name := range []string{"direct", "writebehind"} {
		b.Run(name, func(b *testing.B) {
			f, err := os.CreateTemp(b.TempDir(), "log")
			if err != nil {
				b.Fatal(err)
			}
			var out io.Writer = f
			var w *writebehind.Writer
			if name == "writebehind" {
				w = writebehind.New(f, 1<<20)
				out = w
			}
			log := slog.New(slog.NewTextHandler(out, nil))
			b.ReportAllocs()
			b.SetParallelism(8) // 16 goroutines on 2 cores
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					log.LogAttrs(context.Background(), slog.LevelInfo, "request", slog.String("route", "/api/v1/chat/completions"),
						slog.Int("status", 200), slog.Int64("latency_ms", 1), slog.String("account", "acct_0123456789"),
						slog.String("key_name", "bench"), slog.String("generation_id", "gen-0123456789abcdef0123"),
						slog.String("model", "bench/chat"), slog.String("provider", "bench"), slog.String("cost", "0.000123"))
				}
			})
			if w != nil {
				w.Close()
			}
		})
	}
}
