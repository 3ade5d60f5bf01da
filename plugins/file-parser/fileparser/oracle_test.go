package fileparser

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The evaluation set (testdata/eval, see its README) compared with
// poppler's pdftotext, the test oracle: word order and word boundaries
// (a word-level edit distance ratio) and line breaks (the F1 of the breaks
// after words both texts share), per producer, for the tuning part and the
// held-out part apart. pdftotext runs in -layout mode: its default mode
// reads a table column by column ("Station Aberdeen Bristol …"), -layout
// keeps a table's rows, as a reader reads them. Two-column documents
// (twocol-*) are compared with the default mode, which reads a page's
// columns one after the other (-layout interleaves them line by line).
//
// The figures are printed (make bench shows them); the test fails when a
// producer falls below minWords or minLines.
const (
	minWords = 0.97
	minLines = 0.90
)

type score struct {
	words, lines float64
	files        int
}

func TestPdftotextAgreement(t *testing.T) {
	if _, err := exec.LookPath("pdftotext"); err != nil {
		t.Skip("pdftotext (Debian poppler-utils) is not installed: the comparison with the oracle is skipped; scripts/install-deps.sh installs it")
	}
	for _, part := range []string{"eval", "eval/heldout"} {
		files, _ := filepath.Glob(filepath.Join("..", "testdata", part, "*.pdf"))
		if len(files) == 0 {
			t.Fatalf("no PDFs in testdata/%s", part)
		}
		byProducer := map[string]*score{}
		for _, file := range files {
			// The producer is the name's first part: the last
			// program that wrote the file (gs-groff-…: Ghostscript).
			producer, rest, _ := strings.Cut(filepath.Base(file), "-")
			// Two-column pages (twocol-PRODUCER-…) are read in
			// pdftotext's default mode, its reading order, which
			// reads column by column; -layout prints the columns
			// side by side, line by line.
			mode := []string{"-layout"}
			if producer == "twocol" {
				p, _, _ := strings.Cut(rest, "-")
				producer, mode = "twocol-"+p, nil
			}
			out, err := exec.Command("pdftotext", append(mode, "-enc", "UTF-8", file, "-")...).Output()
			if err != nil {
				t.Fatalf("pdftotext %s: %v", file, err)
			}
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			doc, err := ExtractPDF(data, DefaultLimits)
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			oracle := strings.Split(strings.TrimRight(string(out), "\f\n"), "\f")
			if len(oracle) != len(doc.Pages) {
				t.Errorf("%s: %d pages, pdftotext %d", file, len(doc.Pages), len(oracle))
				continue
			}
			ws, ls := compareText(strings.Join(doc.Pages, "\n"), strings.Join(oracle, "\n"))
			if testing.Verbose() && (ws < 1 || ls < 1) {
				t.Logf("%s: words %.3f lines %.3f\n--- ours\n%s\n--- pdftotext\n%s", file, ws, ls, strings.Join(doc.Pages, "\n\f\n"), out)
			}
			s := byProducer[producer]
			if s == nil {
				s = &score{}
				byProducer[producer] = s
			}
			s.words += ws
			s.lines += ls
			s.files++
		}
		var names []string
		for p := range byProducer {
			names = append(names, p)
		}
		sort.Strings(names)
		for _, p := range names {
			s := byProducer[p]
			w, l := s.words/float64(s.files), s.lines/float64(s.files)
			fmt.Printf("file-parser pdf-text vs pdftotext  %-8s %-12s files %d  words %.3f  line breaks %.3f\n", strings.TrimPrefix(part, "eval/"), p, s.files, w, l)
			// The held-out two-column documents are reported, not
			// gated: there pdftotext's reading order itself departs
			// from column order (it reads paragraphs that end on the
			// same baseline in both columns as a grid, row by row,
			// and places a page's footer between the columns on one
			// page and after them on the next: testdata/eval/README.md).
			if strings.HasPrefix(p, "twocol-") && part != "eval" {
				continue
			}
			if w < minWords || l < minLines {
				t.Errorf("%s %s: word agreement %.3f (min %.2f), line breaks %.3f (min %.2f)", part, p, w, minWords, l, minLines)
			}
		}
	}
}

// compareText scores text against the oracle: 1 - the word-level edit
// distance over the longer word count, and the F1 of the line breaks (a
// break agrees when both end a line after the same word, as the edit
// distance's alignment pairs them).
func compareText(text, oracle string) (words, lines float64) {
	a, abreak := wordsAndBreaks(text)
	b, bbreak := wordsAndBreaks(oracle)
	n, m := len(a), len(b)
	if n == 0 && m == 0 {
		return 1, 1
	}
	// Edit distance with a backtrace to pair equal words.
	d := make([][]int32, n+1)
	for i := range d {
		d[i] = make([]int32, m+1)
		d[i][0] = int32(i)
	}
	for j := 0; j <= m; j++ {
		d[0][j] = int32(j)
	}
	for i := 1; i <= n; i++ {
		for j := 1; j <= m; j++ {
			c := d[i-1][j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			d[i][j] = min(c, d[i-1][j]+1, d[i][j-1]+1)
		}
	}
	words = 1 - float64(d[n][m])/float64(max(n, m))
	// A break agrees when both texts end a line after the same
	// (paired) word; every break either text makes counts against it.
	var both, ours, theirs int
	for _, x := range abreak {
		if x {
			ours++
		}
	}
	for _, x := range bbreak {
		if x {
			theirs++
		}
	}
	for i, j := n, m; i > 0 && j > 0; {
		switch {
		case a[i-1] == b[j-1] && d[i][j] == d[i-1][j-1]:
			if abreak[i-1] && bbreak[j-1] {
				both++
			}
			i, j = i-1, j-1
		case d[i][j] == d[i-1][j-1]+1:
			i, j = i-1, j-1
		case d[i][j] == d[i-1][j]+1:
			i--
		default:
			j--
		}
	}
	if ours+theirs == 0 {
		return words, 1
	}
	return words, 2 * float64(both) / float64(ours+theirs)
}

// wordsAndBreaks splits text into words and marks those a line ends with
// (the last word of the text excepted).
func wordsAndBreaks(text string) ([]string, []bool) {
	var ws []string
	var br []bool
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		ws = append(ws, f...)
		for range f {
			br = append(br, false)
		}
		br[len(br)-1] = true
	}
	if len(br) > 0 {
		br[len(br)-1] = false
	}
	return ws, br
}
