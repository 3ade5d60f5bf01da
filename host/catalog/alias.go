package catalog

import (
	"sort"
	"strings"
)

// Resolve returns the catalog id a request's model names: the id itself
// when it is a model, the target of an alias (aliases map bare names such as
// gpt-4o-mini, which OpenAI's SDKs send, to ids), or "" when neither.
func (c *Catalog) Resolve(id string) string {
	if _, ok := c.Models[id]; ok {
		return id
	}
	if to, ok := c.Aliases[id]; ok {
		if _, ok := c.Models[to]; ok {
			return to
		}
	}
	return ""
}

// Suggest lists up to n catalog ids close to an unknown model name, closest
// first, for the error message: ids whose model name (after the vendor)
// starts with the name, then ids within a small edit distance of
// the name or of the whole id. Aliases count as the ids they resolve to.
func (c *Catalog) Suggest(id string, n int) []string {
	q := strings.ToLower(id)
	qName := q[strings.IndexByte(q, '/')+1:]
	type hit struct {
		id   string
		dist int
	}
	best := map[string]int{}
	consider := func(name, target string) {
		name = strings.ToLower(name)
		short := name[strings.IndexByte(name, '/')+1:]
		d := min(editDistance(q, name), editDistance(qName, short))
		if strings.HasPrefix(short, qName) {
			d = min(d, 1)
		}
		// A match must share most of the name: at most a third of it
		// edited (and never more than 4 edits), so "x" suggests nothing.
		if limit := min(4, max(1, len(qName)/3)); d > limit {
			return
		}
		if old, ok := best[target]; !ok || d < old {
			best[target] = d
		}
	}
	for mid := range c.Models {
		consider(mid, mid)
	}
	for a, to := range c.Aliases {
		if _, ok := c.Models[to]; ok {
			consider(a, to)
		}
	}
	hits := make([]hit, 0, len(best))
	for k, d := range best {
		hits = append(hits, hit{k, d})
	}
	sort.Slice(hits, func(i, j int) bool {
		if hits[i].dist != hits[j].dist {
			return hits[i].dist < hits[j].dist
		}
		return hits[i].id < hits[j].id
	})
	out := make([]string, 0, n)
	for _, h := range hits {
		if len(out) == n {
			break
		}
		out = append(out, h.id)
	}
	return out
}

// editDistance is the Levenshtein distance of a and b in bytes (model ids
// are ASCII), with one row of memory.
func editDistance(a, b string) int {
	if len(a) > 256 || len(b) > 256 {
		return max(len(a), len(b)) // a name that long matches nothing
	}
	var rowBuf [257]int
	row := rowBuf[:len(b)+1]
	for j := range row {
		row[j] = j
	}
	for i := 1; i <= len(a); i++ {
		prev := row[0]
		row[0] = i
		for j := 1; j <= len(b); j++ {
			cur := row[j]
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			row[j] = min(row[j]+1, row[j-1]+1, prev+cost)
			prev = cur
		}
	}
	return row[len(b)]
}
