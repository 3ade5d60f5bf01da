package fileparser

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// textPDF is a one-page PDF drawing content with fonts F1 (Helvetica),
// F2 (Times-Roman), F3 (Times-Roman with /fi /fl at codes 1 and 2), F4
// (a font with no Unicode map: its codes 1-3 named g1-g3), F5 (Symbol),
// all without /Widths, as ReportLab writes them; extra objects follow
// from object 10 (annots names the page's /Annots, acro the catalog's
// /AcroForm; a content drawing /X1 draws object 10 as an XObject).
func textPDF(content, annots, acro string, extra ...string) []byte {
	xobj := ""
	if strings.Contains(content, "/X1 Do") {
		xobj = " /XObject << /X1 10 0 R >>"
	}
	objs := map[int]string{
		1: "<< /Type /Catalog /Pages 2 0 R" + acro + " >>",
		2: "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		3: "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R /F2 6 0 R /F3 7 0 R /F4 8 0 R /F5 9 0 R >>" + xobj + " >> /Contents 4 0 R" + annots + " >>",
		4: fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(content)+1, content),
		5: "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
		6: "<< /Type /Font /Subtype /Type1 /BaseFont /Times-Roman >>",
		7: "<< /Type /Font /Subtype /Type1 /BaseFont /Times-Roman /Encoding << /Type /Encoding /BaseEncoding /WinAnsiEncoding /Differences [1 /fi /fl] >> >>",
		8: "<< /Type /Font /Subtype /Type1 /BaseFont /ABCDEF+Custom /FirstChar 1 /LastChar 3 /Widths [500 500 500] /Encoding << /Differences [1 /g1 /g2 /g3] >> >>",
		9: "<< /Type /Font /Subtype /Type1 /BaseFont /Symbol >>",
	}
	for i, e := range extra {
		objs[10+i] = e
	}
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	offs := make([]int, len(objs)+1)
	for i := 1; i <= len(objs); i++ {
		offs[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i, objs[i])
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for i := 1; i <= len(objs); i++ {
		fmt.Fprintf(&b, "%010d 00000 n \n", offs[i])
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, xref)
	return b.Bytes()
}

// Text placed by position, as a reader sees it: every way a producer
// moves to a new line is a line break, every gap wider than a thin space
// between strings is a space, kerning is not.
func TestLayout(t *testing.T) {
	cases := []struct {
		name, content, want string
	}{
		{"Td lines, standard font without Widths", "BT /F1 12 Tf 72 720 Td (Line one) Tj 0 -14 Td (Line two) Tj ET", "Line one\nLine two"},
		{"Tm cells", "BT /F1 10 Tf 1 0 0 1 72 600 Tm (Left cell) Tj 1 0 0 1 300 600 Tm (Right cell) Tj ET", "Left cell Right cell"},
		{"cm cells of a table", "q 1 0 0 1 72 700 cm BT /F1 10 Tf 0 0 Td (Station) Tj ET Q q 1 0 0 1 180 700 cm BT /F1 10 Tf 0 0 Td (Rainfall \\(mm\\)) Tj ET Q " +
			"q 1 0 0 1 72 682 cm BT /F1 10 Tf 0 0 Td (Aberdeen) Tj ET Q q 1 0 0 1 180 682 cm BT /F1 10 Tf 0 0 Td (61.2) Tj ET Q", "Station Rainfall (mm)\nAberdeen 61.2"},
		{"strings abutting: no space", "BT /F2 12 Tf 72 720 Td (Rain) Tj (fall) Tj ET", "Rainfall"},
		{"T* ' and \"", "BT /F2 11 Tf 13 TL 72 720 Td (one) Tj T* (two) Tj (three) ' 1 0 (four) \" ET", "one\ntwo\nthree\nfour"},
		{"TD sets the leading", "BT /F2 11 Tf 72 720 Td (one) Tj 0 -13 TD (two) Tj T* (three) Tj ET", "one\ntwo\nthree"},
		{"TJ offsets: word gaps, not kerning", "BT /F2 12 Tf 72 720 Td [(W)80(ord)-300(gap)-20(s)] TJ ET", "Word gaps"},
		{"character and word spacing", "BT /F2 12 Tf 72 720 Td 4 Tc (ab) Tj 0 Tc 0 -14 Td 6 Tw (x y) Tj ET", "a b\nx y"},
		{"horizontal scaling", "BT /F2 12 Tf 50 Tz 72 720 Td (half) Tj ( width) Tj ET", "half width"},
		{"paragraph break", "BT /F2 11 Tf 72 720 Td 13 TL (first line) Tj T* (second line) Tj 0 -40 Td (new paragraph) Tj ET", "first line\nsecond line\n\nnew paragraph"},
		{"q/Q restores the CTM", "q 1 0 0 1 0 -100 cm Q BT /F2 11 Tf 72 720 Td (same) Tj ET BT /F2 11 Tf 100 720 Td (line) Tj ET", "same line"},
		{"scaled by cm", "q 0.5 0 0 0.5 0 0 cm BT /F2 24 Tf 144 1440 Td (big) Tj 0 -28 Td (type) Tj ET Q", "big\ntype"},
		{"rotated text stays one line", "BT /F2 11 Tf 0 1 -1 0 300 100 Tm (going) Tj ( up) Tj ET", "going up"},
		{"superscript by rise", "BT /F2 11 Tf 72 720 Td (E = mc) Tj 4 Ts (2) Tj 0 Ts ( holds) Tj ET", "E = mc2 holds"},
		{"ligatures expanded", "BT /F3 12 Tf 72 720 Td (\\001nd the \\002ow) Tj ET", "find the flow"},
		{"no Unicode map: no control characters", "BT /F4 12 Tf 72 720 Td (\\001\\002\\003) Tj /F1 12 Tf ( ok \\003) Tj ET", "ok"},
		{"Symbol's own encoding", "BT /F5 12 Tf 72 720 Td (abg) Tj ET", "αβγ"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := ExtractPDF(textPDF(tc.content, "", ""), DefaultLimits)
			if err != nil {
				t.Fatal(err)
			}
			if got := doc.Pages[0]; got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func formXObject(dict, content string) string {
	return fmt.Sprintf("<< /Type /XObject /Subtype /Form /BBox [0 0 612 792] %s /Length %d >>\nstream\n%s\nendstream", dict, len(content)+1, content)
}

// Text inside form XObjects (headers, footers, stamps) is read where the
// form is drawn, under its matrix; forms nest only so deep, and every
// drawing of a form takes its size from the decompressed-bytes budget.
func TestFormXObjects(t *testing.T) {
	t.Run("drawn twice under its matrix", func(t *testing.T) {
		data := textPDF("BT /F1 12 Tf 72 720 Td (Body text) Tj ET q 1 0 0 1 0 -200 cm /X1 Do Q /X1 Do", "", "",
			formXObject("/Matrix [1 0 0 1 0 -600] /Resources << /Font << /H 6 0 R >> >>", "BT /H 10 Tf 72 700 Td (Footer line) Tj ET"))
		doc, err := ExtractPDF(data, DefaultLimits)
		if err != nil {
			t.Fatal(err)
		}
		if want := "Body text\n\nFooter line\n\nFooter line"; doc.Pages[0] != want {
			t.Errorf("got %q, want %q", doc.Pages[0], want)
		}
	})
	t.Run("a form drawing itself", func(t *testing.T) {
		data := textPDF("/X1 Do", "", "", formXObject("/Resources << /XObject << /X1 10 0 R >> /Font << /F1 5 0 R >> >>", "BT /F1 10 Tf 0 0 Td (again) Tj ET /X1 Do"))
		doc, err := ExtractPDF(data, DefaultLimits)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Count(doc.Pages[0], "again"); got != maxFormDepth {
			t.Errorf("%d copies, want %d (the depth limit)", got, maxFormDepth)
		}
	})
	t.Run("drawn past the budget", func(t *testing.T) {
		data := textPDF(strings.Repeat("/X1 Do ", 5000), "", "", formXObject("", strings.Repeat("% padding\n", 100)))
		_, err := ExtractPDF(data, Limits{Bytes: 1 << 20, Pages: 10, Decompressed: 1 << 20, Text: 1 << 20})
		if fe, ok := err.(*FileError); !ok || fe.Reason != "decompressed_too_large" {
			t.Fatalf("got %v, want decompressed_too_large", err)
		}
	})
}

// The values of a filled-in form come out under the page's text.
func TestFormFields(t *testing.T) {
	annots := " /Annots [10 0 R 11 0 R 12 0 R 13 0 R]"
	acro := " /AcroForm << /Fields [10 0 R 11 0 R 14 0 R] >>"
	data := textPDF("BT /F1 12 Tf 72 720 Td (Application) Tj ET", annots, acro,
		"<< /Type /Annot /Subtype /Widget /FT /Tx /T (Name) /V (Ada Lovelace) /Rect [0 0 1 1] >>",
		"<< /Type /Annot /Subtype /Widget /FT /Btn /T (Agree) /V /Yes /AS /Yes /Rect [0 0 1 1] >>",
		"<< /Type /Annot /Subtype /Widget /Parent 14 0 R /AS /Off /Rect [0 0 1 1] >>",
		"<< /Type /Annot /Subtype /Link /Rect [0 0 1 1] >>",
		"<< /FT /Tx /T (Address) /V (12 Main St\\rSpringfield) /Kids [12 0 R] >>",
	)
	doc, err := ExtractPDF(data, DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	want := "Application\n\nForm fields:\nName: Ada Lovelace\nAgree: Yes\nAddress: 12 Main St\nSpringfield"
	if doc.Pages[0] != want {
		t.Errorf("got %q, want %q", doc.Pages[0], want)
	}
}

// The standard 14 widths are Adobe's: spot checks against the Core14 AFMs.
func TestStandard14Widths(t *testing.T) {
	cases := []struct {
		base string
		r    rune
		want float64
	}{
		{"Helvetica", 'A', 667}, {"Helvetica", ' ', 278}, {"Helvetica-Bold", 'w', 778},
		{"Times-Roman", 'A', 722}, {"Times-Roman", 'ﬁ', 556}, {"Times-Italic", 'm', 722},
		{"Courier-BoldOblique", 'W', 600}, {"ABCDEF+Arial-BoldMT", 'a', 556}, {"TimesNewRomanPSMT", 'e', 444},
	}
	for _, tc := range cases {
		if got := std14Width(std14Of(tc.base), tc.r); got != tc.want {
			t.Errorf("%s %q: width %v, want %v", tc.base, tc.r, got, tc.want)
		}
	}
	if std14Of("DejaVuSans") != std14None {
		t.Error("DejaVuSans taken for a standard font")
	}
}

// compareText, the oracle comparison's measure, itself.
func TestCompareText(t *testing.T) {
	cases := []struct {
		text, oracle string
		words, lines float64
	}{
		{"a b\nc d", "a b\nc d", 1, 1},
		{"Line oneLine two", "Line one\nLine two", 0.5, 0},
		{"a b c d", "a b\nc d", 1, 0},
		{"a b\n\nc d", "a   b\nc d\n", 1, 1},
		{"a\nb\nc d", "a b\nc d", 1, 2.0 / 3},
	}
	for _, tc := range cases {
		w, l := compareText(tc.text, tc.oracle)
		if w != tc.words || l != tc.lines {
			t.Errorf("compareText(%q, %q) = %v, %v; want %v, %v", tc.text, tc.oracle, w, l, tc.words, tc.lines)
		}
	}
}

// FuzzPageText: whatever the content stream, the walk ends without a
// panic, and its text holds no control character.
func FuzzPageText(f *testing.F) {
	for _, s := range []string{
		"BT /F1 12 Tf 72 720 Td (Line one) Tj 0 -14 Td (Line two) Tj ET",
		"q q q 1 0 0 1 5 5 cm Q Q Q Q Q BT /F2 1e30 Tf 0 0 0 0 0 0 Tm (x) Tj ET",
		"BT /F3 12 Tf 13 TL [(\\001)-99999(\\002)] TJ (a) ' 1 2 (b) \" T* -3 TD 0 Tz (c) Tj ET",
		"BT /F4 12 Tf (\\001\\002\\003\\000\\037) Tj /F5 12 Tf (abc) Tj 1 0 0 -1 0 0 cm ET",
		"BT /F9 12 Tf (no font) Tj Tf Tj TJ Tm cm ET",
		"q 2 0 0 2 0 0 cm /X1 Do Q /X1 Do /X2 Do Do",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, content string) {
		form := formXObject("/Matrix [1 0 0 1 5 5] /Resources << /XObject << /X1 10 0 R >> /Font << /F1 5 0 R >> >>", "BT /F1 10 Tf (form) Tj ET /X1 Do")
		doc, err := ExtractPDF(textPDF(content, "", "", form), DefaultLimits)
		if err != nil {
			return
		}
		for _, p := range doc.Pages {
			if strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 && r != '\n' }) {
				t.Fatalf("control character in %q", p)
			}
		}
	})
}
