package flow

import (
	"context"
	"testing"
)

// countCloser counts its closes and records the order they came in.
type countCloser struct {
	n     int
	order *[]string
	name  string
}

func (c *countCloser) Close() error {
	c.n++
	*c.order = append(*c.order, c.name)
	return nil
}

// TestRequestCloseOnce: whatever way a request ends, what it holds is
// released exactly once, and only when the last reference (the entry
// point's, a stream's) is closed; closers go last-added first, after the
// request's context is cancelled.
func TestRequestCloseOnce(t *testing.T) {
	for _, tc := range []struct {
		name  string
		keeps int // references a stream took
	}{
		{"entry point only", 0},
		{"one stream", 1},
		{"a stream and a pump", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			var order []string
			a, b := &countCloser{order: &order, name: "a"}, &countCloser{order: &order, name: "b"}
			r := &Request{ctx: ctx, cancel: cancel, spend: &spend{}, group: &subGroup{}}
			r.refs.Store(1)
			r.AddCloser(a)
			r.AddCloser(b)
			for range tc.keeps {
				r.Keep()
			}
			for i := range tc.keeps {
				r.Close()
				if a.n != 0 || ctx.Err() != nil {
					t.Fatalf("released after %d of %d closes", i+1, tc.keeps+1)
				}
			}
			r.Close()
			if a.n != 1 || b.n != 1 || ctx.Err() == nil {
				t.Fatalf("after the last close: closers %d, %d; context %v", a.n, b.n, ctx.Err())
			}
			if order[0] != "b" || order[1] != "a" {
				t.Errorf("closers ran in order %v, want the last added first", order)
			}
		})
	}
}
