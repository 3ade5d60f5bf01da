package usage

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzClean: whatever a client sends in an attribution header, the value
// recorded is valid UTF-8 without control characters, within its bound.
func FuzzClean(f *testing.F) {
	for _, s := range []string{"https://myapp.example", "<b>x</b>\x00\n\r", strings.Repeat("é", 100), "\xff\xfe ok", " padded "} {
		f.Add(s, 16)
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		n = max(0, min(n, 1024))
		out := clean(s, n)
		if len(out) > n || !utf8.ValidString(out) || strings.ContainsFunc(out, unicode.IsControl) || out != strings.TrimSpace(out) {
			t.Fatalf("clean(%q, %d) = %q", s, n, out)
		}
	})
}
