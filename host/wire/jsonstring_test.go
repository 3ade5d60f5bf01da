package wire

import (
	"encoding/json"
	"testing"
)

// appendJSONString writes what encoding/json writes, for the plain ids it
// copies and for everything it hands to json.Marshal.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "gen-1764012345-abc", "openai/gpt-4o-mini", `a"b`, `a\b`, "<&>", "tab\there", "é", "\u2028", "\xff", "\x7f", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := appendJSONString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Fatalf("appendJSONString(%q) = %s, json.Marshal %s", s, got[1:], want)
		}
	})
}
