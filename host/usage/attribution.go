package usage

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Bounds of the attribution a generation records: the headers are the
// client's word, so each is cut to a size that keeps the record small.
const (
	maxReferer    = 512
	maxTitle      = 128
	maxCategory   = 64
	maxCategories = 10
)

// AttributionOf reads OpenRouter's app-attribution headers (openrouter.ai
// docs, "App Attribution"): HTTP-Referer, X-OpenRouter-Title (X-Title, its
// older name, when it is absent) and X-OpenRouter-Categories (a
// comma-separated list). Values are cleaned to printable text and cut to
// their bounds; nothing is refused, since a header a client sends by
// default must not fail its request.
//
// header is the request's header getter.
func AttributionOf(header func(name string) string) Attribution {
	a := Attribution{Referer: clean(header("HTTP-Referer"), maxReferer)}
	title := header("X-OpenRouter-Title")
	if strings.TrimSpace(title) == "" {
		title = header("X-Title")
	}
	a.Title = clean(title, maxTitle)
	for _, cat := range strings.Split(header("X-OpenRouter-Categories"), ",") {
		if len(a.Categories) == maxCategories {
			break
		}
		if cat = clean(cat, maxCategory); cat != "" {
			a.Categories = append(a.Categories, cat)
		}
	}
	return a
}

// clean is s without control characters or invalid UTF-8, trimmed, and
// cut to at most n bytes on a character boundary.
func clean(s string, n int) string {
	if s == "" {
		return ""
	}
	var b strings.Builder
	for _, r := range s {
		if r == utf8.RuneError || unicode.IsControl(r) {
			continue
		}
		if b.Len()+utf8.RuneLen(r) > n {
			break
		}
		b.WriteRune(r)
	}
	return strings.TrimSpace(b.String())
}
