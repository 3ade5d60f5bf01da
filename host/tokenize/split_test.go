package tokenize

import (
	"math/rand/v2"
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

var splitters = map[string]func(string, int) int{CL100K: cl100kPiece, O200K: o200kPiece}

func splitPieces(name, text string) []string {
	var out []string
	for i := 0; i < len(text); {
		j := splitters[name](text, i)
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
	"Привет, мир! 2024", "HELLOworld helloWorld HTTPServer iPhone McDonald's DON'T", "ǅemo ǈ Lt", "a/b//c\n/", " //\n", "x\u0300\u0301 \u0300a \u0300 ",
	"ʰʲ modifier ﾟ", "日本語ABCdef", "'s 'S x's X'S Xs's", "emoji 👍🏽 and 🇬🇧", "\u2028line\u2029sep", "ℌ ℍ ½ ¼ ٣٤٥", "x\u0301y", "a\u200bb", "\u0085next", "\v\f vertical",
	"func main() {\n\tfmt.Println(\"hi\")\n}\n", "    indented code\n        more", "https://example.com/a?b=c&d=e#f", "<|endoftext|>",
	strings.Repeat("the build failed because ", 20), "a\r\rb\r\n\r\nc", " \t\n\t x", "'sup 'Sup", "1,000,000.50", "$100 €200 ¥300",
}

// The hand-written splitters find exactly regexp2's pieces of their
// patterns.
func TestSplitMatchesRegex(t *testing.T) {
	for name := range splitters {
		for _, text := range splitCorpus {
			want := regexPieces(t, patterns[name], text)
			got := splitPieces(name, text)
			if strings.Join(got, "|") != strings.Join(want, "|") || len(got) != len(want) {
				t.Errorf("%s %q:\n got %q\nwant %q", name, text, got, want)
			}
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
		for name := range splitters {
			want := regexPieces(t, patterns[name], text)
			got := splitPieces(name, text)
			if len(got) != len(want) || strings.Join(got, "\x00") != strings.Join(want, "\x00") {
				t.Fatalf("%s %q:\n got %q\nwant %q", name, text, got, want)
			}
		}
	})
}

// BenchmarkCount is counting prose, the request path's tokenizer work (a
// small-context model's prompt; stream checkpoints), both vocabularies,
// hand-written splitters.
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

// palette are characters of every class the patterns tell apart: ASCII
// letters of both cases, a titlecase, a modifier and an other letter,
// combining marks, numbers of three kinds, white space of several kinds,
// the apostrophe and the letters of the contractions, slashes, symbols.
var palette = []rune{'a', 'A', 's', 'S', 't', 'r', 'e', 'v', 'l', 'L', 'm', 'd', 'D', '\'', ' ', ' ', '\n', '\r', '\t', '\v', '/', ',', '.', '1', '9',
	'٣', 'Ⅻ', '½', 'ǅ', 'ʰ', '日', 'ﾟ', '\u0301', '\u0903', '\u20dd', '\u00a0', '\u2028', '\u0085', 'é', 'É', 'ß', 'ſ', 'K', '😀', '$', '_', '-'}

func paletteText(b []byte) string {
	rs := make([]rune, len(b))
	for i, c := range b {
		rs[i] = palette[int(c)%len(palette)]
	}
	return string(rs)
}

// Random strings over the palette: every class next to every other, the
// cases where a greedy run gives characters back.
func TestSplitMatchesRegexPalette(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		b := make([]byte, 1+rng.IntN(24))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		text := paletteText(b)
		for name := range splitters {
			want := regexPieces(t, patterns[name], text)
			if got := splitPieces(name, text); strings.Join(got, "\x00") != strings.Join(want, "\x00") {
				t.Fatalf("%s %q:\n got %q\nwant %q", name, text, got, want)
			}
		}
	}
}

func FuzzSplitPalette(f *testing.F) {
	f.Add([]byte("hello"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 256 {
			return
		}
		text := paletteText(b)
		for name := range splitters {
			want := regexPieces(t, patterns[name], text)
			if got := splitPieces(name, text); strings.Join(got, "\x00") != strings.Join(want, "\x00") {
				t.Fatalf("%s %q:\n got %q\nwant %q", name, text, got, want)
			}
		}
	})
}
