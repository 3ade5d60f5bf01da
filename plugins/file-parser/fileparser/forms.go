package fileparser

import (
	"strings"

	"github.com/ledongthuc/pdf"
)

// maxAnnots bounds the annotations read on one page.
const maxAnnots = 10_000

// formFields lists the values of the form fields shown on the page
// (AcroForm widget annotations, in the order of the page's /Annots) as
// "name: value" lines. A filled-in form keeps its answers in the fields'
// /V, not in the page's content, so without this the answers were lost.
// An unticked box (/Off) and an empty field are left out.
func formFields(page pdf.Value) string {
	annots := page.Key("Annots")
	n := min(annots.Len(), maxAnnots)
	var lines []string
	seen := map[string]bool{}
	for i := 0; i < n; i++ {
		a := annots.Index(i)
		if a.Key("Subtype").Name() != "Widget" {
			continue
		}
		name, v := fieldOf(a)
		text := fieldValue(v)
		if text == "" {
			continue
		}
		line := text
		if name != "" {
			line = name + ": " + text
		}
		// The widgets of one radio group or of a field shown twice
		// share their field's value: one line.
		if !seen[line] {
			seen[line] = true
			lines = append(lines, line)
		}
	}
	return strings.Join(lines, "\n")
}

// fieldOf is the widget's field's full name (its /T and its ancestors',
// joined with dots, as the standard names fields) and value (the nearest
// /V, fields inheriting it from their parent).
func fieldOf(a pdf.Value) (string, pdf.Value) {
	var parts []string
	var v pdf.Value
	x := a
	for d := 0; d < maxDepth && x.Kind() == pdf.Dict; d++ {
		if t := x.Key("T"); t.Kind() == pdf.String {
			parts = append(parts, cleanGlyph(t.Text()))
		}
		if v.IsNull() {
			v = x.Key("V")
		}
		x = x.Key("Parent")
	}
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return strings.Join(parts, "."), v
}

// fieldValue is a field value as text: a text field's string, a choice's
// string or strings, a check box's or radio button's state name.
func fieldValue(v pdf.Value) string {
	switch v.Kind() {
	case pdf.String:
		return strings.TrimSpace(cleanLines(v.Text()))
	case pdf.Name:
		if n := v.Name(); n != "Off" {
			return n
		}
	case pdf.Array:
		var vs []string
		for i := 0; i < min(v.Len(), maxAnnots); i++ {
			if t := fieldValue(v.Index(i)); t != "" {
				vs = append(vs, t)
			}
		}
		return strings.Join(vs, ", ")
	}
	return ""
}

// cleanLines cleans a multi-line text field's value, keeping its line
// breaks (a CR, as forms write them, becomes a newline).
func cleanLines(s string) string {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = cleanGlyph(l)
	}
	return strings.Join(lines, "\n")
}
