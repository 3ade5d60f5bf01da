package websearch

import (
	_ "embed"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"sync"
	"unicode"
)

// The demo search engine: a small local index of the project's own
// documentation (README.md and docs/*.md cut into sections), embedded in
// the module, so a `web` request works with no network and no key. Its
// results are clearly labelled: titles end in "(demo search engine)" and
// URLs are on the reserved-looking switchyard.demo domains. The index is
// generated from the docs by `go generate ./plugins/web/...`
// (internal/gendemo) and committed; it is a copy taken at that time.
//
//go:generate go run ../internal/gendemo -root ../../.. -out demo_index.json
//go:embed demo_index.json
var demoIndexJSON []byte

type demoDoc struct {
	Result
	terms map[string]int // term → count, title terms counted thrice
	size  int
}

var demo struct {
	once sync.Once
	docs []demoDoc
	df   map[string]int
	avg  float64 // mean document size, in terms
}

// DemoSuffix marks every demo result's title.
const DemoSuffix = " (demo search engine)"

func loadDemo() {
	var rs []Result
	if err := json.Unmarshal(demoIndexJSON, &rs); err != nil {
		panic("web: demo index is corrupt: " + err.Error()) // a build defect, caught by the tests
	}
	demo.df = map[string]int{}
	for _, r := range rs {
		d := demoDoc{Result: r, terms: map[string]int{}}
		for _, t := range terms(r.Content) {
			d.terms[t]++
			d.size++
		}
		for _, t := range terms(r.Title) {
			d.terms[t] += 3
			d.size += 3
		}
		for t := range d.terms {
			demo.df[t]++
		}
		demo.docs = append(demo.docs, d)
		demo.avg += float64(d.size)
	}
	demo.avg /= max1(float64(len(demo.docs)))
}

// demoSearch ranks the index by BM25 against the query's terms.
func demoSearch(query string, include, exclude []string, max int) []Result {
	demo.once.Do(loadDemo)
	q := terms(query)
	if len(q) == 0 {
		return nil
	}
	n := float64(len(demo.docs))
	idf := make([]float64, len(q))
	for i, t := range q {
		df := float64(demo.df[t])
		idf[i] = math.Log(1 + (n-df+0.5)/(df+0.5))
	}
	type hit struct {
		i     int
		score float64
	}
	var hits []hit
	for i, d := range demo.docs {
		s := 0.0
		for j, t := range q {
			tf := float64(d.terms[t])
			if tf == 0 {
				continue
			}
			s += idf[j] * tf * 2.2 / (tf + 1.2*(0.25+0.75*float64(d.size)/demo.avg))
		}
		if s > 0 {
			hits = append(hits, hit{i, s})
		}
	}
	// Generic sort, not sort.Slice: its reflection-based swaps cost
	// milliseconds inside a Go guest. Ties keep the index order.
	slices.SortFunc(hits, func(a, b hit) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		return a.i - b.i
	})
	var out []Result
	for _, h := range hits {
		r := demo.docs[h.i].Result
		if !Allowed(r.URL, include, exclude) {
			continue
		}
		r.Title += DemoSuffix
		out = append(out, r)
		if len(out) == max {
			break
		}
	}
	return out
}

func max1(f float64) float64 { return math.Max(f, 1) }

// stop words carry no signal in a search of technical docs.
var stop = map[string]bool{
	"the": true, "and": true, "for": true, "are": true, "but": true, "not": true, "you": true, "all": true,
	"can": true, "her": true, "was": true, "one": true, "our": true, "out": true, "how": true, "what": true,
	"when": true, "does": true, "with": true, "this": true, "that": true, "from": true, "have": true, "its": true,
	"into": true, "about": true, "which": true, "there": true, "their": true, "will": true, "your": true,
	"is": true, "it": true, "of": true, "to": true, "in": true, "on": true, "by": true, "or": true, "as": true,
	"an": true, "be": true, "at": true, "do": true, "if": true, "me": true, "my": true, "we": true, "so": true,
	"switchyard": true, // every document is about it
	"tell":       true, "use": true, "used": true, "using": true, "explain": true, "please": true,
}

// terms are the lowercased words of s (letters and digits), without stop
// words, crudely stemmed so "routing", "routes" and "route" meet.
func terms(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if len(w) < 2 || stop[w] {
			continue
		}
		out = append(out, stem(w))
	}
	return out
}

// stem drops the commonest English endings: -ing, -ed, a plural -s, a
// final -e.
func stem(w string) string {
	switch {
	case len(w) > 5 && strings.HasSuffix(w, "ing"):
		w = w[:len(w)-3]
	case len(w) > 4 && strings.HasSuffix(w, "ed"):
		w = w[:len(w)-2]
	case len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss"):
		w = w[:len(w)-1]
	}
	if len(w) > 3 && strings.HasSuffix(w, "e") {
		w = w[:len(w)-1]
	}
	return w
}
