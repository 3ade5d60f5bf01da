package sdk

import (
	"strings"

	"github.com/tidwall/gjson"
)

// Quote returns s as a JSON string literal.
func Quote(s string) string { return string(AppendJSONString(nil, s)) }

// ContentText flattens a unified message content — a string, or an array
// of parts — to its text: text parts joined by newlines, other parts
// (images, audio) left out. Adapters for providers that take one string use
// it.
func ContentText(c gjson.Result) string {
	if c.Type == gjson.String {
		return c.Str
	}
	var parts []string
	c.ForEach(func(_, p gjson.Result) bool {
		if p.Get("type").Str == "text" {
			parts = append(parts, p.Get("text").Str)
		}
		return true
	})
	return strings.Join(parts, "\n")
}

// DataURL splits a base64 data URL ("data:image/png;base64,AAAA") into its
// media type and data; ok is false for any other URL.
func DataURL(url string) (mediaType, data string, ok bool) {
	rest, ok := strings.CutPrefix(url, "data:")
	if !ok {
		return "", "", false
	}
	mediaType, data, ok = strings.Cut(rest, ";base64,")
	return mediaType, data, ok
}
