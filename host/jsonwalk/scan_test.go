package jsonwalk

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/host/agentbody"
	"github.com/tidwall/gjson"
)

// scanCases are documents Scan must judge as encoding/json and gjson do:
// every kind of syntax error at every place one can stand.
var scanCases = []string{
	``, ` `, `{`, `}`, `[`, `]`, `{}`, `[]`, ` {} `, `{} {}`, `{},`, `[1,]`, `[,1]`, `{"a":1,}`, `{,"a":1}`,
	`{"a"}`, `{"a":}`, `{"a" 1}`, `{a:1}`, `{"a":1 "b":2}`, `[1 2]`, `[1,,2]`, `{"a":[}`, `[{]}`, `{"a":{"b":[1,{"c":null}]}}`,
	`"x"`, `"`, `"\"`, `"\\"`, `"\u00e9"`, `"\u00g9"`, `"\u12"`, `"\x"`, `"a` + "\x01" + `b"`, "\"tab\there\"", `"\/\b\f\n\r\t"`,
	`0`, `-0`, `01`, `-`, `1.`, `.5`, `1.5e`, `1.5e+`, `1e5`, `1E-5`, `-1.25e+10`, `+1`, `1x`, `0x10`,
	`true`, `tru`, `truex`, `false`, `fals`, `null`, `nul`, `nulll`, `[true,false,null]`,
	`{"k":"` + strings.Repeat("abcdefgh", 9) + `\"` + strings.Repeat("é", 9) + `"}`,
	`{"k":"` + strings.Repeat("abcdefg", 9) + "\n" + `"}`,
	`["` + strings.Repeat(`\\`, 17) + `"]`,
	"[1]\x00", "\ufeff[]", `{"a":1}}`, `[[]]]`, `{"a":1]`, `[1}`,
}

func TestScanMatchesParsers(t *testing.T) {
	cases := append(slices.Clone(scanCases), corpus...)
	for _, doc := range cases {
		scanAgrees(t, doc)
		withFewNotes(func() { scanAgrees(t, doc) })
	}
}

// scanAgrees checks Scan against gjson.Valid and encoding/json (which
// also checks UTF-8, so only its "valid" answers are compared where gjson
// agrees), and its index against Index's.
func scanAgrees(t *testing.T, doc string) {
	t.Helper()
	var d Doc
	d.Reset(doc)
	got := d.Scan(MaxNesting)
	want := gjson.Valid(doc)
	if (got == OK) != want && got != TooDeep {
		t.Fatalf("Scan(%q) = %v, gjson.Valid %v", clip(doc), got, want)
	}
	if got == OK && !json.Valid([]byte(strings.ToValidUTF8(doc, "?"))) {
		t.Fatalf("Scan(%q) = OK, encoding/json says invalid", clip(doc))
	}
	if got != OK {
		return
	}
	var e Doc
	e.Reset(doc)
	e.Index(MaxNesting)
	if !slices.Equal(d.opens, e.opens) || !slices.Equal(d.ends, e.ends) {
		t.Fatalf("Scan(%q) index %v %v, Index %v %v", clip(doc), d.opens, d.ends, e.opens, e.ends)
	}
	walkAgrees(t, &d, &e, d.Root(), e.Root())
	// Out of order, as a second walk or a Get goes back: the noted long
	// strings read from the end backwards (the lookup's search).
	for k := len(d.strs) - 1; k >= 0; k-- {
		if got, want := fst(d.ValueAt(int(d.strs[k]))), fst(e.ValueAt(int(d.strs[k]))); !same(got, want) {
			t.Fatalf("ValueAt(%d) of %q: %+v with the noted strings, %+v without", d.strs[k], clip(doc), got, want)
		}
	}
}

func fst(r gjson.Result, _ int) gjson.Result { return r }

func same(x, y gjson.Result) bool {
	return x.Type == y.Type && x.Raw == y.Raw && x.Str == y.Str && x.Num == y.Num && x.Index == y.Index
}

// pickAgrees: Pick of an object's keys (and of one it lacks) reads what
// the first member of each name is, and names the first key sent twice.
func pickAgrees(t *testing.T, d *Doc, x gjson.Result, keys []string) {
	t.Helper()
	want := append(slices.Clone(keys), "\x00absent")
	out := make([]gjson.Result, len(want))
	dup := d.Pick(x, want, out)
	seen, wantDup, twice := map[string]bool{}, "", false
	for _, k := range keys {
		if seen[k] {
			wantDup, twice = k, true
			break
		}
		seen[k] = true
	}
	if dup != wantDup {
		t.Fatalf("Pick of %q: duplicate %q, want %q", clip(x.Raw), dup, wantDup)
	}
	if twice { // (an empty key sent twice reads as no duplicate: Pick's "")
		return
	}
	for i, k := range want {
		if g := d.Get(x, k); !same(out[i], g) {
			t.Fatalf("Pick of %q: %q is %+v, Get says %+v", clip(x.Raw), k, out[i], g)
		}
	}
}

// walkAgrees walks x of d (Scanned: long strings noted) and y of e
// (Indexed: none noted) side by side: every value reads the same.
func walkAgrees(t *testing.T, d, e *Doc, x, y gjson.Result) {
	t.Helper()
	if !same(x, y) {
		t.Fatalf("walk of %q: %+v with the noted strings, %+v without", clip(d.s), x, y)
	}
	var xs, ys []gjson.Result
	if x.IsObject() {
		var keys []string
		d.Members(x, func(k string, v gjson.Result) bool { xs, keys = append(xs, v), append(keys, k); return true })
		e.Members(y, func(_ string, v gjson.Result) bool { ys = append(ys, v); return true })
		pickAgrees(t, d, x, keys)
	} else if x.IsArray() {
		d.Elements(x, func(_ int, v gjson.Result) bool { xs = append(xs, v); return true })
		e.Elements(y, func(_ int, v gjson.Result) bool { ys = append(ys, v); return true })
	}
	if len(xs) != len(ys) {
		t.Fatalf("walk of %q: %d values with the noted strings, %d without", clip(d.s), len(xs), len(ys))
	}
	for i := range xs {
		walkAgrees(t, d, e, xs[i], ys[i])
	}
}

// The walk reads every string Scan noted (keys and values, short and
// long) from the note: the same value, Str and all, as reading it again
// gives, escaped or not, forward and back; Index (no notes) reads it
// again.
func TestStringsNoted(t *testing.T) {
	long := strings.Repeat("the build failed ", 8)
	doc := `{"a":"` + long + `","b":["short","` + long + `\n` + long + `",{"c":"` + long + `"}],"d":"` + long + `","e\u0021":1}`
	var d Doc
	d.Reset(doc)
	if d.Scan(MaxNesting) != OK {
		t.Fatal("not scanned")
	}
	// a, b, short, the escaped one, c and its value, d and its value, e!
	if len(d.strs) != 10 {
		t.Fatalf("noted %d strings, want 10", len(d.strs))
	}
	scanAgrees(t, doc)
	if a := d.Get(d.Root(), "a"); a.Str != long {
		t.Fatalf("a.Str %q", a.Str)
	}
	if b := d.Get(d.Root(), "b"); d.Count(b) != 3 || Text(fst(d.ValueAt(int(d.strs[4])))) != long+"\n"+long {
		t.Fatalf("b %s", b.Raw)
	}
	if e := d.Get(d.Root(), "e!"); e.Raw != "1" {
		t.Fatalf("the escaped key e! not found: %q", e.Raw)
	}
}

func TestScanDepth(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		max  int
		want Status
	}{
		{`[[[]]]`, 3, OK},
		{`[[[]]]`, 2, TooDeep},
		{`[x,[[]]]`, 2, Invalid}, // the error comes first
		{`[[[x]]]`, 2, TooDeep},
		{strings.Repeat("[", 500) + strings.Repeat("]", 500), MaxNesting, OK},
		{strings.Repeat("[", 20000), MaxNesting, TooDeep},
	} {
		var d Doc
		d.Reset(tc.doc)
		if got := d.Scan(tc.max); got != tc.want {
			t.Errorf("Scan(%.30s…, %d) = %v, want %v", tc.doc, tc.max, got, tc.want)
		}
	}
}

func FuzzScan(f *testing.F) {
	for _, doc := range append(slices.Clone(scanCases), corpus...) {
		f.Add(doc)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		if withinDepth(doc, MaxNesting) {
			scanAgrees(t, doc)
			withFewNotes(func() { scanAgrees(t, doc) })
		}
	})
}

// withFewNotes runs fn with the container notes' bound at one per 16 bytes
// with no floor, so that a small document has containers the index lacks.
func withFewNotes(fn func()) {
	was := minOpens
	minOpens = 0
	defer func() { minOpens = was }()
	fn()
}

func BenchmarkScan(b *testing.B) {
	prose := `{"messages":[` + strings.Repeat(`{"role":"tool","content":"`+strings.Repeat("the build failed because ", 60)+`"},`, 80) + `{"role":"user","content":"x"}]}`
	scan := func(d *Doc, doc string) { d.Scan(MaxNesting) }
	for _, c := range []struct {
		name, doc string
		run       func(d *Doc, doc string)
	}{
		{"Scan", prose, scan},
		{"Scan/agent128KB", string(agentbody.Chat("openai/gpt-4o", false, 128<<10)), scan},
		// What Scan replaces: the index, then a validity pass of its own.
		{"Index+gjson.Valid", prose, func(d *Doc, doc string) { d.Index(MaxNesting); gjson.Valid(doc) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.doc)))
			var d Doc
			for b.Loop() {
				d.Reset(c.doc)
				c.run(&d, c.doc)
			}
		})
	}
}

// A document of tiny strings does not get an index of strings larger than
// itself: short strings' notes stop at one per 16 bytes, long ones are
// still noted, and the walk reads the same values either way.
func TestStringNotesBounded(t *testing.T) {
	doc := `[` + strings.Repeat(`"",`, 20000) + `"` + strings.Repeat("x", 100) + `"]`
	var d Doc
	d.Reset(doc)
	if d.Scan(MaxNesting) != OK {
		t.Fatal("not scanned")
	}
	if max := len(doc)/16 + len(doc)/64 + 1; len(d.strs) > max {
		t.Fatalf("%d string notes for a %d-byte document, want at most %d", len(d.strs), len(doc), max)
	}
	if last := int(d.strs[len(d.strs)-1]); last != len(doc)-103 {
		t.Fatalf("the long string at %d was not noted (last note at %d)", len(doc)-103, last)
	}
	scanAgrees(t, doc)
}

// A body of brackets does not get an index larger than itself: empty
// containers are not noted, nor any past one per 16 bytes — and the walk
// still reads what gjson reads, through the containers the index lacks
// (end reads them again). Before, `[0],` repeated gave 16 bytes of index
// per 4 of body (and `[],` 16 per 3), for every request the body budget
// admitted at once.
func TestContainerNotesBounded(t *testing.T) {
	var nested strings.Builder
	for i := range 300 {
		fmt.Fprintf(&nested, `{"a":[%d,{"b":[[%d]]}],"c":{}},`, i, i)
	}
	for _, doc := range []string{
		`[` + strings.Repeat(`[],{},`, 20000) + `[[0]]]`,
		`[` + strings.Repeat(`[0],`, 30000) + `{"k":[1,2,{"z":[]}]}]`,
		`{"x":[` + nested.String() + `{}],"tail":{"m":[1,[2,[3]]]}}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"tools":[{"parameters":{"enum":[` +
			strings.Repeat(`[1],`, 5000) + `[]]}}]}`,
	} {
		var d Doc
		d.Reset(doc)
		if d.Scan(MaxNesting) != OK {
			t.Fatalf("%s: not scanned", clip(doc))
		}
		if max := max(minOpens, len(doc)/16); len(d.opens) > max {
			t.Fatalf("%d container notes for a %d-byte document, want at most %d", len(d.opens), len(doc), max)
		}
		scanAgrees(t, doc)
		walkBoth(t, doc)
	}
}
