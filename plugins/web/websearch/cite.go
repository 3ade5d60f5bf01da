package websearch

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Annotations: every result the answer drew on becomes a url_citation
//
//	{"type":"url_citation","url_citation":{"url","title","content","start_index","end_index"}}
//
// on the message (choices[].message.annotations, or in a stream the
// delta.annotations of the chunk that finishes the choice). Offsets count
// Unicode code points of the message content and end_index is exclusive:
// content[start_index:end_index] (Python) is the cited span. Where the
// model cited a result inline — a Markdown link to its URL, as the injected
// prompt asks, or the bare URL — the span is that link. A result the model
// did not cite inline is still a source of the answer (it was in the
// prompt): its annotation spans the whole content.

// span is one inline citation of result k, in code points of the scanned
// text; bend is its end in bytes.
type span struct{ k, start, end, bend int }

// urlByte reports whether c continues a URL, so a match of
// https://a.com/x inside https://a.com/xy is not a citation of the former.
func urlByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		strings.IndexByte("/_-?#=&%+~", c) >= 0
}

// scan finds the inline citations of rs in text, in order.
func scan(text string, rs []Result) []span {
	var out []span
	for k, r := range rs {
		u := strings.TrimSuffix(r.URL, "/")
		if u == "" {
			continue
		}
		for off := 0; ; {
			i := strings.Index(text[off:], u)
			if i < 0 {
				break
			}
			b := off + i
			e := b + len(u)
			off = e
			if e < len(text) && text[e] == '/' {
				e++
			}
			if e < len(text) && urlByte(text[e]) {
				continue // a longer URL
			}
			start, end := b, e
			if b >= 2 && text[b-2:b] == "](" && e < len(text) && text[e] == ')' {
				if l := strings.LastIndexByte(text[:b-2], '['); l >= 0 && !strings.ContainsAny(text[l:b-2], "\n") {
					start, end = l, e+1
				}
			}
			cs := utf8.RuneCountInString(text[:start])
			out = append(out, span{k, cs, cs + utf8.RuneCountInString(text[start:end]), end})
		}
	}
	slices.SortFunc(out, func(a, b span) int { return a.start - b.start })
	return out
}

// appendAnnotations writes the annotations (JSON objects, comma-separated
// after any already in dst) for spans and, spanning [0, n), every result
// not cited in spans.
func appendAnnotations(dst []byte, rs []Result, spans []span, n int) []byte {
	cited := make([]bool, len(rs))
	one := func(k, start, end int) {
		if len(dst) > 0 && dst[len(dst)-1] != '[' {
			dst = append(dst, ',')
		}
		r := rs[k]
		dst = append(dst, `{"type":"url_citation","url_citation":{"url":`...)
		dst = appendString(dst, r.URL)
		dst = append(dst, `,"title":`...)
		dst = appendString(dst, r.Title)
		dst = append(dst, `,"content":`...)
		dst = appendString(dst, r.Content)
		dst = append(dst, `,"start_index":`...)
		dst = strconv.AppendInt(dst, int64(start), 10)
		dst = append(dst, `,"end_index":`...)
		dst = strconv.AppendInt(dst, int64(end), 10)
		dst = append(dst, `}}`...)
	}
	for _, s := range spans {
		cited[s.k] = true
		one(s.k, s.start, s.end)
	}
	for k := range rs {
		if !cited[k] {
			one(k, 0, n)
		}
	}
	return dst
}

// Annotations is the JSON array of url_citation annotations of an answer
// whose message content is content.
func Annotations(content string, rs []Result) []byte {
	return append(appendAnnotations([]byte{'['}, rs, scan(content, rs), utf8.RuneCountInString(content)), ']')
}
