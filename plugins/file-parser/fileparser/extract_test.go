package fileparser

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func readPDF(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// PDFs from three producers: the text of each page, in order, with the
// words a reader would look for (accents, euro sign, Cyrillic, Greek).
func TestExtractProducers(t *testing.T) {
	cases := []struct {
		file  string
		pages [][]string // words each page must hold
	}{
		{"groff.pdf", [][]string{{"Switchyard Quarterly Report", "forty-two", "third quarter", "180 milliseconds", "Café", "résumé"}, {"Second page", "alpha, beta and gamma"}}},
		{"ghostscript.pdf", [][]string{{"Switchyard Quarterly Report", "forty-two", "third quarter"}, {"Second page", "alpha, beta and gamma"}}},
		{"fpdf-multilingual.pdf", [][]string{{"Отчёт о работе шлюза", "сорок два миллиона", "σαράντα δύο εκατομμύρια"}, {"příliš žluťoučký kůň"}}},
		// Bitmap (Type 3) fonts with no Unicode map, glyphs named by
		// their codes: ligatures and dashes read (pdftotext drops them:
		// "eciently", "a fth").
		{"latex-type3.pdf", [][]string{{"boil water efficiently; the first automatic", "In offices, the difficulty is scale", "a fifth over a year — descaling fixes it", "affect taste"}}},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			doc, err := ExtractPDF(readPDF(t, tc.file), DefaultLimits)
			if err != nil {
				t.Fatal(err)
			}
			if len(doc.Pages) != len(tc.pages) {
				t.Fatalf("%d pages, want %d: %q", len(doc.Pages), len(tc.pages), doc.Pages)
			}
			for i, words := range tc.pages {
				flat := strings.Join(strings.Fields(doc.Pages[i]), " ")
				for _, w := range words {
					if !strings.Contains(flat, w) {
						t.Errorf("page %d lacks %q: %q", i+1, w, flat)
					}
				}
			}
		})
	}
}

// Hostile and broken files are refused with a reason, quickly and without
// a panic.
func TestExtractRefuses(t *testing.T) {
	cases := []struct {
		file, reason string
		lim          Limits
	}{
		{"bomb.pdf", "decompressed_too_large", DefaultLimits},
		{"encrypted.pdf", "encrypted", DefaultLimits},
		{"malformed.pdf", "malformed", DefaultLimits},
		{"cycle.pdf", "malformed", DefaultLimits},
		{"operands.pdf", "malformed", DefaultLimits},
		{"groff.pdf", "too_many_pages", Limits{Bytes: 1 << 20, Pages: 1, Decompressed: 1 << 20, Text: 1 << 20}},
		{"groff.pdf", "too_large", Limits{Bytes: 1000, Pages: 10, Decompressed: 1 << 20, Text: 1 << 20}},
	}
	for _, tc := range cases {
		t.Run(tc.file+"/"+tc.reason, func(t *testing.T) {
			_, err := ExtractPDF(readPDF(t, tc.file), tc.lim)
			fe, ok := err.(*FileError)
			if !ok || fe.Reason != tc.reason {
				t.Fatalf("got %v, want reason %s", err, tc.reason)
			}
		})
	}
}

func TestExtractLong(t *testing.T) {
	doc, err := ExtractPDF(readPDF(t, "long.pdf"), DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Pages) < 10 || !strings.Contains(doc.Pages[9], "Section 10") {
		t.Fatalf("%d pages; last: %.200q", len(doc.Pages), doc.Pages[len(doc.Pages)-1])
	}
}

// A PDF without a text layer says so instead of handing the model nothing.
func TestNoTextLayer(t *testing.T) {
	doc := &Doc{Pages: []string{"", ""}}
	if txt := doc.Text("scan.pdf"); !strings.Contains(txt, "2 page(s)") || !strings.Contains(txt, "no text layer") {
		t.Fatal(txt)
	}
	doc = &Doc{Pages: []string{"x"}}
	if strings.Contains(doc.Text("a.pdf"), "no text layer") {
		t.Fatal("a page with text")
	}
}

// A file that declares hundreds of millions of objects (the library sizes
// its cross-reference table from them before reading anything) is refused.
func TestExtractObjectCounts(t *testing.T) {
	g := readPDF(t, "groff.pdf")
	cases := map[string][]byte{
		"trailer /Size":   regexp.MustCompile(`/Size \d+`).ReplaceAll(g, []byte("/Size 400000000")),
		"xref subsection": regexp.MustCompile(`xref\n0 \d+\n`).ReplaceAll(g, []byte("xref\n0 400000000\n")),
	}
	for name, data := range cases {
		if bytes.Equal(data, g) {
			t.Fatalf("%s: the edit did not apply", name)
		}
		_, err := ExtractPDF(data, DefaultLimits)
		if fe, ok := err.(*FileError); !ok || fe.Reason != "malformed" || !strings.Contains(fe.Message, "400000000") {
			t.Fatalf("%s: %v", name, err)
		}
	}
}
