package demo

import (
	"bytes"
	"image"
	"image/draw"
	"image/jpeg"
	"image/png"
	"strings"
	"testing"
)

// The demo vision model reads back what DrawText drew, through PNG and a
// lossy JPEG, at several scales and offsets; a picture without the font
// reads as nothing.
func TestDemoVisionReadsDrawnText(t *testing.T) {
	lines := []string{"Invoice 2291: 3 x gateway licences, EUR 1,450.00", "", "Paid on 2026-03-14 {ref #A7-Q}"}
	want := strings.Join(lines, "\n")
	for _, tc := range []struct {
		name   string
		scale  int
		jpeg   bool
		shiftX int
		shiftY int
	}{
		{"png scale 1", 1, false, 0, 0},
		{"png scale 2 shifted", 2, false, 5, 3},
		{"jpeg scale 3", 3, true, 0, 0},
		{"jpeg scale 4 shifted", 4, true, 11, 17},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := DrawText(lines, tc.scale)
			img := image.NewGray(image.Rect(0, 0, src.Bounds().Dx()+tc.shiftX, src.Bounds().Dy()+tc.shiftY))
			draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
			draw.Draw(img, src.Bounds().Add(image.Pt(tc.shiftX, tc.shiftY)), src, image.Point{}, draw.Src)
			var buf bytes.Buffer
			if tc.jpeg {
				_ = jpeg.Encode(&buf, img, &jpeg.Options{Quality: 80})
			} else {
				_ = png.Encode(&buf, img)
			}
			got, err := ReadImage(buf.Bytes())
			if err != nil || got != want {
				t.Fatalf("read %q (%v), want %q", got, err, want)
			}
		})
	}
	var buf bytes.Buffer
	blank := image.NewGray(image.Rect(0, 0, 200, 100))
	draw.Draw(blank, blank.Bounds(), image.White, image.Point{}, draw.Src)
	_ = png.Encode(&buf, blank)
	if got, err := ReadImage(buf.Bytes()); err != nil || got != "" {
		t.Fatalf("blank page read %q %v", got, err)
	}
	if _, err := ReadImage([]byte("%PDF-1.4")); err == nil {
		t.Fatal("a non-image was read")
	}
}
