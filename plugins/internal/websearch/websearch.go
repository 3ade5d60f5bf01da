// Package websearch is what the three adapters share for native web search
// (the `native` engine of the web plugin, docs/web-search.md): whether a
// unified request asks for it, with which options, and the url_citation
// annotation every adapter normalises its provider's citations into.
//
// The contract with the web plugin is the unified request itself: native
// search is on when the request carries `web_search_options` (an object,
// OpenAI's field) or keeps a plugins item {"id": "web", "engine":
// "native"} that is not disabled. The web plugin leaves both in the body
// for the adapter; the adapters read nothing else.
package websearch

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/switchyard/switchyard/sdk"
	"github.com/tidwall/gjson"
)

// Options of one request's native search.
type Options struct {
	// MaxUses caps searches per turn (0: the provider's default); only
	// Anthropic takes it.
	MaxUses int64
	// Include and Exclude are the web plugin's include_domains and
	// exclude_domains.
	Include, Exclude []string
	// Location is the user's approximate location as the web plugin writes
	// it: {"type":"approximate","city","region","country","timezone"}
	// (raw JSON; empty when not given).
	Location string
	// ContextSize is web_search_options.search_context_size, if any.
	ContextSize string
}

// Requested reports whether the unified request req asks for native
// search, and its options.
func Requested(req gjson.Result) (Options, bool) {
	var o Options
	on := false
	req.Get("plugins").ForEach(func(_, p gjson.Result) bool {
		if p.Get("id").Str != "web" || p.Get("engine").Str != "native" {
			return true
		}
		if e := p.Get("enabled"); e.Exists() && !e.Bool() {
			return true
		}
		on = true
		o.MaxUses = p.Get("max_uses").Int()
		o.Include = strs(p.Get("include_domains"))
		o.Exclude = strs(p.Get("exclude_domains"))
		if l := p.Get("user_location"); l.IsObject() {
			o.Location = l.Raw
		}
		return false
	})
	if w := req.Get("web_search_options"); w.IsObject() {
		on = true
		o.ContextSize = w.Get("search_context_size").Str
		if l := w.Get("user_location"); o.Location == "" && l.IsObject() {
			o.Location = flatLocation(l)
		}
	}
	return o, on
}

func strs(v gjson.Result) []string {
	var out []string
	v.ForEach(func(_, s gjson.Result) bool {
		if s.Type == gjson.String && s.Str != "" {
			out = append(out, s.Str)
		}
		return true
	})
	return out
}

// flatLocation turns OpenAI's {"type":"approximate","approximate":{…}}
// into the web plugin's flat form.
func flatLocation(l gjson.Result) string {
	a := l.Get("approximate")
	if !a.IsObject() {
		return l.Raw
	}
	var b strings.Builder
	b.WriteString(`{"type":"approximate"`)
	for _, k := range []string{"city", "region", "country", "timezone"} {
		if v := a.Get(k); v.Type == gjson.String {
			b.WriteString(`,"` + k + `":` + v.Raw)
		}
	}
	b.WriteByte('}')
	return b.String()
}

// LocationFields returns the members of the flat location other than type,
// as `"k":v` pairs, in a fixed order.
func LocationFields(loc string) []string {
	var out []string
	l := gjson.Parse(loc)
	for _, k := range []string{"city", "region", "country", "timezone"} {
		if v := l.Get(k); v.Type == gjson.String {
			out = append(out, `"`+k+`":`+v.Raw)
		}
	}
	return out
}

// Domain turns a web plugin domain filter into a bare host with an
// optional path, as providers take them: no scheme, and a leading "*."
// dropped (providers include subdomains on their own, so the bare domain
// is what a wildcard means to them).
func Domain(d string) string {
	d = strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(d), "https://"), "http://")
	return strings.TrimPrefix(d, "*.")
}

// Annotation is one url_citation annotation in the chat format:
// {"type":"url_citation","url_citation":{url, title, content, start_index,
// end_index}}. Indices count Unicode code points of the message content
// (start inclusive, end exclusive); content is the cited text or snippet
// and is left out when the provider gives none.
func Annotation(url, title, content string, start, end int) string {
	var b strings.Builder
	b.WriteString(`{"type":"url_citation","url_citation":{"url":`)
	b.WriteString(sdk.Quote(url))
	b.WriteString(`,"title":`)
	b.WriteString(sdk.Quote(title))
	if content != "" {
		b.WriteString(`,"content":`)
		b.WriteString(sdk.Quote(content))
	}
	b.WriteString(`,"start_index":` + strconv.Itoa(start) + `,"end_index":` + strconv.Itoa(end) + `}}`)
	return b.String()
}

// Runes is the length of s in code points, the unit of annotation indices.
func Runes(s string) int { return utf8.RuneCountInString(s) }

// RuneIndex converts byte offset i of s into a code point offset (clamped
// to s).
func RuneIndex(s string, i int) int {
	if i > len(s) {
		i = len(s)
	}
	if i < 0 {
		i = 0
	}
	return utf8.RuneCountInString(s[:i])
}
