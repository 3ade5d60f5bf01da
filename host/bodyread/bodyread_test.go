package bodyread

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// chunks is a reader that hands out at most n bytes a read, as a socket
// does, so Read's buffer fills and grows the way it does on a connection.
type chunks struct {
	r io.Reader
	n int
}

func (c *chunks) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.n)]) }

func TestReadReturnsTheWholeBody(t *testing.T) {
	for _, size := range []int{1, 100, FirstChunk - 1, FirstChunk, FirstChunk + 1, 100 << 10, 128 << 10, 1 << 20, 1<<20 + 7} {
		for _, declared := range []bool{true, false} {
			t.Run(fmt.Sprintf("%d declared %v", size, declared), func(t *testing.T) {
				body := bytes.Repeat([]byte("abcdefg"), size/7+1)[:size]
				d := -1
				if declared {
					d = size
				}
				budget := NewBudget(4 << 20)
				got, aerr := Read(&chunks{bytes.NewReader(body), 4096}, d, Limits{Max: 2 << 20, Budget: budget})
				if aerr != nil {
					t.Fatal(aerr)
				}
				if !bytes.Equal(got, body) {
					t.Fatalf("got %d bytes, not the %d sent", len(got), size)
				}
				if declared && cap(got) > size+1 {
					// A declared body ends in a buffer of its own length:
					// the handlers keep it for the request's life.
					t.Fatalf("a declared body of %d bytes is held in %d", size, cap(got))
				}
				if u := budget.Used(); u != 0 {
					t.Fatalf("the budget still holds %d bytes after the read", u)
				}
			})
		}
	}
}

func TestReadRefuses(t *testing.T) {
	deadline := fmt.Errorf("read tcp: %w", os.ErrDeadlineExceeded)
	reset := errors.New("connection reset by peer")
	cases := []struct {
		name     string
		r        io.Reader
		declared int
		limits   Limits
		status   int
		message  string
	}{
		{"declared over the limit", strings.NewReader("{}"), 5 << 20, Limits{Max: 4 << 20}, http.StatusRequestEntityTooLarge, "limit of 4 MiB"},
		{"undeclared over the limit", bytes.NewReader(make([]byte, 1<<20+1)), -1, Limits{Max: 1 << 20}, http.StatusRequestEntityTooLarge, "limit of 1 MiB"},
		{"more than declared", bytes.NewReader(make([]byte, 300)), 100, Limits{Max: 1 << 20}, http.StatusBadRequest, "longer than its Content-Length of 100 bytes"},
		{"the budget is spent", bytes.NewReader(make([]byte, 64<<10)), -1, Limits{Max: 1 << 20, Budget: NewBudget(32 << 10)}, http.StatusServiceUnavailable, "retry shortly"},
		{"too slow", iotest.TimeoutReader(strings.NewReader(`{"model":"m"}`)), -1, Limits{Max: 1 << 20}, http.StatusBadRequest, "ended early"},
		{"past the deadline", io.MultiReader(strings.NewReader(`{"mo`), iotest.ErrReader(deadline)), -1, Limits{Max: 1 << 20, Timeout: 30 * time.Second}, http.StatusRequestTimeout, "within 30s"},
		{"reset", io.MultiReader(strings.NewReader(`{"mo`), iotest.ErrReader(reset)), 20, Limits{Max: 1 << 20}, http.StatusBadRequest, "ended early (4 bytes read)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, aerr := Read(tc.r, tc.declared, tc.limits)
			if aerr == nil {
				t.Fatalf("read %d bytes, want a %d", len(got), tc.status)
			}
			if aerr.Status != tc.status || !strings.Contains(aerr.Message, tc.message) {
				t.Fatalf("got %d %q, want %d and %q", aerr.Status, aerr.Message, tc.status, tc.message)
			}
			if b := tc.limits.Budget; b != nil && b.Used() != 0 {
				t.Fatalf("a refused body left %d bytes taken from the budget", b.Used())
			}
		})
	}
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[int]string{4 << 20: "4 MiB", 512 << 10: "512 KiB", 1000: "1000 bytes", 1<<20 + 1: "1048577 bytes"} {
		if got := HumanBytes(n); got != want {
			t.Errorf("HumanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

// BenchmarkRead reads a declared body the way a socket hands it over
// (16 KiB a read): its cost is linear in the body's size (issue 29).
func BenchmarkRead(b *testing.B) {
	for _, kb := range []int{1, 32, 128, 1024} {
		body := bytes.Repeat([]byte("x"), kb<<10)
		b.Run(fmt.Sprintf("%dKB", kb), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			r := bytes.NewReader(body)
			for b.Loop() {
				r.Reset(body)
				if _, aerr := Read(&chunks{r, 16 << 10}, len(body), Limits{Max: 4 << 20}); aerr != nil {
					b.Fatal(aerr)
				}
			}
		})
	}
}
