package jsonwalk

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

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
		}
	})
}

func BenchmarkScan(b *testing.B) {
	doc := `{"messages":[` + strings.Repeat(`{"role":"tool","content":"`+strings.Repeat("the build failed because ", 60)+`"},`, 80) + `{"role":"user","content":"x"}]}`
	b.Run("Scan", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		var d Doc
		for b.Loop() {
			d.Reset(doc)
			d.Scan(MaxNesting)
		}
	})
	b.Run("Index+gjson.Valid", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		var d Doc
		for b.Loop() {
			d.Reset(doc)
			d.Index(MaxNesting)
			gjson.Valid(doc)
		}
	})
}
