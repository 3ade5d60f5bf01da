package billing

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/store"
)

// A group that settles a hold skips that hold's writes queued in the same
// group (the settlement would delete it in the same transaction); a hold
// settled in a later group is written, and a group that fails runs every
// operation alone, the hold writes included.
func TestWriterSkipsHoldsSettledInTheSameGroup(t *testing.T) {
	db := tempBolt(t)
	// A long window: everything queued below lands in one group.
	w := newWriter(db, nil, time.Hour)
	defer w.close()
	var ran []string
	rec := func(name string, err error) func(store.Tx) error {
		return func(store.Tx) error { ran = append(ran, name); return err }
	}
	boom := errors.New("boom")
	for _, tc := range []struct {
		name string
		ops  []op
		sync bool // a commit between the first op and the rest
		want string
	}{
		{"put, checkpoint and settle in one group", []op{
			{fn: rec("put", nil), hold: "h1"}, {fn: rec("other", nil), hold: "h2"},
			{fn: rec("checkpoint", nil), hold: "h1"}, {fn: rec("settle", nil), settles: "h1"}},
			false, "other settle"},
		{"settled in the next group", []op{
			{fn: rec("put", nil), hold: "h1"}, {fn: rec("settle", nil), settles: "h1"}},
			true, "put settle"},
		{"a failed group runs each alone", []op{
			{fn: rec("put", nil), hold: "h1"}, {fn: rec("bad", boom)}, {fn: rec("settle", nil), settles: "h1"}},
			false, "bad put bad settle"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ran = nil
			for i, o := range tc.ops {
				w.submit(o)
				if i == 0 && tc.sync {
					if err := w.sync(); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := w.sync(); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(ran, " "); got != tc.want {
				t.Errorf("ran %q, want %q", got, tc.want)
			}
		})
	}
}
