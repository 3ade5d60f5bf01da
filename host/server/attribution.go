package server

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
	"github.com/switchyard/switchyard/host/usage"
)

// Bounds of the attribution a generation records: the headers are the
// client's word, so each is cut to a size that keeps the record small.
const (
	maxReferer    = 512
	maxTitle      = 128
	maxCategory   = 64
	maxCategories = 10
)

// attribution reads OpenRouter's app-attribution headers (openrouter.ai
// docs, "App Attribution"): HTTP-Referer, X-OpenRouter-Title (X-Title, its
// older name, when it is absent) and X-OpenRouter-Categories (a
// comma-separated list). Values are cleaned to printable text and cut to
// their bounds; nothing is refused, since a header a client sends by
// default must not fail its request.
func attribution(c *fiber.Ctx) usage.Attribution {
	a := usage.Attribution{Referer: clean(c.Get("HTTP-Referer"), maxReferer)}
	title := c.Get("X-OpenRouter-Title")
	if strings.TrimSpace(title) == "" {
		title = c.Get("X-Title")
	}
	a.Title = clean(title, maxTitle)
	for _, cat := range strings.Split(c.Get("X-OpenRouter-Categories"), ",") {
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
