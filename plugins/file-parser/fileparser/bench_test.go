package fileparser

import "testing"

func BenchmarkExtractPDF(b *testing.B) {
	for _, f := range []string{"groff.pdf", "long.pdf"} {
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
