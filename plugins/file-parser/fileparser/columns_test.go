package fileparser

import (
	"fmt"
	"strings"
	"testing"
)

// rowWise draws two columns the way a generator that writes by baseline
// does: each row's left line, then its right line on the same baseline
// (x 72 and 330), with a title across the top.
func rowWise(left, right []string) string {
	var b strings.Builder
	b.WriteString("BT /F1 16 Tf 1 0 0 1 72 740 Tm (A title across the page) Tj ET ")
	for i := range max(len(left), len(right)) {
		y := 708 - 12*i
		if i < len(left) {
			fmt.Fprintf(&b, "BT /F1 10 Tf 1 0 0 1 72 %d Tm (%s) Tj ET ", y, left[i])
		}
		if i < len(right) {
			fmt.Fprintf(&b, "BT /F1 10 Tf 1 0 0 1 330 %d Tm (%s) Tj ET ", y, right[i])
		}
	}
	return b.String()
}

// Two columns of prose drawn row by row are read column by column; a
// table (short cells in wide columns) keeps its rows, however many.
func TestColumns(t *testing.T) {
	var left, right []string
	for i := range 8 {
		left = append(left, fmt.Sprintf("left column line %d of the first article here", i))
		right = append(right, fmt.Sprintf("right column line %d of the second story too", i))
	}
	doc, err := ExtractPDF(textPDF(rowWise(left, right), "", ""), DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	want := "A title across the page\n\n" + strings.Join(left, "\n") + "\n\n" + strings.Join(right, "\n")
	if doc.Pages[0] != want {
		t.Errorf("two columns:\ngot  %q\nwant %q", doc.Pages[0], want)
	}

	// A table of two columns, 10 rows: cells are short, rows kept.
	var cells, rows []string
	for i := range 10 {
		cells = append(cells, fmt.Sprintf("Station %d", i))
		rows = append(rows, fmt.Sprintf("%d.5 mm", i))
	}
	doc, err = ExtractPDF(textPDF(rowWise(cells, rows), "", ""), DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(doc.Pages[0], "Station 0 0.5 mm\nStation 1 1.5 mm\n") {
		t.Errorf("a table's rows were not kept:\n%s", doc.Pages[0])
	}

	// Too few lines a side to call it columns: stream order stands.
	doc, err = ExtractPDF(textPDF(rowWise(left[:3], right[:3]), "", ""), DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(doc.Pages[0], left[0]+" "+right[0]) {
		t.Errorf("three lines a side were rearranged:\n%s", doc.Pages[0])
	}
}
