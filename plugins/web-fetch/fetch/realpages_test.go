package fetch

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/switchyard/switchyard/sdk"
	"github.com/tidwall/gjson"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/unicode"
)

// servedPage is one response of pageServer.
type servedPage struct {
	contentType string
	body        []byte
}

// pageServer serves pages by path over loopback and returns an Env whose
// HTTP function reaches it whatever the URL's host, as the host's http
// function reaches the web.
func pageServer(t *testing.T, pages map[string]servedPage) *Env {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		p, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(rw, r)
			return
		}
		rw.Header()["Content-Type"] = []string{p.contentType}
		rw.Write(p.body)
	}))
	t.Cleanup(srv.Close)
	addr := srv.Listener.Addr().String()
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}}
	return &Env{
		Now: func() time.Time { return time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC) },
		HTTP: func(method, url, _ string, _ []byte) (int, string, []byte, error) {
			resp, err := client.Get(url)
			if err != nil {
				return 0, "", nil, err
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			return resp.StatusCode, "Content-Type: " + resp.Header.Get("Content-Type"), b, err
		},
	}
}

func encode(t *testing.T, e encoding.Encoding, s string) []byte {
	t.Helper()
	b, err := e.NewEncoder().Bytes([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCharsets: a page decodes to the text a browser shows whether its
// charset is in the Content-Type header, only in a <meta> (either form),
// or in a byte-order mark; a page that declares nothing and is UTF-8 stays
// UTF-8. Before x/net/html/charset, a <meta>-only windows-1252 page came
// out as "Na\uFFFDve caf\uFFFD" and Shift_JIS and windows-1251 pages as
// replacement characters.
func TestCharsets(t *testing.T) {
	const text = "Naïve café — “quoted”"
	cases := []struct {
		name, contentType string
		body              []byte
		want              string
	}{
		{"windows-1252 in meta charset only", "text/html",
			encode(t, charmap.Windows1252, `<html><head><meta charset="windows-1252"><title>Café</title></head><body><p>`+text+`</p></body></html>`), text},
		{"iso-8859-1 in meta http-equiv only", "text/html",
			encode(t, charmap.Windows1252, `<html><head><meta http-equiv="Content-Type" content="text/html; charset=iso-8859-1"></head><body><p>Crème brûlée à la carte</p></body></html>`), "Crème brûlée à la carte"},
		{"shift_jis in meta only", "text/html",
			encode(t, japanese.ShiftJIS, `<html><head><meta charset="shift_jis"></head><body><p>日本語のページです。</p></body></html>`), "日本語のページです。"},
		{"windows-1251 in the header only", "text/html; charset=windows-1251",
			encode(t, charmap.Windows1251, `<html><body><p>Привет, мир</p></body></html>`), "Привет, мир"},
		{"the header wins over a wrong meta", "text/html; charset=utf-8",
			[]byte(`<html><head><meta charset="iso-8859-1"></head><body><p>` + text + `</p></body></html>`), text},
		{"undeclared UTF-8 stays UTF-8", "text/html",
			[]byte(`<html><body><p>` + text + `</p></body></html>`), text},
		{"UTF-16 with a byte-order mark", "text/html",
			encode(t, unicode.UTF16(unicode.LittleEndian, unicode.UseBOM), `<html><body><p>`+text+`</p></body></html>`), text},
		{"plain text in the header's charset", "text/plain; charset=iso-8859-15",
			encode(t, charmap.ISO8859_15, "Prix : 5 €"), "Prix : 5 €"},
	}
	pages := map[string]servedPage{}
	for i, c := range cases {
		pages["/"+string(rune('a'+i))] = servedPage{c.contentType, c.body}
	}
	env := pageServer(t, pages)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := env.Fetch(Options{}, "http://charsets.example/"+string(rune('a'+i)))
			if r.Status != StatusCompleted {
				t.Fatalf("status %s: %s", r.Status, r.Error)
			}
			if !strings.Contains(r.Content, c.want) || strings.ContainsRune(r.Content, '\uFFFD') {
				t.Errorf("content %q, want it to hold %q", r.Content, c.want)
			}
		})
	}
}

// mediaWikiPage is the shape of a MediaWiki (Wikipedia) article as the
// Vector skin serves it: the jump links, the heading with its [edit]
// link, citation markers, a navbox, the table of contents, a maintenance
// banner and the category links, around content that quotes HTML.
const mediaWikiPage = `<!DOCTYPE html><html><head><title>HTML element - Wikipedia</title></head><body>
<a class="mw-jump-link" href="#mw-head">Jump to navigation</a> <a class="mw-jump-link" href="#searchInput">Jump to search</a>
<div id="mw-page-base" class="noprint"></div>
<div id="content" class="mw-body" role="main">
<div class="mw-indicators"></div>
<h1 id="firstHeading" class="firstHeading">HTML element</h1>
<div id="bodyContent" class="vector-body">
<div id="siteSub" class="noprint">From Wikipedia, the free encyclopedia</div>
<div id="contentSub"></div>
<div id="mw-content-text" class="mw-body-content"><div class="mw-parser-output">
<table class="box-More_citations_needed plainlinks metadata ambox ambox-content"><tr><td>This article needs additional citations for verification.</td></tr></table>
<p>An <b>HTML element</b> is written with a start tag such as &lt;p&gt; and an end tag such as &lt;/p&gt;.<sup id="cite_ref-1" class="reference"><a href="#cite_note-1">[1]</a></sup> To show a literal less-than sign, a page writes &amp;lt;.</p>
<div id="toc" class="toc" role="navigation"><div class="toctitle"><h2>Contents</h2></div><ul><li><a href="#Syntax">1 Syntax</a></li></ul></div>
<h2><span class="mw-headline" id="Syntax">Syntax</span><span class="mw-editsection"><span class="mw-editsection-bracket">[</span><a href="/w/index.php?title=HTML_element&amp;action=edit&amp;section=1" title="Edit section: Syntax">edit</a><span class="mw-editsection-bracket">]</span></span></h2>
<p>Elements nest: <a href="/wiki/Document_Object_Model" title="Document Object Model">the DOM</a> is their tree. <a id="void">Void elements</a> have no end tag.</p>
<div role="navigation" class="navbox" aria-labelledby="HTML"><table class="nowraplinks"><tr><th>HTML NAVBOX-NOISE</th><td><a href="/wiki/HTML5">HTML5</a> · <a href="/wiki/XHTML">XHTML</a></td></tr></table></div>
</div></div>
<div class="printfooter">Retrieved from "https://en.wikipedia.org/w/index.php?title=HTML_element"</div>
<div id="catlinks" class="catlinks">Categories: <a href="/wiki/Category:HTML">HTML</a></div>
</div></div></body></html>`

// TestMarkdownShapes: what a reader of the Markdown would notice on
// ordinary pages. Each case lists text that must be in it and text that
// must not.
func TestMarkdownShapes(t *testing.T) {
	cases := []struct {
		name    string
		page    string
		want    []string
		notWant []string
	}{
		{"MediaWiki article", mediaWikiPage,
			[]string{"# HTML element", "## Syntax", "start tag such as <p> and an end tag such as </p>.", "writes &lt;.",
				"[the DOM](https://en.wikipedia.org/wiki/Document_Object_Model", "Void elements have no end tag"},
			[]string{"Jump to", "[edit]", "edit]", "NAVBOX", "Categories:", "Contents", "needs additional citations",
				"From Wikipedia", "Retrieved from", "[1]", "&lt;p&gt;", "&amp;"}},
		{"entities decoded once", `<html><body><main><p>if a &lt; b &amp;&amp; c &gt; d</p><p>Write &amp;amp; for &amp;.</p><pre><code>x &lt; y &amp;&amp; "&amp;lt;"</code></pre></main></body></html>`,
			[]string{"if a < b && c > d", "Write &amp; for &.", `x < y && "&lt;"`},
			[]string{"&lt; b", "&gt; d"}},
		{"anchors without href are text", `<html><body><main><p><a name="top">Top</a> of <a id="s1">section one</a>, <a href="#s1">back</a>, <a href="javascript:void(0)">menu</a>, <a href="/next">next</a>.</p></main></body></html>`,
			[]string{"Top of section one, back, menu, [next](https://site.example/next)."},
			[]string{"](https://site.example/page)", "[Top]", "[back]", "javascript"}},
		{"table cells holding paragraphs and lists", `<html><body><main><table><tr><th>Name</th><th>Notes</th></tr>
<tr><td><p>Alpha</p><p>Second paragraph</p></td><td><p>One</p><ul><li>first</li><li>second</li></ul></td></tr>
<tr><td><div>Beta</div></td><td><h3>Heading in a cell</h3><hr><p>after the rule</p></td></tr></table></main></body></html>`,
			[]string{"| Name | Notes |", "| Alpha<br />Second paragraph | One<br />• first<br />• second |", "| Beta | Heading in a cell<br />after the rule |"},
			[]string{"NameNotes", "AlphaSecond", "paragraphOne"}},
		{"a layout table inside a cell keeps its cells apart", `<html><body><main><table><tr><th>Item</th><th>Detail</th></tr>
<tr><td>Kit</td><td><table><tr><td>Weight</td><td>2 kg</td></tr><tr><td>Size</td><td>M</td></tr></table></td></tr></table></main></body></html>`,
			[]string{"| Kit | Weight | 2 kg<br />Size | M |"},
			[]string{"Weight2 kg", "2 kgSize"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u := "https://site.example/page"
			if strings.Contains(c.page, "Wikipedia") {
				u = "https://en.wikipedia.org/wiki/HTML_element"
			}
			_, md, err := Markdown([]byte(c.page), u)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range c.want {
				if !strings.Contains(md, w) {
					t.Errorf("missing %q in\n%s", w, md)
				}
			}
			for _, w := range c.notWant {
				if strings.Contains(md, w) {
					t.Errorf("has %q in\n%s", w, md)
				}
			}
		})
	}
}

// longArticle is an article of n paragraphs, each a complete sentence that
// ends "(paragraph i)."; about 120 bytes a paragraph.
func longArticle(n int) []byte {
	var b strings.Builder
	b.WriteString(`<html><head><title>Long read</title></head><body><main><h1>Long read</h1>`)
	for i := range n {
		b.WriteString("<p>Sentence of the long article, which goes on for a while to make the page large (paragraph " + strconv.Itoa(i) + ").</p>\n")
	}
	b.WriteString("</main></body></html>")
	return []byte(b.String())
}

// TestPreRequestFitsContext: with the plugin form, the pages fetched are
// cut so that the request still fits the model's context (ctx.context,
// the largest context it may be routed to) with room for the answer; the
// cut ends at a paragraph and is marked, and service_metadata says so.
// Before, the whole page went in and a small-context model answered 400.
func TestPreRequestFitsContext(t *testing.T) {
	env := pageServer(t, map[string]servedPage{
		"/long":  {"text/html", longArticle(2000)}, // ~60K tokens by the 4-bytes estimate
		"/short": {"text/html", longArticle(3)},
	})
	m := &Module{Env: env}
	cases := []struct {
		name      string
		context   string // ctx.context, "" for none
		maxTokens int
		urls      string
		wantCut   int // pages cut to fit
		leftOut   bool
	}{
		{"no context known: the page whole", "", 0, "http://x.example/long", 0, false},
		{"8K context: cut to fit", `{"max_context":8192,"max_output":4096}`, 0, "http://x.example/long", 1, false},
		{"8K context and max_tokens 6000: less room", `{"max_context":8192}`, 6000, "http://x.example/long", 1, false},
		{"a short page is not cut for a long one", `{"max_context":8192}`, 0, "http://x.example/short http://x.example/long", 1, false},
		{"a large context takes the page whole", `{"max_context":1000000}`, 0, "http://x.example/long", 0, false},
		{"no room left at all", `{"max_context":1000}`, 900, "http://x.example/long", 1, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := `{"config":{"id":"web-fetch"},"model":"m"`
			if c.context != "" {
				ctx += `,"context":` + c.context
			}
			ctx += "}"
			body := `{"model":"m","messages":[{"role":"user","content":"Summarise ` + c.urls + `"}]`
			if c.maxTokens > 0 {
				body += `,"max_tokens":` + strconv.Itoa(c.maxTokens)
			}
			body += "}"
			out, err := sdk.Run(m.PreRequest, []byte(ctx), []byte(body))
			if err != nil {
				t.Fatal(err)
			}
			inj := gjson.GetBytes(out[1], "messages.0.content").Str
			sum := gjson.ParseBytes(out[2])
			if got := int(sum.Get("data.fitted_to_context").Int()); got != c.wantCut {
				t.Fatalf("fitted_to_context %d, want %d: %s", got, c.wantCut, out[2])
			}
			if strings.Contains(c.urls, "short") && !strings.Contains(inj, "(paragraph 2).\n</page>") {
				t.Errorf("the short page was cut:\n%.400s", inj)
			}
			if c.wantCut == 0 {
				if !strings.Contains(inj, "(paragraph 1999).") || strings.Contains(inj, "fit the model's context") {
					t.Errorf("the page was cut without need")
				}
				return
			}
			if !strings.Contains(sum.Get("summary").Str, "cut to fit the model's context") {
				t.Errorf("summary %q does not say the page was cut", sum.Get("summary").Str)
			}
			if c.leftOut {
				if !strings.Contains(inj, "content left out: the model's context has no room left") {
					t.Errorf("not marked as left out:\n%.300s", inj)
				}
				return
			}
			// The cut ends a paragraph and is marked.
			if !strings.Contains(inj, ").\n\n[… content truncated to fit the model's context]\n</page>") {
				t.Errorf("the cut does not end a paragraph with the mark:\n…%s", inj[max(0, len(inj)-300):])
			}
			// What the model gets, with room for its answer, fits the
			// context (tokens estimated as the module counts them).
			window := gjson.Get(c.context, "max_context").Int()
			answer := int64(c.maxTokens)
			if answer == 0 {
				answer = min(4096, window/4)
			}
			if n := int64(env.tokens("m", string(out[1]))); n+answer > window {
				t.Errorf("prompt of %d tokens + %d for the answer > context %d", n, answer, window)
			}
			if n := int64(env.tokens("m", string(out[1]))); n+answer < window*8/10 {
				t.Errorf("prompt of %d tokens + %d for the answer leaves much of the context %d unused", n, answer, window)
			}
		})
	}
}

// FuzzMarkdown: any bytes convert without a panic to valid UTF-8 with no
// private-use marker of literalAngles left over, and a cut of the result
// (cutBlock) is a prefix of it.
func FuzzMarkdown(f *testing.F) {
	for _, s := range []string{articlePage, mediaWikiPage, string(longArticle(5)),
		`<table><tr><td><p>a</p><table><tr><td><ul><li>x</li></ul></td></tr></table></td></tr></table>`,
		`<a name=x><a href="#y">z</a></a><p>&lt;&amp;lt;&gt;` + "\uE000\uE001" + `</p>`,
		"<meta charset=shift_jis><p>\x93\xfa\x96\x7b</p>"} {
		f.Add([]byte(s), 40)
	}
	f.Fuzz(func(t *testing.T, page []byte, n int) {
		if len(page) > 64<<10 {
			return
		}
		text, ok := decode(page, "", true)
		if !ok {
			return
		}
		if !utf8.ValidString(text) {
			t.Fatalf("decode gave invalid UTF-8")
		}
		_, md, err := Markdown([]byte(text), "https://fuzz.example/p")
		if err != nil {
			return
		}
		if !utf8.ValidString(md) || strings.ContainsAny(md, ltMark+gtMark) {
			t.Fatalf("invalid output %q", md)
		}
		if c := cutBlock(md, max(n, 0)); !strings.HasPrefix(md, c) || len(c) > max(n, 0) && len(c) != len(md) {
			t.Fatalf("cutBlock(%d) = %q", n, c)
		}
	})
}
