// Command gendemo builds the demo search engine's index
// (plugins/web/websearch/demo_index.json) from the project's README.md and
// docs/*.md: one entry per section, with a demo URL, the heading as title
// and the section's text (whole: it is ranked on; results are cut to 1000
// bytes), Markdown markup and code blocks removed.
package main

import (
	"encoding/json"
	"flag"
	"log"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

func main() {
	root := flag.String("root", ".", "repository root")
	out := flag.String("out", "demo_index.json", "output file")
	flag.Parse()
	files, _ := filepath.Glob(filepath.Join(*root, "docs", "*.md"))
	sort.Strings(files)
	files = append([]string{filepath.Join(*root, "README.md")}, files...)
	type entry struct {
		URL     string `json:"url"`
		Title   string `json:"title"`
		Content string `json:"content"`
	}
	var all []entry
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			log.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(f), ".md")
		base := "https://docs.switchyard.demo/" + name
		if name == "README" {
			base = "https://switchyard.demo/"
		}
		for _, s := range sections(string(b)) {
			text := plain(s.body)
			if len(text) < 80 {
				continue
			}
			url := base
			if s.anchor != "" {
				url += "#" + s.anchor
			}
			all = append(all, entry{URL: url, Title: s.title, Content: text})
		}
	}
	b, err := json.MarshalIndent(all, "", " ")
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, append(b, '\n'), 0o644); err != nil {
		log.Fatal(err)
	}
	log.Printf("%d entries from %d files", len(all), len(files))
}

type section struct{ title, anchor, body string }

// sections cuts a Markdown document at its #, ## and ### headings (outside
// code fences).
func sections(doc string) []section {
	var out []section
	cur := section{}
	var body strings.Builder
	fence := false
	flush := func() {
		cur.body = body.String()
		if cur.title != "" {
			out = append(out, cur)
		}
		body.Reset()
	}
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fence = !fence
			continue
		}
		if fence {
			continue // code says little to a reader of search results
		}
		if h, raw, ok := heading(line); ok {
			flush()
			cur = section{title: h, anchor: anchor(raw)}
			continue
		}
		body.WriteString(line)
		body.WriteByte('\n')
	}
	flush()
	return out
}

// heading is a heading line's text, plain and as written.
func heading(line string) (text, raw string, ok bool) {
	for _, p := range []string{"### ", "## ", "# "} {
		if strings.HasPrefix(line, p) {
			raw = strings.TrimSpace(strings.TrimPrefix(line, p))
			return plain(raw), raw, true
		}
	}
	return "", "", false
}

var nonAnchor = regexp.MustCompile(`[^a-z0-9 _-]`)

// anchor is GitHub's heading anchor: lowercase, punctuation dropped, spaces
// as dashes.
func anchor(h string) string {
	return strings.ReplaceAll(nonAnchor.ReplaceAllString(strings.ToLower(h), ""), " ", "-")
}

var (
	link     = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	markup   = regexp.MustCompile("[*`>|]+")
	rule     = regexp.MustCompile(`(?m)^[\s|:-]+$`)
	spaces   = regexp.MustCompile(`\s+`)
	htmlTags = regexp.MustCompile(`<[^>]+>`)
)

// plain turns Markdown into running text.
func plain(s string) string {
	s = link.ReplaceAllString(s, "$1")
	s = htmlTags.ReplaceAllString(s, "")
	s = rule.ReplaceAllString(s, "")
	s = markup.ReplaceAllString(s, " ")
	return strings.TrimSpace(spaces.ReplaceAllString(s, " "))
}
