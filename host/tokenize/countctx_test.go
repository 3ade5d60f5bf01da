package tokenize

import (
	"context"
	"strings"
	"testing"
)

// doneAfter is a context whose Err turns non-nil after n calls: a deadline
// that passes mid-count, without timing.
type doneAfter struct {
	context.Context
	n int
}

func (d *doneAfter) Err() error {
	if d.n <= 0 {
		return context.DeadlineExceeded
	}
	d.n--
	return nil
}

// CountContext counts what Count counts, and stops between two segments
// once its context is done: a module's count_tokens call on 10 MB no
// longer runs the whole count past the module's time limit.
func TestCountContext(t *testing.T) {
	e, err := Get("cl100k_base")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("The quick brown fox jumps over the lazy dog, twice; 42 times!\n", 20_000) // 1.2 MB
	want := e.Count(text)
	got, err := e.CountContext(context.Background(), text)
	if err != nil || got != want {
		t.Fatalf("CountContext = %d, %v; Count = %d", got, err, want)
	}
	for _, tc := range []struct {
		name  string
		after int
	}{{"done before", 0}, {"done after three segments", 3}} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := e.CountContext(&doneAfter{Context: context.Background(), n: tc.after}, text)
			if err != context.DeadlineExceeded {
				t.Fatalf("err %v, want the context's", err)
			}
			if limit := want * (tc.after + 1) * ctxSegmentBytes / len(text); n > limit+100 {
				t.Fatalf("counted %d tokens before stopping; %d segments hold about %d", n, tc.after, limit)
			}
		})
	}
}
