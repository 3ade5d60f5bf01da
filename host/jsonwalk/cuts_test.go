package jsonwalk

import (
	"reflect"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// dropped is what Drop must leave of doc's root object: its members without
// the dropped ones, as encoding/json reads both.
func checkDrop(t *testing.T, doc string, drop func(k string, v gjson.Result) bool) {
	t.Helper()
	var d Doc
	d.Reset(doc)
	if !d.Index(MaxNesting) {
		return
	}
	root := d.Root()
	if !root.IsObject() {
		return
	}
	var want []string // kept members, in order, as key=raw
	var decided []bool
	d.Members(root, func(k string, v gjson.Result) bool {
		x := drop(k, v)
		decided = append(decided, x)
		if !x {
			want = append(want, k+"="+v.Raw)
		}
		return true
	})
	var c Cuts
	n := 0
	d.Drop(&c, root, func(string, gjson.Result) bool { n++; return decided[n-1] })
	out := string(c.Apply(doc))
	if !gjson.Valid(out) {
		t.Fatalf("Drop of %q left invalid JSON %q", doc, out)
	}
	var d2 Doc
	d2.Reset(out)
	d2.Index(MaxNesting)
	var got []string
	d2.Members(d2.Root(), func(k string, v gjson.Result) bool { got = append(got, k+"="+v.Raw); return true })
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Drop of %q: %q, members %q, want %q", doc, out, got, want)
	}
}

func TestDrop(t *testing.T) {
	null := func(_ string, v gjson.Result) bool { return v.Type == gjson.Null }
	for _, doc := range []string{
		`{}`, `{"a":null}`, `{"a":null,"b":null}`, `{"a":1,"b":null}`, `{"a":null,"b":1}`,
		`{"a":null,"b":1,"c":null}`, `{ "a" : null , "b" : 1 , "c" : null , "d" : null }`,
		`{"a":1,"b":null,"c":null,"d":2,"e":null}`, "{\n \"a\": null,\n \"b\": [null, {\"c\": null}]\n}",
		`{"a\"":null,"b\\":2}`,
	} {
		checkDrop(t, doc, null)
	}
	// Several objects' cuts applied in one copy, added out of order.
	doc := `{"x":null,"m":[{"n":null,"r":"u"},{"r":"a","n":null}],"y":null}`
	var d Doc
	d.Reset(doc)
	d.Index(MaxNesting)
	var c Cuts
	d.Drop(&c, d.Root(), func(k string, v gjson.Result) bool {
		if k == "m" {
			d.Elements(v, func(_ int, m gjson.Result) bool { d.Drop(&c, m, null); return true })
		}
		return v.Type == gjson.Null
	})
	if got, want := string(c.Apply(doc)), `{"m":[{"r":"u"},{"r":"a"}]}`; got != want {
		t.Fatalf("nested Drop: %s, want %s", got, want)
	}
}

func FuzzDrop(f *testing.F) {
	for _, doc := range corpus {
		f.Add(doc, uint8(1))
	}
	f.Add(`{"a":null,"b":1,"c":null}`, uint8(3))
	f.Fuzz(func(t *testing.T, doc string, mask uint8) {
		if !gjson.Valid(doc) || len(doc) > 1<<16 {
			return
		}
		i := 0
		checkDrop(t, doc, func(_ string, v gjson.Result) bool {
			i++
			return mask&(1<<(i%8)) != 0 || v.Type == gjson.Null
		})
	})
}

// Drop and Apply are linear in the document: removing every one of many
// members copies the document once, not once per member (sjson's delete
// did; issue 29). Bytes allocated are the bounded operation count.
func TestDropLinear(t *testing.T) {
	for _, n := range []int{1000, 100000} {
		doc := "{" + strings.Repeat(`"k":null,`, n) + `"last":1}`
		var d Doc
		d.Reset(doc)
		d.Index(MaxNesting)
		allocs := testing.AllocsPerRun(1, func() {
			var c Cuts
			d.Drop(&c, d.Root(), func(_ string, v gjson.Result) bool { return v.Type == gjson.Null })
			if out := c.Apply(doc); string(out) != `{"last":1}` {
				t.Fatalf("got %.40s", out)
			}
		})
		// The cut list grows by doubling: a few dozen allocations at most.
		if allocs > 64 {
			t.Fatalf("%d members: %v allocations", n, allocs)
		}
	}
}
