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

var conv = converter.NewConverter(
	converter.WithPlugins(
		base.NewBasePlugin(),
		literalAngles{},
		commonmark.NewCommonmarkPlugin(),
		// Minimal padding: aligned columns cost the model tokens and add
		// nothing. Cells that hold several blocks were flattened by
		// flattenCells, their breaks kept as <br />: a table the plugin
		// skipped would come out as its cells' text run together.
		table.NewTablePlugin(table.WithCellPaddingBehavior(table.CellPaddingBehaviorMinimal), table.WithSkipEmptyRows(true),
			table.WithNewlineBehavior(table.NewlineBehaviorPreserve)),
	),
	// No Markdown escaping: the reader is a model, not a Markdown
	// renderer, and escaping writes "[" as "\[" and "*" as "\*".
	converter.WithEscapeMode(converter.EscapeModeDisabled),
)

// literalAngles keeps a page's "<" and ">" as they are in the Markdown.
// The base plugin writes them as "&lt;" and "&gt;" (so that a Markdown
// renderer does not take them for HTML), which a model reads as literal
// entities: a MediaWiki page about HTML came out with thousands of them.
// Entities are decoded once, by the HTML parser: before the base plugin's
// transform the angles become private-use runes, and after rendering they
// are put back, so a page's literal "&lt;" (written "&amp;lt;") stays
// "&lt;". Code is not transformed by the converter and needs none of this.
type literalAngles struct{}

const ltMark, gtMark = "\uE000", "\uE001"

var (
	hideAngles = strings.NewReplacer("<", ltMark, ">", gtMark, ltMark, "", gtMark, "")
	showAngles = strings.NewReplacer(ltMark, "<", gtMark, ">")
)

func (literalAngles) Name() string { return "literal-angles" }

func (literalAngles) Init(conv *converter.Converter) error {
	conv.Register.TextTransformer(func(_ converter.Context, s string) string {
		return hideAngles.Replace(s)
	}, converter.PriorityEarly)
	conv.Register.PostRenderer(func(_ converter.Context, b []byte) []byte {
		if !bytes.Contains(b, []byte(ltMark)) && !bytes.Contains(b, []byte(gtMark)) {
			return b
		}
		return []byte(showAngles.Replace(string(b)))
	}, converter.PriorityLate)
	return nil
}

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
	// Below the content, not of it: a post's comment thread and the site's
	// "related" / "you may also like" lists (tuned on the evaluation set's
	// dev split: testdata/eval).
	"comments": true, "related": true, "relatedposts": true, "recommendations": true,
}

// noiseClasses and noiseIDs are whole class names and ids of chrome that
// noiseWords cannot catch by a word: MediaWiki's (Wikipedia's and every
// other wiki's: "[edit]" links, "Jump to navigation", navboxes, the table
// of contents, maintenance banners, category links, citation markers) and
// the screen-reader-only text of common CSS frameworks. Matched on any
// element.
var noiseClasses = map[string]bool{
	"mw-editsection": true, "mw-jump-link": true, "navbox": true, "vertical-navbox": true,
	"navbox-styles": true, "catlinks": true, "printfooter": true, "mw-indicators": true,
	"noprint": true, "ambox": true, "toc": true, "mw-cite-backlink": true, "reference": true,
	"sistersitebox": true, "mw-empty-elt": true, "navigation-not-searchable": true,
	"sr-only": true, "visually-hidden": true, "screen-reader-text": true, "skip-link": true,
}

var noiseIDs = map[string]bool{
	"catlinks": true, "sitesub": true, "contentsub": true, "jump-to-nav": true, "toc": true,
	"mw-navigation": true, "mw-panel": true, "mw-head": true, "p-lang": true,
	"sitenotice": true, "mw-page-base": true, "mw-head-base": true,
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
	flattenCells(root)
	out, err := conv.ConvertNode(root, converter.WithDomain(pageURL))
	if err != nil {
		return title, "", err
	}
	// The table plugin writes a cell's line break as a Markdown hard break
	// ("  ") before the <br />: two spaces the model does not need.
	out = bytes.ReplaceAll(out, []byte("  <br />"), []byte("<br />"))
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
		} else if c.DataAtom == atom.A && !linksOut(c) {
			// Its text stays, as plain text: the converter would make an
			// anchor without href a link to the page itself.
			strip(c)
			for g := c.FirstChild; g != nil; g = c.FirstChild {
				c.RemoveChild(g)
				n.InsertBefore(g, c)
			}
			n.RemoveChild(c)
		} else {
			strip(c)
		}
		c = next
	}
}

// linksOut reports whether anchor a links anywhere but the page itself:
// it has an href that is not only a fragment (a named anchor, a footnote
// jump) nor a script.
func linksOut(a *html.Node) bool {
	for _, at := range a.Attr {
		if at.Key == "href" {
			h := strings.TrimSpace(at.Val)
			return h != "" && h[0] != '#' && !strings.HasPrefix(strings.ToLower(h), "javascript:")
		}
	}
	return false
}

func isNoise(n *html.Node) bool {
	if noise[n.DataAtom] {
		return true
	}
	if noiseRoles[attr(n, "role")] || attr(n, "aria-hidden") == "true" || hasAttr(n, "hidden") {
		return true
	}
	if noiseIDs[attr(n, "id")] {
		return true
	}
	if c := attr(n, "class"); c != "" {
		for _, w := range strings.Fields(c) {
			if noiseClasses[w] {
				return true
			}
		}
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

// cellBlocks are the elements that break a table cell's content into lines;
// Markdown table cells hold one line, so flattenCells turns each into an
// inline span followed by a <br>.
var cellBlocks = map[atom.Atom]bool{
	atom.P: true, atom.Div: true, atom.Li: true, atom.Dt: true, atom.Dd: true, atom.Blockquote: true,
	atom.Pre: true, atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true, atom.H5: true, atom.H6: true,
	atom.Tr: true, atom.Section: true, atom.Figure: true, atom.Figcaption: true, atom.Address: true,
	atom.Caption: true,
}

// cellContainers become spans with no break of their own (their blocks
// break): lists, nested tables and their row groups.
var cellContainers = map[atom.Atom]bool{
	atom.Ul: true, atom.Ol: true, atom.Dl: true, atom.Table: true, atom.Tbody: true, atom.Thead: true,
	atom.Tfoot: true, atom.Td: true, atom.Th: true, atom.Colgroup: true, atom.Col: true,
}

// flattenCells makes every table cell below n a single line of inline
// content: paragraphs, list items and nested rows end with a <br>, list
// items start with "• ", nested cells are separated by " | ", rules are
// dropped. The table plugin then keeps the table a table, with the breaks
// as <br />, where it otherwise gave up on cells with blocks and the cells'
// text ran together ("NameNotes", "Alpha second paraOne").
func flattenCells(n *html.Node) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type != html.ElementNode {
			continue
		}
		if c.DataAtom == atom.Td || c.DataAtom == atom.Th {
			flattenCell(c)
			continue
		}
		flattenCells(c)
	}
}

func flattenCell(cell *html.Node) {
	for c := cell.FirstChild; c != nil; {
		next := c.NextSibling
		if c.Type != html.ElementNode {
			c = next
			continue
		}
		a := c.DataAtom
		switch {
		case a == atom.Hr:
			cell.RemoveChild(c)
		case cellBlocks[a]:
			flattenCell(c)
			if a == atom.Li {
				c.InsertBefore(&html.Node{Type: html.TextNode, Data: "• "}, c.FirstChild)
			}
			toSpan(c)
			cell.InsertBefore(&html.Node{Type: html.ElementNode, DataAtom: atom.Br, Data: "br"}, next)
		case cellContainers[a]:
			flattenCell(c)
			if (a == atom.Td || a == atom.Th) && c.PrevSibling != nil {
				c.InsertBefore(&html.Node{Type: html.TextNode, Data: " | "}, c.FirstChild)
			}
			toSpan(c)
		default:
			flattenCell(c)
		}
		c = next
	}
	// A break that ends the cell adds nothing.
	for c := cell.LastChild; c != nil && (c.DataAtom == atom.Br || c.Type == html.TextNode && strings.TrimSpace(c.Data) == ""); c = cell.LastChild {
		cell.RemoveChild(c)
	}
}

func toSpan(n *html.Node) {
	n.DataAtom, n.Data, n.Attr = atom.Span, "span", nil
}
