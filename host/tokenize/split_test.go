package tokenize

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// regexPieces are the pieces regexp2 finds with pattern in valid text, as
// byte ranges' contents.
func regexPieces(t testing.TB, pattern, text string) []string {
	re := regexp2.MustCompile(pattern, regexp2.None)
	runes := []rune(text)
	var out []string
	m, _ := re.FindStringMatch(text)
	for m != nil {
		out = append(out, string(runes[m.Index:m.Index+m.Length]))
		m, _ = re.FindNextMatch(m)
	}
	return out
}

func splitPieces(text string) []string {
	var out []string
	for i := 0; i < len(text); {
		j := cl100kPiece(text, i)
		if j <= i {
			panic("no progress at " + text[i:])
		}
		out = append(out, text[i:j])
		i = j
	}
	return out
}

var splitCorpus = []string{
	"", "a", " ", "  ", "\n", "\r\n", " \n ", "\n\n\n", "a \n b", "hello world", "Hello, World!", "It's what we've done, I'm sure they'll",
	"'S 'T 'RE 'Ve 'M 'LL 'D 'x 'r 'l 'll'", "don't", "'", "''", "' s", "123", "12345", "1234567 89", "a1b2c3", "x=1+2;", "  leading",
	"trailing  ", "tabs\t\tand\tspaces  \t", "  \n  \n  x", " ,;", " ...\n\n", "((a))", "\u00a0nbsp\u00a0 x", "é café naïve", "日本語のテキスト",
	"Привет, мир! 2024", "emoji 👍🏽 and 🇬🇧", "\u2028line\u2029sep", "ℌ ℍ ½ ¼ ٣٤٥", "x\u0301y", "a\u200bb", "\u0085next", "\v\f vertical",
	"func main() {\n\tfmt.Println(\"hi\")\n}\n", "    indented code\n        more", "https://example.com/a?b=c&d=e#f", "<|endoftext|>",
	strings.Repeat("the build failed because ", 20), "a\r\rb\r\n\r\nc", " \t\n\t x", "'sup 'Sup", "1,000,000.50", "$100 €200 ¥300",
}

// The hand-written splitter finds exactly regexp2's pieces of cl100k's
// pattern.
func TestSplitMatchesRegex(t *testing.T) {
	for _, text := range splitCorpus {
		want := regexPieces(t, patterns[CL100K], text)
		got := splitPieces(text)
		if strings.Join(got, "|") != strings.Join(want, "|") || len(got) != len(want) {
			t.Errorf("%q:\n got %q\nwant %q", text, got, want)
		}
	}
}

func FuzzSplit(f *testing.F) {
	for _, text := range splitCorpus {
		f.Add(text)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if !utf8.ValidString(text) || len(text) > 4096 {
			return
		}
		want := regexPieces(t, patterns[CL100K], text)
		got := splitPieces(text)
		if len(got) != len(want) || strings.Join(got, "\x00") != strings.Join(want, "\x00") {
			t.Fatalf("%q:\n got %q\nwant %q", text, got, want)
		}
	})
}

// BenchmarkCount is counting prose, the request path's tokenizer work (a
// small-context model's prompt; stream checkpoints): cl100k through the
// hand-written splitter, o200k through regexp2.
func BenchmarkCount(b *testing.B) {
	text := strings.Repeat("The build failed because the handler returns an error when the request body is empty, so we check the length first. ", 90)
	for _, name := range []string{CL100K, O200K} {
		e, err := Get(name)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				e.Count(text)
			}
		})
	}
}
