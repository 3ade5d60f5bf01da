package jsonwalk

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// corpus holds documents whose every object and array the walker must read
// as gjson does: escapes in keys and strings, all value types, whitespace
// everywhere JSON allows it, a request and an upstream answer.
var corpus = []string{
	`{"a\"b":"c\\\"","e":[1,-2.5e3,true,false,null,{"x":[[],{}]}],"u":"\u00e9\ud83d\ude00","":"","\\":[ ]}`,
	`[ 1 , "a" , { "b" : [ ] } ]`, strings.Repeat(`[{"a":`, 150) + "1" + strings.Repeat("}]", 150), "[] ", " 7 ", `"s"`, `{}`, `[]`, "{\n\t\"k\" :\r\n \"v\"\n}",
	`{"long":"` + strings.Repeat("a", 40) + `\\","q":"` + strings.Repeat("b", 40) + `\"c\\\"d","k` + strings.Repeat("\\", 20) + `":[` + strings.Repeat(`"\\",`, 3) + `"\u0022"]}`,
	`{"model":"openai/gpt-4o","messages":[{"role":"system","content":"Be brief.\nAnswer in \"French\"."},` +
		`{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}],` +
		`"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"x":{"type":"integer"}}}}}],` +
		`"temperature":0.2,"max_tokens":1e3,"stream":false,"provider":{"order":["a","b"],"allow_fallbacks":true}}`,
	`{"id":"chatcmpl-1","object":"chat.completion","created":1763856000,"model":"gpt-4o-mini","choices":[{"index":0,` +
		`"message":{"role":"assistant","content":"hello\u00e9\n","refusal":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}}]},` +
		`"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":250,"completion_tokens":20,"total_tokens":270,"prompt_tokens_details":{"cached_tokens":0}}}`,
}

func TestWalkMatchesGjson(t *testing.T) {
	for _, doc := range corpus {
		if !gjson.Valid(doc) {
			t.Fatalf("corpus document is not JSON: %s", doc)
		}
		walkBoth(t, doc)
		withFewNotes(func() { walkBoth(t, doc) })
	}
}

func TestIndexDepth(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		max  int
		want bool
	}{
		{`[[[]]]`, 3, true},
		{`[[[]]]`, 2, false},
		{`{"a":"[[[["}`, 1, true}, // brackets inside strings do not nest
		{`{"a":"\"[[["}`, 1, true},
		{strings.Repeat("[", 129), 128, false},
		{strings.Repeat("[", 500) + strings.Repeat("]", 500), MaxNesting, true}, // past the first 128, on the heap
	} {
		var d Doc
		d.Reset(tc.doc)
		if got := d.Index(tc.max); got != tc.want {
			t.Errorf("Index(%d) of %s = %v, want %v", tc.max, tc.doc, got, tc.want)
		}
	}
}

func FuzzWalk(f *testing.F) {
	for _, doc := range corpus {
		f.Add(doc)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		if gjson.Valid(doc) {
			walkBoth(t, doc)
			withFewNotes(func() { walkBoth(t, doc) })
		}
	})
}

// walkBoth indexes doc and compares the walker with gjson on it.
func walkBoth(t *testing.T, doc string) {
	t.Helper()
	var d Doc
	d.Reset(doc)
	if !d.Index(MaxNesting) {
		if len(doc) > MaxNesting { // nested past the bound: refused, as it should be
			return
		}
		t.Fatal("Index refused a valid document")
	}
	mine := d.Root()
	compareWalk(t, &d, mine, gjson.Parse(mine.Raw)) // gjson's root Raw keeps trailing spaces
}

func compareWalk(t *testing.T, d *Doc, mine, theirs gjson.Result) {
	t.Helper()
	if mine.Raw != theirs.Raw || mine.Type != theirs.Type {
		t.Fatalf("walker %q (%v), gjson %q (%v)", clip(mine.Raw), mine.Type, clip(theirs.Raw), theirs.Type)
	}
	if !theirs.IsObject() && !theirs.IsArray() {
		return
	}
	type kv struct {
		key string
		v   gjson.Result
	}
	var want, got []kv
	theirs.ForEach(func(k, x gjson.Result) bool {
		want = append(want, kv{k.Str, x})
		return true
	})
	if mine.IsObject() {
		d.Members(mine, func(k string, x gjson.Result) bool { got = append(got, kv{k, x}); return true })
	} else {
		d.Elements(mine, func(_ int, x gjson.Result) bool { got = append(got, kv{"", x}); return true })
	}
	if len(got) != len(want) {
		t.Fatalf("%s: walker saw %d members, gjson %d", clip(mine.Raw), len(got), len(want))
	}
	if n := d.Count(mine); n != len(want) {
		t.Fatalf("%s: Count %d, gjson %d", clip(mine.Raw), n, len(want))
	}
	for i := range want {
		w, g := want[i], got[i]
		if g.key != w.key || (w.v.Type == gjson.String && Text(g.v) != w.v.Str) || (w.v.Type == gjson.Number && g.v.Num != w.v.Num) {
			t.Fatalf("member %d: walker %q=%+v, gjson %q=%+v", i, g.key, g.v, w.key, w.v)
		}
		if mine.IsObject() {
			// Get is the first member of that name, as gjson's path is.
			if mg, tg := d.Get(mine, w.key), theirs.Get(gjson.Escape(w.key)); mg.Raw != tg.Raw {
				t.Fatalf("Get(%q): walker %q, gjson %q", w.key, clip(mg.Raw), clip(tg.Raw))
			}
		}
		compareWalk(t, d, g.v, w.v)
	}
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// TestValid: what gjson.Valid says, except that nesting past MaxNesting is
// refused — and a document of ten million "[" is answered, not a stack
// overflow (gjson.Valid alone kills the process on it).
func TestValid(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for _, tc := range []struct {
		name string
		doc  string
		want bool
	}{
		{"object", `{"a":[1,{"b":"[[["}]}`, true},
		{"brackets in strings do not nest", `["` + strings.Repeat("[", 20000) + `"]`, true},
		{"escaped quote", `["\"[[[", 1]`, true},
		{"invalid", `{"a":}`, false},
		{"at the bound", deep(MaxNesting), true},
		{"past the bound", deep(MaxNesting + 1), false},
		{"ten million open", strings.Repeat("[", 10_000_000), false},
		{"stray closer first", `]` + strings.Repeat("[", 20), false},
	} {
		if got := Valid(tc.doc); got != tc.want {
			t.Errorf("%s: Valid = %v, want %v", tc.name, got, tc.want)
		}
		if got := ValidBytes([]byte(tc.doc)); got != tc.want {
			t.Errorf("%s: ValidBytes = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func FuzzValid(f *testing.F) {
	for _, doc := range corpus {
		f.Add(doc)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		if len(doc) > MaxNesting { // below the bound, they agree
			return
		}
		if Valid(doc) != gjson.Valid(doc) {
			t.Fatalf("Valid(%q) = %v, gjson.Valid %v", doc, Valid(doc), gjson.Valid(doc))
		}
	})
}

// BenchmarkValid is the check of an upstream answer (1 KB, a long content
// string): the nesting counted first, then gjson's check, against gjson's
// check alone.
func BenchmarkValid(b *testing.B) {
	doc := `{"id":"chatcmpl-1","object":"chat.completion","created":1763856000,"model":"gpt-4o-mini","choices":[{"index":0,` +
		`"message":{"role":"assistant","content":"` + strings.Repeat("lorem ipsum ", 70) + `","refusal":null},` +
		`"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":250,"completion_tokens":20,"total_tokens":270}}`
	for _, bc := range []struct {
		name string
		fn   func(string) bool
	}{{"jsonwalk", Valid}, {"gjson", gjson.Valid}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			b.ReportAllocs()
			for b.Loop() {
				if !bc.fn(doc) {
					b.Fatal("invalid")
				}
			}
		})
	}
}

// near finds what slices.BinarySearch finds, from any starting entry.
func TestNear(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		xs := make([]int32, rng.IntN(40))
		for i := range xs {
			xs[i] = int32(rng.IntN(100))
		}
		slices.Sort(xs)
		xs = slices.Compact(xs)
		p, k := rng.IntN(110)-5, rng.IntN(len(xs)+1)
		wi, wf := slices.BinarySearch(xs, int32(p))
		if gi, gf := near(xs, k, p); gi != wi || gf != wf {
			t.Fatalf("near(%v, %d, %d) = %d %v, want %d %v", xs, k, p, gi, gf, wi, wf)
		}
	}
}
