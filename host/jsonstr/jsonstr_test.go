package jsonstr_test

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/switchyard/switchyard/host/jsonstr"
)

// reference is what encoding/json writes for s with HTML escaping off.
func reference(t testing.TB, s string) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})
}

// check asserts the encoding of s is valid JSON and UTF-8, decodes to what
// encoding/json's encoding decodes to, and is byte for byte encoding/json's
// (HTML escaping off).
func check(t testing.TB, s string) {
	t.Helper()
	got := jsonstr.Append([]byte("x"), s)[1:]
	if !json.Valid(got) || !utf8.Valid(got) {
		t.Fatalf("%q: invalid output %q", s, got)
	}
	want := reference(t, s)
	if !bytes.Equal(got, want) {
		t.Fatalf("%q: got %s, encoding/json writes %s", s, got, want)
	}
	var back, ref string
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	m, _ := json.Marshal(s)
	if err := json.Unmarshal(m, &ref); err != nil || back != ref {
		t.Fatalf("%q decodes to %q, json.Marshal's to %q", s, back, ref)
	}
	if q := jsonstr.Quote(s); q != string(got) {
		t.Fatalf("Quote %s, Append %s", q, got)
	}
	if b := jsonstr.AppendBytes(nil, []byte(s)); !bytes.Equal(b, got) {
		t.Fatalf("AppendBytes %s, Append %s", b, got)
	}
}

var cases = []struct{ in, out string }{
	{"", `""`},
	{"plain text", `"plain text"`},
	{`quote " backslash \ slash /`, `"quote \" backslash \\ slash /"`},
	{"\b\f\n\r\t", `"\b\f\n\r\t"`},
	{"\x00\x01\a\x1b\x1f", `"\u0000\u0001\u0007\u001b\u001f"`},
	{"del \x7f stays", "\"del \x7f stays\""},
	{"bad \xff\xfe byte", `"bad \ufffd\ufffd byte"`},
	{"cut rune \xe2\x82", `"cut rune \ufffd\ufffd"`},
	{"surrogate \xed\xa0\x80", `"surrogate \ufffd\ufffd\ufffd"`},
	{"html <a href='x'>&</a>", `"html <a href='x'>&</a>"`},
	{"line\u2028para\u2029end", `"line\u2028para\u2029end"`},
	{"flags 🇳🇴 🏴󠁧󠁢󠁥󠁮󠁧󠁿 é 日本", `"flags 🇳🇴 🏴󠁧󠁢󠁥󠁮󠁧󠁿 é 日本"`},
	{"\uFFFD itself", `"` + "\uFFFD" + ` itself"`},
}

func TestAppend(t *testing.T) {
	for _, tc := range cases {
		got := jsonstr.Append(nil, tc.in)
		if string(got) != tc.out {
			t.Errorf("%q: got %s, want %s", tc.in, got, tc.out)
		}
		check(t, tc.in)
	}
	// What strconv.Quote writes for the same texts is not JSON: the reason
	// for this package.
	for _, s := range []string{"\a", "\x1b", "\x7f", "\xff", "🏴󠁧󠁢󠁥󠁮󠁧󠁿"} {
		if json.Valid([]byte(strconv.Quote(s))) {
			t.Errorf("strconv.Quote(%q) is valid JSON after all", s)
		}
	}
	// Appends to what dst holds.
	if got := string(jsonstr.Append([]byte(`{"a":`), "b")); got != `{"a":"b"` {
		t.Errorf("got %s", got)
	}
}

func FuzzAppend(f *testing.F) {
	for _, tc := range cases {
		f.Add(tc.in)
	}
	f.Add(strings.Repeat("\x80", 5))
	f.Add("\xf4\x90\x80\x80") // beyond U+10FFFF
	f.Fuzz(func(t *testing.T, s string) { check(t, s) })
}

func BenchmarkAppend(b *testing.B) {
	for _, bc := range []struct{ name, s string }{
		{"ascii", strings.Repeat("The quick brown fox jumps over the lazy dog. ", 40)},
		{"escapes", strings.Repeat("line \"one\"\n\ttab\\ ", 100)},
		{"unicode", strings.Repeat("Příliš žluťoučký kůň úpěl ďábelské ódy 日本語 ", 40)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.s)))
			buf := make([]byte, 0, 4*len(bc.s))
			for b.Loop() {
				buf = jsonstr.Append(buf[:0], bc.s)
			}
		})
	}
}
