//go:build ignore

// Makes the page images of the scanned test PDFs: text drawn in the demo
// vision model's bitmap font (host/demo.DrawText: X11 misc-fixed 7x13,
// each font pixel a 2x2 block), page 1 as a JPEG and page 2 as a PNG;
// img2pdf and Ghostscript then wrap them in PDFs (SOURCES.md). It also
// writes scan-mixed.pdf itself: page 1 a text layer (Helvetica), page 2 an
// RGB image, Flate-compressed without a predictor, dark blue text on a
// cream page. Run from the repository root:
//
//	go run plugins/file-parser/testdata/gen/scan.go DIR
package main

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"image/color"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"

	"github.com/switchyard/switchyard/host/demo"
)

var pages = [][]string{
	{
		"ACME Freight Ltd - scanned delivery note",
		"",
		"Note no. 4471, dated 2026-02-17",
		"12 pallets of solar panels to Rotterdam",
		"Received in good order by J. Okafor",
	},
	{
		"Page 2 - handling instructions",
		"",
		"Keep dry. Stack at most 3 high.",
		"Fragile glass: total weight 2,340 kg",
	},
}

func main() {
	dir := os.Args[1]
	f, err := os.Create(filepath.Join(dir, "scan-page1.jpg"))
	if err != nil {
		panic(err)
	}
	if err := jpeg.Encode(f, demo.DrawText(pages[0], 2), &jpeg.Options{Quality: 85}); err != nil {
		panic(err)
	}
	f.Close()
	f, err = os.Create(filepath.Join(dir, "scan-page2.png"))
	if err != nil {
		panic(err)
	}
	if err := png.Encode(f, demo.DrawText(pages[1], 2)); err != nil {
		panic(err)
	}
	f.Close()
	if err := os.WriteFile(filepath.Join(dir, "scan-mixed.pdf"), mixed(), 0o644); err != nil {
		panic(err)
	}
}

var mixedPage2 = []string{
	"Appendix B (scanned)",
	"",
	"Signed: M. Lindqvist, 2026-04-02",
}

// mixed writes a two-page PDF by hand: a text page and an RGB image page.
func mixed() []byte {
	g := demo.DrawText(mixedPage2, 2)
	w, h := g.Bounds().Dx(), g.Bounds().Dy()
	ink, paper := color.RGBA{0x10, 0x20, 0x70, 0xff}, color.RGBA{0xfa, 0xf3, 0xe0, 0xff}
	var raw bytes.Buffer
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			c := paper
			if g.GrayAt(x, y).Y < 128 {
				c = ink
			}
			raw.Write([]byte{c.R, c.G, c.B})
		}
	}
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write(raw.Bytes())
	zw.Close()
	text := "BT /F1 14 Tf 72 720 Td (Cover page: the delivery note follows) Tj ET"
	draw := fmt.Sprintf("q %d 0 0 %d 36 400 cm /Im1 Do Q", w/2, h/2)
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R 4 0 R] /Count 2 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> /Contents 6 0 R >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /XObject << /Im1 7 0 R >> >> /Contents 8 0 R >>",
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
		fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(text)+1, text),
		fmt.Sprintf("<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceRGB /BitsPerComponent 8 /Filter /FlateDecode /Length %d >>\nstream\n%s\nendstream", w, h, z.Len(), z.String()),
		fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(draw)+1, draw),
	}
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	offs := make([]int, len(objs))
	for i, o := range objs {
		offs[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, o := range offs {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, xref)
	return b.Bytes()
}
