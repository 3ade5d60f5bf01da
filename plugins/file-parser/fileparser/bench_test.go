package fileparser

import (
	"fmt"
	"strings"
	"testing"
)

func BenchmarkExtractPDF(b *testing.B) {
	for _, f := range []string{"groff.pdf", "ghostscript.pdf", "fpdf-multilingual.pdf", "long.pdf", "eval/hand-weather.pdf"} {
		data := readPDF(b, f)
		b.Run(f, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ExtractPDF(data, DefaultLimits); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLayout is the text walk's cost on a page of n table cells in a
// standard font without /Widths, placed by cm and Tm (the ReportLab
// shape): the cost per cell should not grow with n.
func BenchmarkLayout(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		var c strings.Builder
		for i := 0; i < n; i++ {
			fmt.Fprintf(&c, "q 1 0 0 1 %d %d cm BT /F1 10 Tf 1 0 0 1 0 0 Tm (Cell %d) Tj ET Q\n", 72+(i%4)*120, 720-(i/4)%60*12, i)
		}
		data := textPDF(c.String(), "", "")
		b.Run(fmt.Sprintf("cells=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ExtractPDF(data, DefaultLimits); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/cell")
		})
	}
}
