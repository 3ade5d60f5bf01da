package fileparser

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"image/png"
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

// imagePDF is a one-page PDF drawing one image XObject with the given
// dictionary entries and stream data.
func imagePDF(dict string, data []byte) []byte {
	draw := "q 100 0 0 100 0 0 cm /Im1 Do Q"
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /XObject << /Im1 5 0 R >> >> /Contents 4 0 R >>",
		fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(draw)+1, draw),
		fmt.Sprintf("<< /Type /XObject /Subtype /Image %s /Length %d >>\nstream\n%s\nendstream", dict, len(data), data),
	}
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
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

func deflate(b []byte) []byte {
	var z bytes.Buffer
	w := zlib.NewWriter(&z)
	w.Write(b)
	w.Close()
	return z.Bytes()
}

// Hostile or odd images are a clear refusal (or left out), never a
// decoded bomb: the pixel limit is checked before anything is inflated,
// inflating stops at the decompressed-bytes budget, short data and a JPEG
// that is not one are malformed, and encodings the engine does not send
// are reported by filter.
func TestExtractImagesHostile(t *testing.T) {
	gray := bytes.Repeat([]byte{0x80}, 64*64)
	cases := []struct {
		name, dict  string
		data        []byte
		lim         Limits
		reason      string // "" = extracted
		unsupported string
	}{
		{"gray flate", "/Width 64 /Height 64 /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /FlateDecode", deflate(gray), DefaultLimits, "", ""},
		{"1-bit gray, inverted", "/Width 64 /Height 64 /ColorSpace /DeviceGray /BitsPerComponent 1 /Decode [1 0] /Filter /FlateDecode", deflate(make([]byte, 8*64)), DefaultLimits, "", ""},
		{"pixel bomb", "/Width 20000 /Height 20000 /ColorSpace /DeviceRGB /BitsPerComponent 8 /Filter /FlateDecode", deflate(gray), DefaultLimits, "image_too_large", ""},
		{"inflate past the budget", "/Width 4000 /Height 4000 /ColorSpace /DeviceRGB /BitsPerComponent 8 /Filter /FlateDecode", deflate(make([]byte, 4000*4000*3)), Limits{Bytes: 8 << 20, Pages: 10, Decompressed: 1 << 20, Text: 1 << 20}, "decompressed_too_large", ""},
		{"short flate data", "/Width 64 /Height 64 /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /FlateDecode", deflate(gray[:100]), DefaultLimits, "malformed", ""},
		{"a DCT image that is not a JPEG", "/Width 64 /Height 64 /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /DCTDecode", []byte("not a jpeg"), DefaultLimits, "malformed", ""},
		{"no size", "/ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /DCTDecode", []byte{0xff, 0xd8}, DefaultLimits, "malformed", ""},
		{"JPEG 2000", "/Width 64 /Height 64 /ColorSpace /DeviceRGB /BitsPerComponent 8 /Filter /JPXDecode", []byte("jp2"), DefaultLimits, "", "JPXDecode"},
		{"CMYK JPEG", "/Width 64 /Height 64 /ColorSpace /DeviceCMYK /BitsPerComponent 8 /Filter /DCTDecode", []byte{0xff, 0xd8, 0xff, 0xee}, DefaultLimits, "", "DCTDecode (colour space)"},
		{"CMYK flate", "/Width 64 /Height 64 /ColorSpace /DeviceCMYK /BitsPerComponent 8 /Filter /FlateDecode", deflate(gray), DefaultLimits, "", "FlateDecode (colour space or depth)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			imgs, err := ExtractImages(imagePDF(tc.dict, tc.data), tc.lim, DefaultImageLimits)
			if tc.reason != "" {
				fe, _ := err.(*FileError)
				if fe == nil || fe.Reason != tc.reason || !strings.HasPrefix(fe.Message, "page 1: ") {
					t.Fatalf("err %v, want %s", err, tc.reason)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.unsupported != "" {
				if imgs.Count != 0 || len(imgs.Unsupported) != 1 || imgs.Unsupported[0] != tc.unsupported {
					t.Fatalf("%+v", imgs)
				}
				return
			}
			if imgs.Count != 1 || imgs.Pages[0][0].MediaType != "image/png" {
				t.Fatalf("%+v", imgs)
			}
			im, err := png.Decode(bytes.NewReader(imgs.Pages[0][0].Data))
			if err != nil || im.Bounds().Dx() != 64 || im.Bounds().Dy() != 64 {
				t.Fatalf("png %v %v", err, im)
			}
			// The inverted 1-bit image of zeros is white.
			if tc.name == "1-bit gray, inverted" {
				if r, _, _, _ := im.At(10, 10).RGBA(); r != 0xffff {
					t.Fatalf("pixel %v", im.At(10, 10))
				}
			}
		})
	}
}

// A page that draws its image a million times sends it once. (The module
// looks at the first maxDraws Do operators of a stream, so such a page's
// matches cannot exhaust its memory; natively this checks the result.)
func TestExtractImagesRepeatedDraws(t *testing.T) {
	data := imagePDF("/Width 64 /Height 64 /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /FlateDecode", deflate(bytes.Repeat([]byte{0x80}, 64*64)))
	draws := deflate(bytes.Repeat([]byte("/Im1 Do\n"), 1<<20))
	// Swap the page's content for the compressed million draws.
	draw := "q 100 0 0 100 0 0 cm /Im1 Do Q"
	old := fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(draw)+1, draw)
	if !bytes.Contains(data, []byte(old)) {
		t.Fatal("fixture changed")
	}
	data = bytes.Replace(data, []byte(old), []byte(fmt.Sprintf("<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream", len(draws), draws)), 1)
	data = fixXref(data)
	imgs, err := ExtractImages(data, DefaultLimits, DefaultImageLimits)
	if err != nil || imgs.Count != 1 {
		t.Fatalf("%v %+v", err, imgs)
	}
}

// fixXref rewrites a test PDF's cross-reference table after an edit.
func fixXref(data []byte) []byte {
	head := data[:bytes.Index(data, []byte("xref\n"))]
	var offs []int
	for i := 1; ; i++ {
		o := bytes.Index(head, []byte(fmt.Sprintf("\n%d 0 obj\n", i)))
		if o < 0 {
			break
		}
		offs = append(offs, o+1)
	}
	var b bytes.Buffer
	b.Write(head)
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(offs)+1)
	for _, o := range offs {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(offs)+1, xref)
	return b.Bytes()
}
