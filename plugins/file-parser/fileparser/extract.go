package fileparser

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ledongthuc/pdf"
)

// Limits bound the work one file may cost, so that a hostile file (a
// decompression bomb, a page tree with millions of pages, a content stream
// of endless operators) is refused with a 400 instead of exhausting the
// module's memory or running into the host's call time limit (a 502).
type Limits struct {
	Bytes        int // the file itself, after base64 decoding
	Pages        int
	Decompressed int // decoded bytes of every content and ToUnicode stream, summed
	Text         int // extracted text, in bytes; past it the text is cut
}

// DefaultLimits are used unless the operator's settings say otherwise.
var DefaultLimits = Limits{Bytes: 8 << 20, Pages: 300, Decompressed: 48 << 20, Text: 1 << 20}

// FileError is a file the module refuses: Reason is a short machine code
// (encrypted, malformed, too_large, too_many_pages, decompressed_too_large,
// unsupported), Message says what the caller can do.
type FileError struct {
	Reason  string
	Message string
}

func (e *FileError) Error() string { return e.Message }

func fileErr(reason, format string, a ...any) *FileError {
	return &FileError{Reason: reason, Message: fmt.Sprintf(format, a...)}
}

// Doc is a parsed PDF: the text of each page, in page order.
type Doc struct {
	Pages     []string
	Truncated bool // the text was cut at Limits.Text
}

// ExtractPDF returns the text of each page of data. The PDF library
// (github.com/ledongthuc/pdf, a maintained fork of rsc.io/pdf) panics on
// many malformed inputs; every panic is turned into a "malformed" error.
func ExtractPDF(data []byte, lim Limits) (doc *Doc, err error) {
	defer func() {
		if r := recover(); r != nil {
			doc, err = nil, fileErr("malformed", "the PDF is malformed (%v)", short(fmt.Sprint(r)))
		}
	}()
	_, pages, err := openPDF(data, lim)
	if err != nil {
		return nil, err
	}
	n := len(pages)
	// Measure the decoded size of what extraction will decode before
	// decoding it for real: the interpreter keeps operands on a stack, so a
	// bomb would grow memory without bound.
	budget := lim.Decompressed
	for _, pv := range pages {
		if budget, err = spendContent(pv.Key("Contents"), budget, lim.Decompressed, 0); err != nil {
			return nil, err
		}
		fonts := resources(pv).Key("Font")
		for _, k := range fonts.Keys() {
			if budget, err = spendContent(fonts.Key(k).Key("ToUnicode"), budget, lim.Decompressed, 0); err != nil {
				return nil, err
			}
		}
	}
	doc = &Doc{Pages: make([]string, 0, n)}
	total := 0
	fonts := map[string]*font{}
	for _, pv := range pages {
		raw, err := pageText(pv, fonts, &budget, lim.Decompressed)
		if err != nil {
			return nil, err
		}
		text := clean(raw)
		if ff := formFields(pv); ff != "" {
			if text != "" {
				text += "\n\n"
			}
			text += "Form fields:\n" + ff
		}
		if total+len(text) > lim.Text {
			text = cutUTF8(text, lim.Text-total)
			doc.Truncated = true
		}
		total += len(text)
		doc.Pages = append(doc.Pages, text)
		if doc.Truncated {
			break
		}
	}
	return doc, nil
}

// openPDF opens data within lim and returns its pages in order: the
// header, object counts, encryption and page tree are checked here. Its
// caller recovers the library's panics.
func openPDF(data []byte, lim Limits) (*pdf.Reader, []pdf.Value, error) {
	if len(data) > lim.Bytes {
		return nil, nil, fileErr("too_large", "the file is %d bytes, over the limit of %d", len(data), lim.Bytes)
	}
	if !bytes.HasPrefix(bytes.TrimLeft(data, "\x00\t\r\n\f "), []byte("%PDF-")) {
		return nil, nil, fileErr("malformed", "not a PDF (no %%PDF- header)")
	}
	if err := checkObjectCounts(data); err != nil {
		return nil, nil, err
	}
	if err := checkXrefChain(data); err != nil {
		return nil, nil, err
	}
	// Encrypted files are refused even when the empty user password would
	// open them: the library's decryption is partial (no AES-256), and a
	// text that half decrypts would be worse than a clear refusal.
	r, err := pdf.NewReaderEncrypted(bytes.NewReader(data), int64(len(data)), func() string { return "" })
	if err != nil {
		if isEncrypted(data, err) {
			return nil, nil, fileErr("encrypted", "the PDF is encrypted; send a copy without a password")
		}
		return nil, nil, fileErr("malformed", "the PDF cannot be read (%s)", short(err.Error()))
	}
	if !r.Trailer().Key("Encrypt").IsNull() {
		return nil, nil, fileErr("encrypted", "the PDF is encrypted; send a copy without a password")
	}
	// The page tree is walked here with a depth and node budget: the
	// library's own walk (NumPage, Page) trusts /Count and never leaves a
	// tree whose node lists itself as a kid.
	var pages []pdf.Value
	nodes := 4*lim.Pages + 64
	if err := collectPages(r.Trailer().Key("Root").Key("Pages"), 0, &pages, &nodes, lim.Pages); err != nil {
		return nil, nil, err
	}
	if len(pages) == 0 {
		return nil, nil, fileErr("malformed", "the PDF has no pages")
	}
	return r, pages, nil
}

// maxObjects bounds the object numbers a file may declare. The library
// allocates its cross-reference table from /Size and from the xref
// subsection headers before reading any object, so a file that claims
// four hundred million objects exhausted the module's memory (a trap, a
// 502). 500,000 objects is far beyond what an 8 MiB file holds.
const maxObjects = 500_000

var (
	sizeRe   = regexp.MustCompile(`/Size\s+(\d+)`)
	xrefRe   = regexp.MustCompile(`(?:^|[\r\n])xref[ \t]*[\r\n]+`)
	subsecRe = regexp.MustCompile(`^[ \t]*(\d+)[ \t]+(\d+)[ \t]*[\r\n]+`)
)

// checkObjectCounts refuses a /Size, or a classic xref subsection reaching
// an object number, past maxObjects.
func checkObjectCounts(data []byte) *FileError {
	for _, m := range sizeRe.FindAllSubmatch(data, -1) {
		if n, err := strconv.Atoi(string(m[1])); err != nil || n > maxObjects {
			return fileErr("malformed", "the PDF declares %s objects, over the limit of %d", m[1], maxObjects)
		}
	}
	for _, loc := range xrefRe.FindAllIndex(data, -1) {
		rest := data[loc[1]:]
		for {
			m := subsecRe.FindSubmatch(rest)
			if m == nil {
				break
			}
			start, err1 := strconv.Atoi(string(m[1]))
			count, err2 := strconv.Atoi(string(m[2]))
			if err1 != nil || err2 != nil || start+count > maxObjects {
				return fileErr("malformed", "the PDF's cross-reference table reaches object %s+%s, over the limit of %d", m[1], m[2], maxObjects)
			}
			rest = rest[len(m[0]):]
			// Skip the subsection's entries (20 bytes each by the
			// standard; a short one just ends the scan).
			if skip := 20 * count; skip <= len(rest) {
				rest = rest[skip:]
			} else {
				break
			}
		}
	}
	return nil
}

// maxDepth bounds every walk of the object graph (page tree, parents,
// arrays of streams): a PDF can make any of them a loop.
const maxDepth = 64

// collectPages appends the leaves of the page tree under v in order.
func collectPages(v pdf.Value, depth int, out *[]pdf.Value, nodes *int, maxPages int) error {
	*nodes--
	if depth > maxDepth || *nodes < 0 {
		return fileErr("malformed", "the page tree is too deep or loops")
	}
	kids := v.Key("Kids")
	if v.Key("Type").Name() == "Pages" || kids.Kind() == pdf.Array {
		for i := 0; i < kids.Len(); i++ {
			if err := collectPages(kids.Index(i), depth+1, out, nodes, maxPages); err != nil {
				return err
			}
		}
		return nil
	}
	if v.Kind() != pdf.Dict {
		return fileErr("malformed", "the page tree holds something that is not a page")
	}
	if len(*out) >= maxPages {
		return fileErr("too_many_pages", "the PDF has more than %d pages, the limit", maxPages)
	}
	*out = append(*out, v)
	return nil
}

// resources is the page's resource dictionary, inherited from its
// ancestors, walking at most maxDepth parents.
func resources(page pdf.Value) pdf.Value {
	v := page
	for i := 0; i < maxDepth && !v.IsNull(); i++ {
		if r := v.Key("Resources"); !r.IsNull() {
			return r
		}
		v = v.Key("Parent")
	}
	return pdf.Value{}
}

// maxOperands bounds the operands in a row before an operator in a
// content stream: the library's interpreter holds them all on its stack
// (a few dozen bytes each), so a stream of millions of numbers and no
// operator would exhaust the module's memory. Real pages have a handful
// per operator; a TJ array counts as one.
const maxOperands = 1 << 16

// operandCounter scans a content stream as it is decoded and fails when
// more than maxOperands operands come in a row. It knows strings
// (parentheses, nested, with escapes), hex strings and arrays, so the
// spaces inside them do not count.
type operandCounter struct {
	run      int  // operands since the last operator
	inTok    bool // inside a token
	tokOp    bool // the token started with a letter: an operator (or true/false/null)
	paren    int  // depth of a literal string
	esc      bool
	hex      bool
	array    int
	exceeded bool
}

func (c *operandCounter) Write(b []byte) (int, error) {
	for _, ch := range b {
		switch {
		case c.paren > 0:
			switch {
			case c.esc:
				c.esc = false
			case ch == '\\':
				c.esc = true
			case ch == '(':
				c.paren++
			case ch == ')':
				c.paren--
			}
			continue
		case c.hex:
			if ch == '>' {
				c.hex = false
			}
			continue
		}
		switch ch {
		case ' ', '\n', '\r', '\t', '\f', 0:
			c.end()
		case '(':
			c.end()
			c.paren = 1
			c.operand()
		case '<':
			c.end()
			c.hex = true
			c.operand()
		case '[':
			c.end()
			c.array++
		case ']':
			c.end()
			if c.array > 0 {
				c.array--
			}
			c.operand()
		case '/', '{', '}', '>', ')':
			c.end()
			if ch == '/' {
				c.inTok, c.tokOp = true, false
			}
		default:
			if !c.inTok {
				c.inTok = true
				c.tokOp = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '\'' || ch == '"'
			}
		}
		if c.exceeded {
			return 0, errTooManyOperands
		}
	}
	return len(b), nil
}

// end closes the token being read.
func (c *operandCounter) end() {
	if !c.inTok {
		return
	}
	c.inTok = false
	if c.tokOp && c.array == 0 {
		c.run = 0
		return
	}
	c.operand()
}

func (c *operandCounter) operand() {
	if c.array > 0 {
		return // an array is one operand, counted at its ]
	}
	c.run++
	if c.run > maxOperands {
		c.exceeded = true
	}
}

var errTooManyOperands = errors.New("too many operands")

// spendContent reads the decoded bytes of v (a stream, or an array of
// streams), takes them from budget, and checks the operands in a row.
func spendContent(v pdf.Value, budget, limit, depth int) (int, error) {
	if depth > maxDepth {
		return 0, fileErr("malformed", "the content streams nest too deep or loop")
	}
	switch v.Kind() {
	case pdf.Array:
		var err error
		for i := 0; i < v.Len(); i++ {
			if budget, err = spendContent(v.Index(i), budget, limit, depth+1); err != nil {
				return budget, err
			}
		}
		return budget, nil
	case pdf.Stream:
	default:
		return budget, nil
	}
	rc := v.Reader()
	defer rc.Close()
	oc := &operandCounter{}
	n, err := io.Copy(oc, io.LimitReader(rc, int64(budget)+1))
	if errors.Is(err, errTooManyOperands) {
		return 0, fileErr("malformed", "a content stream has more than %d operands in a row", maxOperands)
	}
	if n > int64(budget) {
		return 0, fileErr("decompressed_too_large", "the PDF's content decompresses to more than %d bytes (a decompression bomb?)", limit)
	}
	if oc.paren > 0 || oc.hex {
		// The library's lexer reads past the end of a stream as
		// newlines for ever: a string left open ("<" or "(" last)
		// kept the module busy until the call's time limit.
		return 0, fileErr("malformed", "a content stream ends inside a string")
	}
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return 0, fileErr("malformed", "a content stream cannot be decoded (%s)", short(err.Error()))
	}
	return budget - int(n), nil
}

func isEncrypted(data []byte, err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "encrypt") || strings.Contains(msg, "password") || bytes.Contains(data, []byte("/Encrypt"))
}

// clean drops the NUL and replacement characters a font without a
// ToUnicode map produces, trims each line, and keeps one blank line
// between paragraphs.
func clean(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == 0 || r == utf8.RuneError {
			return -1
		}
		return r
	}, s)
	lines := strings.Split(s, "\n")
	out := lines[:0]
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" && (len(out) == 0 || out[len(out)-1] == "") {
			continue
		}
		out = append(out, l)
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return strings.Join(out, "\n")
}

func cutUTF8(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if n >= len(s) {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func short(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}

func (d *Doc) empty() bool {
	for _, p := range d.Pages {
		if p != "" {
			return false
		}
	}
	return true
}

// Text is the text part that replaces a file part: a header naming the
// file and its page count, then each page under a "--- page N ---" line.
func (d *Doc) Text(name string) string {
	var b strings.Builder
	b.WriteString("[file ")
	b.WriteString(name)
	b.WriteString(", ")
	b.WriteString(strconv.Itoa(len(d.Pages)))
	b.WriteString(" page(s), text extracted by the gateway]")
	for i, p := range d.Pages {
		b.WriteString("\n--- page ")
		b.WriteString(strconv.Itoa(i + 1))
		b.WriteString(" ---\n")
		b.WriteString(p)
	}
	if d.Truncated {
		b.WriteString("\n[text truncated at the gateway's limit]")
	}
	if d.empty() {
		b.WriteString("\n[no text layer: a scanned PDF? its pages are images, which engine pdf-text does not read]")
	}
	return b.String()
}

// checkXrefChain follows the cross-reference sections' /Prev chain from
// the last startxref as the PDF library will, and refuses one that loops.
// The library follows /Prev without remembering where it has been, so a
// 622-byte file whose trailer names its own section as /Prev kept it
// busy until the call's deadline (issue 31 item 1). Linear in the file:
// each section's dictionary is read once, and the bytes read over all
// sections are bounded by a few times the file's size.
func checkXrefChain(data []byte) *FileError {
	off, ok := lastStartxref(data)
	seen := map[int]bool{}
	budget := 4*len(data) + 4096
	for ok {
		if seen[off] {
			return fileErr("malformed", "the PDF's cross-reference sections form a loop (/Prev)")
		}
		seen[off] = true
		var read int
		off, ok, read = prevOf(data, off)
		if budget -= read; budget < 0 {
			return fileErr("malformed", "the PDF has too many cross-reference sections")
		}
	}
	return nil
}

// lastStartxref is the offset the file's last startxref names.
func lastStartxref(data []byte) (int, bool) {
	i := bytes.LastIndex(data, []byte("startxref"))
	if i < 0 {
		return 0, false
	}
	return readInt(data[i+len("startxref"):])
}

// prevOf reads the section at off — a classic table ("xref" … "trailer"
// << … >>) or a stream object (N G obj << … >>) — and returns its
// dictionary's top-level /Prev, whether it has one, and how many bytes
// it read.
func prevOf(data []byte, off int) (prev int, ok bool, read int) {
	if off < 0 || off >= len(data) {
		return 0, false, 0
	}
	rest := data[off:]
	if bytes.HasPrefix(bytes.TrimLeft(rest, " \t\r\n\f\x00"), []byte("xref")) {
		t := bytes.Index(rest, []byte("trailer"))
		if t < 0 {
			return 0, false, len(rest)
		}
		read = t
		rest = rest[t:]
	}
	d := bytes.Index(rest, []byte("<<"))
	if d < 0 {
		return 0, false, read + len(rest)
	}
	prev, ok, n := dictPrev(rest[d:])
	return prev, ok, read + d + n
}

// dictPrev scans the dictionary at the start of b (it begins with "<<")
// for a /Prev at its top level, skipping strings, comments and nested
// dictionaries; it returns the bytes scanned.
func dictPrev(b []byte) (prev int, ok bool, n int) {
	depth, found := 0, false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '(':
			i = skipString(b, i)
		case c == '%':
			for i < len(b) && b[i] != '\n' && b[i] != '\r' {
				i++
			}
		case c == '<' && i+1 < len(b) && b[i+1] == '<':
			depth++
			i++
		case c == '>' && i+1 < len(b) && b[i+1] == '>':
			if depth--; depth == 0 {
				return prev, found, i + 2
			}
			i++
		case c == '/' && depth == 1 && bytes.HasPrefix(b[i+1:], []byte("Prev")) && (i+5 >= len(b) || !isRegular(b[i+5])):
			prev, found = readInt(b[i+5:])
		}
	}
	return prev, found, len(b)
}

// skipString returns the index of the ')' closing the literal string
// opened at b[i] (nested parentheses and escapes as PDF has them).
func skipString(b []byte, i int) int {
	depth := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '(':
			depth++
		case ')':
			if depth--; depth == 0 {
				return i
			}
		}
	}
	return i
}

// isRegular reports whether c continues a name (not whitespace or a
// delimiter).
func isRegular(c byte) bool {
	return !strings.ContainsRune(" \t\r\n\f\x00()<>[]{}/%", rune(c))
}

// readInt reads the non-negative integer after optional whitespace.
func readInt(b []byte) (int, bool) {
	b = bytes.TrimLeft(b, " \t\r\n\f\x00")
	n, digits := 0, 0
	for _, c := range b {
		if c < '0' || c > '9' || digits == 10 {
			break
		}
		n = n*10 + int(c-'0')
		digits++
	}
	return n, digits > 0
}
