package fileparser

import (
	"fmt"
	"strings"
	"testing"
)

// xrefPDF is a one-page PDF saying "Hello world" whose trailer has the
// given extra entries (%d in them is replaced by the xref's own offset),
// followed by the sections of extra (each an "xref … trailer << … >>"
// with %d the first section's offset).
func xrefPDF(trailerExtra string, updates ...string) []byte {
	objs := []string{
		"1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n",
		"2 0 obj\n<< /Type /Pages /Kids [3 0 R] /Count 1 >>\nendobj\n",
		"3 0 obj\n<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>\nendobj\n",
		"4 0 obj\n<< /Length 44 >>\nstream\nBT /F1 12 Tf 72 712 Td (Hello world) Tj ET\nendstream\nendobj\n",
	}
	var b strings.Builder
	b.WriteString("%PDF-1.4\n")
	offs := []int{}
	for _, o := range objs {
		offs = append(offs, b.Len())
		b.WriteString(o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, o := range offs {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R%s >>\n", len(objs)+1, strings.ReplaceAll(trailerExtra, "%d", fmt.Sprint(xref)))
	last := xref
	for _, u := range updates {
		last = b.Len()
		b.WriteString(strings.ReplaceAll(u, "%d", fmt.Sprint(xref)))
	}
	fmt.Fprintf(&b, "startxref\n%d\n%%%%EOF\n", last)
	return []byte(b.String())
}

// TestXrefLoopRefused (issue 31, item 1): a /Prev chain that comes back
// to a section already read is refused at once; before, the PDF library
// followed it until the call's deadline. A chain that ends, however the
// dictionary is written, still parses.
func TestXrefLoopRefused(t *testing.T) {
	update := "xref\n0 1\n0000000000 65535 f \ntrailer\n<< /Size 5 /Root 1 0 R /Prev %d >>\n"
	for _, tc := range []struct {
		name string
		pdf  []byte
		loop bool
	}{
		{"one section", xrefPDF(""), false},
		{"an update pointing back", xrefPDF("", update), false},
		{"/Prev in a nested dictionary and a string", xrefPDF(" /Info << /Prev %d >> /ID [(/Prev %d >>)]", update), false},
		{"its own /Prev", xrefPDF(" /Prev %d"), true},
		{"an update whose base points at it", xrefPDF(" /Prev 9999999", update), false}, // out of the file: the library's error
		{"two sections pointing at each other", loopOfTwo(), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := ExtractPDF(tc.pdf, DefaultLimits)
			if tc.loop {
				if fe, ok := err.(*FileError); !ok || fe.Reason != "malformed" || !strings.Contains(fe.Message, "loop") {
					t.Fatalf("got %v, want the loop refused", err)
				}
				return
			}
			if err := checkXrefChain(tc.pdf); err != nil {
				t.Fatalf("a chain that ends refused: %v", err)
			}
			if err == nil && (len(doc.Pages) != 1 || !strings.Contains(doc.Pages[0], "Hello world")) {
				t.Fatalf("pages %q", doc.Pages)
			}
		})
	}
}

// loopOfTwo is a file whose base section's /Prev names the update, whose
// /Prev names the base.
func loopOfTwo() []byte {
	// The base's /Prev is written as a placeholder of the width of the
	// offset that replaces it, so no offset moves.
	s := string(xrefPDF(" /Prev XXXXXXXXXX", "xref\n0 1\n0000000000 65535 f \ntrailer\n<< /Size 5 /Root 1 0 R /Prev %d >>\n"))
	upd := strings.LastIndex(s, "xref\n0 1\n")
	return []byte(strings.Replace(s, "XXXXXXXXXX", fmt.Sprintf("%010d", upd), 1))
}

// FuzzXrefChain: whatever the bytes, the chain check ends, reading a
// bounded number of bytes, and never panics.
func FuzzXrefChain(f *testing.F) {
	f.Add(xrefPDF(" /Prev %d"))
	f.Add(loopOfTwo())
	f.Add([]byte("startxref 0 << /Prev 0 (>>) % >>\n >>"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = checkXrefChain(data)
	})
}
