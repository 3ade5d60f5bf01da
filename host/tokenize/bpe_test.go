package tokenize

import (
	"slices"
	"strings"
	"testing"

	loader "github.com/pkoukk/tiktoken-go-loader"
)

// The counter gives tiktoken's own token ids, not just the same number, on
// a corpus of ordinary and awkward text, for both vocabularies. Inputs are
// kept short enough for tiktoken's quadratic merge.
func TestMatchesTiktoken(t *testing.T) {
	corpus := []string{
		"hello world",
		"tiktoken is great!",
		"antidisestablishmentarianism",
		"<|endoftext|> and <|fim_prefix|>",
		strings.Repeat("The quick brown fox jumps over the lazy dog. ", 20),
		"I'm sure they'll say it's fine; we've done it, haven't we? DON'T SHOUT'S",
		"お誕生日おめでとう、日本語のテキストです。中文字符和한국어 텍스트",
		"🙂🚀∑≈ж é\u00e9 e\u0301 \t\tindented\r\n\r\n  trailing   \n",
		"func main() {\n\tfor i := 0; i < 10; i++ {\n\t\tfmt.Println(i)\n\t}\n}\n",
		`{"id": 12345678901, "values": [1.5, 2.25, 3.125], "ok": true, "path": "/usr/local/bin"}`,
		"SGVsbG8gd29ybGQhIFRoaXMgaXMgYmFzZTY0IGVuY29kZWQgdGV4dC4gQUJDREVGR0hJSktMTU5PUA==",
		strings.Repeat("x", 3000),
		strings.Repeat(" ", 2000) + "x",
		strings.Repeat("ab", 1500),
		strings.Repeat("7", 1000),
		strings.Repeat("!?", 700),
		strings.Repeat("\n", 500),
		"bad utf-8: \xff\xfe\xc3 and \xe2\x82 end",
		"ALLCAPSWORDS AndMixedCase camelCaseIdentifier snake_case_identifier",
	}
	for _, name := range []string{CL100K, O200K} {
		e, err := Get(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, text := range corpus {
			want := tk(t, e).EncodeOrdinary(text)
			var got []int
			n := e.bpe.encode(text, func(id int) { got = append(got, id) }, nil)
			if !slices.Equal(got, want) || n != len(want) {
				t.Errorf("%s %.40q: %d ids %v…, tiktoken %d ids %v…", name, text, n, head(got), len(want), head(want))
			}
		}
	}
}

func head(ids []int) []int { return ids[:min(len(ids), 8)] }

// A megabyte of one character — one regex piece, the worst case of a
// quadratic merge (about 1,400 s of CPU before) — is counted with work
// linear in its size: fewer than 6 heap operations per byte (n initial pushes and
// two per merge, each popped at most once; each O(log n)), fewer merges than
// bytes, one piece. Counted operations, not time.
func TestLinearWorkOnLongRuns(t *testing.T) {
	const size = 1 << 20
	// The other shapes at a quarter of the size: the bound is per byte, and
	// the race detector makes regexp2 slow.
	for _, tc := range []struct{ name, text string }{
		{CL100K, strings.Repeat("x", size)},
		{CL100K, strings.Repeat(" ", size/4)},
		{O200K, strings.Repeat("ab", size/8)},
	} {
		name, text, size := tc.name, tc.text, len(tc.text)
		e, err := Get(name)
		if err != nil {
			t.Fatal(err)
		}
		var st workStats
		n := e.bpe.encode(text, nil, &st)
		if n <= 0 || n > size {
			t.Errorf("%s %q×%d: %d tokens", name, text[:1], size, n)
		}
		if st.heapOps >= 6*size || st.merges >= size || st.pieces != 1 {
			t.Errorf("%s %q×%d: %d heap ops, %d merges, %d pieces; want < %d, < %d, 1",
				name, text[:2], size, st.heapOps, st.merges, st.pieces, 6*size, size)
		}
		if got := e.Count(text); got != n {
			t.Errorf("Count = %d, encode = %d", got, n)
		}
	}
}

// TestEmbeddedRanksMatchTheLoader: the streaming reader of the embedded
// vocabularies gives tiktoken-go-loader's maps, entry for entry.
func TestEmbeddedRanksMatchTheLoader(t *testing.T) {
	for _, name := range []string{CL100K, O200K} {
		got, err := embeddedRanks{}.LoadTiktokenBpe(rankFile(name))
		if err != nil {
			t.Fatal(err)
		}
		want, err := loader.NewOfflineLoader().LoadTiktokenBpe(rankFile(name))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) || len(got) != rankSizes[name] {
			t.Fatalf("%s: %d ranks, the loader %d, sized for %d", name, len(got), len(want), rankSizes[name])
		}
		for k, v := range want {
			if g, ok := got[k]; !ok || g != v {
				t.Fatalf("%s: token %q rank %d, want %d", name, k, g, v)
			}
		}
	}
	if _, err := (embeddedRanks{}).LoadTiktokenBpe(rankFile("no_such_base")); err == nil {
		t.Fatal("a missing vocabulary loaded")
	}
}

// BenchmarkLoadRanks is the first count's vocabulary load: the streaming
// reader against tiktoken-go-loader's.
func BenchmarkLoadRanks(b *testing.B) {
	for _, l := range []struct {
		name string
		l    interface {
			LoadTiktokenBpe(string) (map[string]int, error)
		}
	}{{"embedded", embeddedRanks{}}, {"loader", loader.NewOfflineLoader()}} {
		b.Run(l.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := l.l.LoadTiktokenBpe(rankFile(CL100K)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
