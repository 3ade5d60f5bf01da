package fetch

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"unicode"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/switchyard/switchyard/host/anchor"
)

// The evaluation set (testdata/eval, README.md there says where each page
// comes from): pages shaped like MediaWiki articles, news stories,
// documentation, blog posts, forum threads and shop product pages, each
// with its main content marked data-eval="main" (and what is chrome inside
// it data-eval="chrome"): the gold. The module's Markdown and the anchor's
// — Mozilla Readability with turndown (examples/clients/node/webfetch) —
// are scored against the gold and against each other, per category, on
// the dev split and on the held-out split (never tuned on).

var evalCategories = []string{"wiki", "news", "docs", "blog", "forum", "shop"}

type evalPage struct {
	id, split, category, url string
	html                     []byte
}

func loadEval(t testing.TB) []evalPage {
	t.Helper()
	var pages []evalPage
	for _, split := range []string{"dev", "heldout"} {
		files, err := filepath.Glob(filepath.Join("testdata", "eval", split, "*.html"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no pages in testdata/eval/%s: %v", split, err)
		}
		sort.Strings(files)
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			name := strings.TrimSuffix(filepath.Base(f), ".html")
			cat, _, _ := strings.Cut(name, "-")
			pages = append(pages, evalPage{id: split + "/" + name, split: split, category: cat, url: "https://" + cat + ".example/" + name, html: b})
		}
	}
	return pages
}

// goldText is the text of the page's data-eval="main" element without its
// data-eval="chrome" parts, scripts and styles.
func goldText(t testing.TB, page []byte) string {
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	var main *html.Node
	walk(doc, func(n *html.Node) bool {
		if main == nil && n.Type == html.ElementNode && hasAttrVal(n, "data-eval", "main") {
			main = n
		}
		return main == nil
	})
	if main == nil {
		t.Fatal("a page without data-eval=\"main\"")
	}
	var b strings.Builder
	walk(main, func(n *html.Node) bool {
		switch {
		case n.Type == html.TextNode:
			b.WriteString(n.Data)
			b.WriteByte(' ')
		case n.Type == html.ElementNode && (hasAttrVal(n, "data-eval", "chrome") || n.DataAtom == atom.Script || n.DataAtom == atom.Style):
			return false
		}
		return true
	})
	return b.String()
}

func hasAttrVal(n *html.Node, k, v string) bool {
	for _, a := range n.Attr {
		if a.Key == k && a.Val == v {
			return true
		}
	}
	return false
}

// mdLink matches a Markdown link's or image's target, which is not text a
// reader reads; words drops it (and <br />) before counting.
var mdLink = regexp.MustCompile(`\]\([^)]*\)|<br ?/?>`)

// words is the multiset of a text's words: runs of letters and digits,
// lower-cased.
func words(s string) map[string]int {
	s = mdLink.ReplaceAllString(s, "] ")
	m := map[string]int{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		m[w]++
	}
	return m
}

func size(m map[string]int) int {
	n := 0
	for _, c := range m {
		n += c
	}
	return n
}

// overlap is how many words of a are in b, with multiplicity.
func overlap(a, b map[string]int) int {
	n := 0
	for w, c := range a {
		n += min(c, b[w])
	}
	return n
}

type anchorOut struct {
	ID       string `json:"id"`
	Title    string `json:"title"`
	Markdown string `json:"markdown"`
	Error    string `json:"error"`
}

// runReadability runs the anchor over the pages; why says why it could not.
func runReadability(t testing.TB, pages []evalPage) (map[string]anchorOut, string) {
	var in []any
	for _, p := range pages {
		in = append(in, map[string]string{"id": p.id, "url": p.url, "html": string(p.html)})
	}
	res, why, err := anchor.Run[anchorOut](filepath.Join("..", "..", "..", "examples", "clients", "node", "webfetch"), "anchor.mjs",
		[]string{"@mozilla/readability", "linkedom", "turndown", "turndown-plugin-gfm"}, in)
	if err != nil {
		t.Fatalf("Readability anchor: %v", err)
	}
	return res, why
}

// evalTally sums one category's words: gold, ours, ours in gold, the
// anchor's, the anchor's in gold (ancGold and ancMain count the same, one
// per page), and ours among the anchor's main-content words.
type evalTally struct {
	pages                                                int
	gold, ours, oursGold, anc, ancGold, ancMain, oursAnc int
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// TestEvalSet prints, per split and category, the module's recall of the
// gold's words and its clutter (its words not in the gold), the same for
// Readability + turndown, and how much of the anchor's content the module
// keeps; and holds the module to the anchor on the held-out split.
func TestEvalSet(t *testing.T) {
	pages := loadEval(t)
	anchor, why := runReadability(t, pages)
	if why != "" {
		t.Logf("the anchor is skipped: %s", why)
	}
	tallies := map[string]map[string]*evalTally{"dev": {}, "heldout": {}}
	for _, p := range pages {
		_, md, err := Markdown(p.html, p.url)
		if err != nil {
			t.Fatalf("%s: %v", p.id, err)
		}
		gold, ours := words(goldText(t, p.html)), words(md)
		tl := tallies[p.split][p.category]
		if tl == nil {
			tl = &evalTally{}
			tallies[p.split][p.category] = tl
		}
		tl.pages++
		tl.gold += size(gold)
		tl.ours += size(ours)
		tl.oursGold += overlap(ours, gold)
		if a, ok := anchor[p.id]; ok {
			anc := words(a.Markdown)
			tl.anc += size(anc)
			tl.ancGold += overlap(anc, gold)
			// The anchor's main content: its words that are the gold's
			// (it keeps some chrome too: "[edit]", "32 languages", a
			// table it could not convert as raw HTML tags).
			ancMain := map[string]int{}
			for w, c := range anc {
				if g := min(c, gold[w]); g > 0 {
					ancMain[w] = g
				}
			}
			tl.ancMain += size(ancMain)
			tl.oursAnc += overlap(ancMain, ours)
		}
		if testing.Verbose() && os.Getenv("EVAL_SHOW") != "" {
			fmt.Printf("=== %s (ours)\n%s\n=== %s (anchor)\n%s\n", p.id, md, p.id, anchor[p.id].Markdown)
		}
	}
	fmt.Println("web-fetch on its evaluation set (plugins/web-fetch/fetch/testdata/eval): words of the marked main content kept (recall) and words outside it (clutter), beside Mozilla Readability 0.6 + turndown 7.2 on the same pages")
	for _, split := range []string{"dev", "heldout"} {
		fmt.Printf("%s split:\n  %-6s %5s  %11s %11s  %11s %11s  %15s\n", split, "", "pages", "recall", "clutter", "anchor rec.", "anchor clut.", "of anchor's")
		var all evalTally
		for _, c := range evalCategories {
			tl := tallies[split][c]
			if tl == nil {
				continue
			}
			printTally(c, tl, anchor != nil)
			all.pages += tl.pages
			all.gold += tl.gold
			all.ours += tl.ours
			all.oursGold += tl.oursGold
			all.anc += tl.anc
			all.ancGold += tl.ancGold
			all.ancMain += tl.ancMain
			all.oursAnc += tl.oursAnc
		}
		printTally("all", &all, anchor != nil)
		if split == "heldout" {
			fmt.Println("held-out split held to: recall ≥ 0.95, clutter ≤ 0.25; with the anchor: ours keeps ≥ 0.95 of its main-content words, clutter at most 0.05 above its")
			if r := ratio(all.oursGold, all.gold); r < 0.95 {
				t.Errorf("held-out recall %.3f < 0.95", r)
			}
			if c := 1 - ratio(all.oursGold, all.ours); c > 0.25 {
				t.Errorf("held-out clutter %.3f > 0.25", c)
			}
			if anchor != nil {
				if k := ratio(all.oursAnc, all.ancMain); k < 0.95 {
					t.Errorf("held-out: ours keeps %.3f of Readability's main-content words < 0.95", k)
				}
				if c, ac := 1-ratio(all.oursGold, all.ours), 1-ratio(all.ancGold, all.anc); c > ac+0.05 {
					t.Errorf("held-out clutter %.3f > Readability's %.3f + 0.05", c, ac)
				}
			}
		}
	}
}

func printTally(name string, tl *evalTally, withAnchor bool) {
	fmt.Printf("  %-6s %5d  %11.3f %11.3f", name, tl.pages, ratio(tl.oursGold, tl.gold), 1-ratio(tl.oursGold, tl.ours))
	if withAnchor {
		fmt.Printf("  %11.3f %11.3f  %15.3f", ratio(tl.ancGold, tl.gold), 1-ratio(tl.ancGold, tl.anc), ratio(tl.oursAnc, tl.ancMain))
	}
	fmt.Println()
}
