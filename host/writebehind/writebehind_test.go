package writebehind_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/writebehind"
)

// record keeps each write it is given, as one string.
type record struct {
	mu     sync.Mutex
	writes []string
	err    error
}

func (r *record) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writes = append(r.writes, string(p))
	return len(p), r.err
}

func (r *record) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.writes...)
}

func (r *record) text() string { return strings.Join(r.got(), "") }

// never is a linger no test waits for: what it holds back is written by
// Flush, Close or backpressure, never by the timer.
const never = time.Hour

func TestWrites(t *testing.T) {
	for _, tc := range []struct {
		name  string
		max   int
		lines []string
		// before: the writes out has had when the last Write returns;
		// after: once Flush has returned.
		before, after []string
	}{
		{"a line when quiet is written at once", 1 << 10, []string{"a\n"},
			[]string{"a\n"}, []string{"a\n"}},
		{"lines that follow it closely wait and go out together, in order", 1 << 10, []string{"a\n", "b\n", "c\n", "d\n"},
			[]string{"a\n"}, []string{"a\n", "b\nc\nd\n"}},
		{"a line that would overfill the buffer is written with the pending ones by its caller", 10,
			[]string{"111111\n", "222222\n", "333333\n", "4\n"},
			[]string{"111111\n", "222222\n333333\n"}, []string{"111111\n", "222222\n333333\n", "4\n"}},
		{"a line longer than the buffer is written, not refused", 4, []string{"ab\n", strings.Repeat("x", 100) + "\n", "cd\n"},
			[]string{"ab\n", strings.Repeat("x", 100) + "\n"}, []string{"ab\n", strings.Repeat("x", 100) + "\n", "cd\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out record
			w := writebehind.New(&out, tc.max, never)
			for _, l := range tc.lines {
				must(t, w, l)
			}
			if got := out.got(); fmt.Sprint(got) != fmt.Sprint(tc.before) {
				t.Fatalf("writes before Flush = %q, want %q", got, tc.before)
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if got := out.got(); fmt.Sprint(got) != fmt.Sprint(tc.after) {
				t.Fatalf("writes after Flush = %q, want %q", got, tc.after)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestPendingLinesAreWrittenWithoutFlush: the lines of a busy moment reach
// the output by themselves once it is over.
func TestPendingLinesAreWrittenWithoutFlush(t *testing.T) {
	var out record
	w := writebehind.New(&out, 1<<10, time.Millisecond)
	defer w.Close()
	must(t, w, "a\n")
	must(t, w, "b\n")
	deadline := time.Now().Add(10 * time.Second) // safety bound, not a timing assertion
	for out.text() != "a\nb\n" {
		if time.Now().After(deadline) {
			t.Fatalf("the pending line never reached the output without a Flush (got %q)", out.text())
		}
		time.Sleep(time.Millisecond)
	}
}

// TestConcurrentLoggersLoseNothing: slog loggers on many goroutines, every
// line arrives whole and once, each goroutine's lines in its order.
func TestConcurrentLoggersLoseNothing(t *testing.T) {
	var out record
	w := writebehind.New(&out, 1<<12, time.Millisecond)
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
	for l := range strings.SplitSeq(strings.TrimSuffix(out.text(), "\n"), "\n") {
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
	if writes := len(out.got()); writes >= n {
		t.Errorf("%d lines took %d writes: nothing was batched", n, writes)
	}
}

// TestCloseWritesPendingAndLaterLinesGoThrough: Close leaves nothing
// behind, and a line logged after it (a goroutine finishing late) is
// written, not lost.
func TestCloseWritesPendingAndLaterLinesGoThrough(t *testing.T) {
	var out record
	w := writebehind.New(&out, 1<<10, never)
	must(t, w, "a\n")
	must(t, w, "pending\n")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if out.text() != "a\npending\n" {
		t.Fatalf("after Close the output is %q", out.text())
	}
	must(t, w, "after\n")
	must(t, w, "after2\n")
	if out.text() != "a\npending\nafter\nafter2\n" {
		t.Fatalf("output = %q", out.text())
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestErrors: a line written at once returns the output's error; the
// error of a batched write, whose callers have returned, comes from Flush.
func TestErrors(t *testing.T) {
	out := record{err: io.ErrShortWrite}
	w := writebehind.New(&out, 1<<10, never)
	if _, err := w.Write([]byte("a\n")); !errors.Is(err, io.ErrShortWrite) {
		t.Fatalf("Write = %v, want the output's error", err)
	}
	must(t, w, "b\n")
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
// per line), "writebehind" batches the lines that come within 5 ms.
func BenchmarkLog(b *testing.B) {
	for _, name := range []string{"direct", "writebehind"} {
		b.Run(name, func(b *testing.B) {
			f, err := os.CreateTemp(b.TempDir(), "log")
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			var out io.Writer = f
			var w *writebehind.Writer
			if name == "writebehind" {
				w = writebehind.New(f, 64<<10, 5*time.Millisecond)
				defer w.Close()
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
		})
	}
}
