package fileparser

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/host/demo"
)

// The images of scanned PDFs from three producers come out in page order,
// as JPEG or PNG, and carry the pixels: the demo vision model reads the
// text drawn into them back.
func TestExtractImages(t *testing.T) {
	cases := []struct {
		file  string
		types []string   // media type of each page's image ("" = none)
		want  [][]string // text each page's image must read as
	}{
		{"scan-img2pdf.pdf", []string{"image/jpeg", "image/png"}, [][]string{{"Note no. 4471, dated 2026-02-17"}, {"Fragile glass: total weight 2,340 kg"}}},
		{"scan-gs.pdf", []string{"image/jpeg"}, [][]string{{"Received in good order by J. Okafor"}}},
		{"scan-mixed.pdf", []string{"", "image/png"}, [][]string{nil, {"Signed: M. Lindqvist, 2026-04-02"}}},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("..", "testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			imgs, err := ExtractImages(data, DefaultLimits, DefaultImageLimits)
			if err != nil {
				t.Fatal(err)
			}
			if len(imgs.Pages) != len(tc.types) {
				t.Fatalf("%d pages, want %d", len(imgs.Pages), len(tc.types))
			}
			for i, typ := range tc.types {
				if typ == "" {
					if len(imgs.Pages[i]) != 0 {
						t.Fatalf("page %d: %d images, want none", i+1, len(imgs.Pages[i]))
					}
					continue
				}
				if len(imgs.Pages[i]) != 1 || imgs.Pages[i][0].MediaType != typ {
					t.Fatalf("page %d: %+v", i+1, imgs.Pages[i])
				}
				text, err := demo.ReadImage(imgs.Pages[i][0].Data)
				if err != nil {
					t.Fatalf("page %d: %v", i+1, err)
				}
				for _, w := range tc.want[i] {
					if !strings.Contains(text, w) {
						t.Fatalf("page %d read %q, want %q", i+1, text, w)
					}
				}
			}
		})
	}
}

// More images than the limit is a refusal, not a silent cut.
func TestExtractImagesLimit(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "testdata", "scan-img2pdf.pdf"))
	if err != nil {
		t.Fatal(err)
	}
	il := DefaultImageLimits
	il.Images = 1
	if _, err := ExtractImages(data, DefaultLimits, il); err == nil || err.(*FileError).Reason != "too_many_images" {
		t.Fatalf("%v", err)
	}
	il = DefaultImageLimits
	il.Bytes = 1000
	if _, err := ExtractImages(data, DefaultLimits, il); err == nil || err.(*FileError).Reason != "image_too_large" {
		t.Fatalf("%v", err)
	}
}
