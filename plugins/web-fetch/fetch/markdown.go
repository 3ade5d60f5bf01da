package fetch

import (
	"bytes"
	"strings"

	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/base"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/commonmark"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/table"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// The conversion is html-to-markdown (a maintained HTML→Markdown converter
// built on golang.org/x/net/html, pure Go, so it builds for wasip1) with its
// CommonMark and table plugins: 1.1 MB of the module's 5.9 MB, measured
// against a build with golang.org/x/net/html alone. What it does not do is
// decide which part of a page is the page: that is mainContent below, which
// runs on the parsed tree first.

var conv = converter.NewConverter(converter.WithPlugins(
	base.NewBasePlugin(),
	commonmark.NewCommonmarkPlugin(),
	// Minimal padding: aligned columns cost the model tokens and add nothing.
	table.NewTablePlugin(table.WithCellPaddingBehavior(table.CellPaddingBehaviorMinimal), table.WithSkipEmptyRows(true)),
))

// noise are elements that never carry the page's content: code, styling,
// embedded objects, forms and the site's chrome (navigation, banners,
// footers, sidebars).
var noise = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true,
	atom.Iframe: true, atom.Object: true, atom.Embed: true, atom.Svg: true, atom.Canvas: true,
	atom.Form: true, atom.Button: true, atom.Select: true, atom.Input: true, atom.Textarea: true,
	atom.Nav: true, atom.Header: true, atom.Footer: true, atom.Aside: true, atom.Dialog: true,
	atom.Link: true, atom.Meta: true,
}

// noiseRoles are ARIA landmark roles of the same chrome, for sites built of divs.
var noiseRoles = map[string]bool{
	"navigation": true, "banner": true, "contentinfo": true, "complementary": true,
	"search": true, "dialog": true, "alertdialog": true, "menu": true, "menubar": true,
}

// noiseWords in a class or id mark chrome on sites that use neither
// landmarks nor roles. Matched against whole hyphen/underscore/space
// separated words, so "navbar" matches but "canvas" does not.
var noiseWords = map[string]bool{
	"nav": true, "navbar": true, "navigation": true, "menu": true, "sidebar": true,
	"breadcrumb": true, "breadcrumbs": true, "cookie": true, "cookies": true, "banner": true,
	"footer": true, "header": true, "masthead": true, "share": true, "social": true,
	"advert": true, "ads": true, "ad": true, "promo": true, "newsletter": true, "popup": true,
	"modal": true, "skip": true,
}

// Markdown converts an HTML page to readable Markdown: the page's title and
// its main content with headings, lists, links (made absolute against
// pageURL), tables and code kept, and scripts, styles, navigation, headers,
// footers, sidebars and forms dropped.
func Markdown(page []byte, pageURL string) (title, md string, err error) {
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		return "", "", err
	}
	title = findTitle(doc)
	root := mainContent(doc)
	strip(root)
	out, err := conv.ConvertNode(root, converter.WithDomain(pageURL))
	if err != nil {
		return title, "", err
	}
	return title, strings.TrimSpace(string(out)), nil
}

func findTitle(doc *html.Node) string {
	var t, h1 string
	walk(doc, func(n *html.Node) bool {
		if n.Type != html.ElementNode {
			return true
		}
		switch n.DataAtom {
		case atom.Title:
			if t == "" {
				t = collapse(text(n))
			}
			return false
		case atom.H1:
			if h1 == "" {
				h1 = collapse(text(n))
			}
			return false
		case atom.Svg, atom.Script, atom.Style:
			return false
		}
		return true
	})
	if t == "" {
		return h1
	}
	return t
}

// mainContent picks the element that holds the page's content: <main>, an
// element with role="main", the only (or the longest) <article>, or else
// <body>. Pages that mark their content none of these ways still lose their
// chrome through strip.
func mainContent(doc *html.Node) *html.Node {
	var mainEl, body *html.Node
	var articles []*html.Node
	walk(doc, func(n *html.Node) bool {
		if n.Type != html.ElementNode {
			return true
		}
		switch {
		case n.DataAtom == atom.Body:
			body = n
		case n.DataAtom == atom.Main || attr(n, "role") == "main":
			if mainEl == nil {
				mainEl = n
			}
		case n.DataAtom == atom.Article:
			articles = append(articles, n)
			return false // nested articles (comments) are part of it
		case noise[n.DataAtom]:
			return false
		}
		return true
	})
	if mainEl != nil {
		return mainEl
	}
	if len(articles) > 0 {
		best, bestLen := articles[0], -1
		for _, a := range articles {
			if l := len(collapse(text(a))); l > bestLen {
				best, bestLen = a, l
			}
		}
		return best
	}
	if body != nil {
		return body
	}
	return doc
}

// strip removes the noise elements below n.
func strip(n *html.Node) {
	for c := n.FirstChild; c != nil; {
		next := c.NextSibling
		if c.Type == html.CommentNode || (c.Type == html.ElementNode && isNoise(c)) {
			n.RemoveChild(c)
		} else {
			strip(c)
		}
		c = next
	}
}

func isNoise(n *html.Node) bool {
	if noise[n.DataAtom] {
		return true
	}
	if noiseRoles[attr(n, "role")] || attr(n, "aria-hidden") == "true" || hasAttr(n, "hidden") {
		return true
	}
	if n.DataAtom == atom.Div || n.DataAtom == atom.Section || n.DataAtom == atom.Ul || n.DataAtom == atom.Span {
		for _, a := range []string{"class", "id"} {
			for _, w := range strings.FieldsFunc(strings.ToLower(attr(n, a)), func(r rune) bool {
				return r == ' ' || r == '-' || r == '_'
			}) {
				if noiseWords[w] {
					return true
				}
			}
		}
	}
	return false
}

func walk(n *html.Node, fn func(*html.Node) bool) {
	if !fn(n) {
		return
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c, fn)
	}
}

func text(n *html.Node) string {
	var b strings.Builder
	walk(n, func(c *html.Node) bool {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
		return c.Type != html.ElementNode || (c.DataAtom != atom.Script && c.DataAtom != atom.Style)
	})
	return b.String()
}

func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return strings.ToLower(strings.TrimSpace(a.Val))
		}
	}
	return ""
}

func hasAttr(n *html.Node, key string) bool {
	for _, a := range n.Attr {
		if a.Key == key {
			return true
		}
	}
	return false
}
