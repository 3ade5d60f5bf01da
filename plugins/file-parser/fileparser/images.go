package fileparser

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/ledongthuc/pdf"
)

// Images of a PDF's pages, for engine vision: the image XObjects each page
// draws (directly or through a form XObject), converted to what a vision
// model takes — a JPEG (DCTDecode) as it is, a Flate-compressed gray or RGB
// image as a PNG (the compressed data itself when the PDF used PNG
// predictors, else re-encoded with image/png). Other encodings (JPEG 2000,
// CCITT fax, JBIG2) are counted as unsupported, not sent.

// ImageLimits bound the images engine vision sends.
type ImageLimits struct {
	Images int // images per file
	Bytes  int // one image, as sent (after conversion)
	Pixels int // one image's width × height, before decoding anything
}

// DefaultImageLimits: 8 images per file (the cap OpenRouter documents for
// its OCR engine), 4 MiB per image, 40 megapixels.
var DefaultImageLimits = ImageLimits{Images: 8, Bytes: 4 << 20, Pixels: 40 << 20}

// PageImage is one image a page draws, ready for an image_url part.
type PageImage struct {
	MediaType string // image/jpeg or image/png
	Data      []byte
}

// PageImages are the images of each page, in page order, and how many
// images were of an encoding the engine cannot send.
type PageImages struct {
	Pages       [][]PageImage
	Count       int
	Unsupported []string // the filters of the images left out
}

// ExtractImages returns the images each page of data draws. The PDF is
// opened and checked as ExtractPDF does (limits, encryption, page tree).
func ExtractImages(data []byte, lim Limits, il ImageLimits) (out *PageImages, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fileErr("malformed", "the PDF is malformed (%v)", short(fmt.Sprint(r)))
		}
	}()
	_, pages, err := openPDF(data, lim)
	if err != nil {
		return nil, err
	}
	out = &PageImages{Pages: make([][]PageImage, len(pages))}
	budget := lim.Decompressed
	for i, pv := range pages {
		seen := map[string]bool{}
		if err = pageImages(pv, resources(pv), data, lim, il, &budget, 0, seen, i, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// doRe finds the XObjects a content stream draws: /Name Do.
var doRe = regexp.MustCompile(`/([^\s/\[\]<>(){}%]+)\s+Do\b`)

// maxDraws bounds the Do operators read per content stream.
const maxDraws = 4096

// pageImages appends the images drawn by the content of v (a page or a
// form XObject) with resources res to out.Pages[page].
func pageImages(v, res pdf.Value, data []byte, lim Limits, il ImageLimits, budget *int, depth int, seen map[string]bool, page int, out *PageImages) error {
	if depth > 4 {
		return nil // forms inside forms inside forms: not a scan
	}
	content, err := decoded(v.Key("Contents"), v, budget, lim.Decompressed)
	if err != nil {
		return err
	}
	xobjs := res.Key("XObject")
	// A hostile page can repeat "/Im1 Do" millions of times: only the
	// first maxDraws are looked at (each name counts once anyway).
	for _, m := range doRe.FindAllSubmatch(content, maxDraws) {
		name := string(m[1])
		x := xobjs.Key(name)
		if x.Kind() != pdf.Stream {
			continue
		}
		off, _ := rawSpan(x)
		key := strconv.FormatInt(off, 10)
		if seen[key] {
			continue // drawn twice on the page (a repeated logo): sent once
		}
		seen[key] = true
		switch x.Key("Subtype").Name() {
		case "Form":
			r := x.Key("Resources")
			if r.IsNull() {
				r = res
			}
			if err := pageImages(x, r, data, lim, il, budget, depth+1, seen, page, out); err != nil {
				return err
			}
		case "Image":
			img, filter, err := convertImage(x, data, il, budget, lim.Decompressed)
			if err != nil {
				if fe, ok := err.(*FileError); ok {
					fe.Message = "page " + strconv.Itoa(page+1) + ": " + fe.Message
				}
				return err
			}
			if img == nil {
				out.Unsupported = append(out.Unsupported, filter)
				continue
			}
			if out.Count >= il.Images {
				return fileErr("too_many_images", "the PDF has more than %d images; engine vision reads at most %d per file", il.Images, il.Images)
			}
			out.Count++
			out.Pages[page] = append(out.Pages[page], *img)
		}
	}
	return nil
}

// decoded is the content of a page (contents: a stream or an array of
// them) or of a form XObject (the stream self), taken from budget.
func decoded(contents, self pdf.Value, budget *int, limit int) ([]byte, error) {
	var streams []pdf.Value
	switch {
	case self.Kind() == pdf.Stream:
		streams = []pdf.Value{self}
	case contents.Kind() == pdf.Stream:
		streams = []pdf.Value{contents}
	case contents.Kind() == pdf.Array:
		for i := 0; i < contents.Len() && i < 1024; i++ {
			streams = append(streams, contents.Index(i))
		}
	}
	var buf bytes.Buffer
	for _, s := range streams {
		if s.Kind() != pdf.Stream {
			continue
		}
		rc := s.Reader()
		n, err := io.Copy(&buf, io.LimitReader(rc, int64(*budget)+1))
		rc.Close()
		if n > int64(*budget) {
			return nil, fileErr("decompressed_too_large", "the PDF's content decompresses to more than %d bytes (a decompression bomb?)", limit)
		}
		*budget -= int(n)
		if err != nil && err != io.ErrUnexpectedEOF {
			return nil, fileErr("malformed", "a content stream cannot be decoded (%s)", short(err.Error()))
		}
		buf.WriteByte('\n')
	}
	return buf.Bytes(), nil
}

// rawSpan is where a stream's data sits in the file. The PDF library
// decodes streams only with the filters it knows (no DCTDecode) and has no
// accessor for the raw bytes, but a stream value's String form ends with
// "@<offset>"; its /Length is resolved like any key.
func rawSpan(v pdf.Value) (offset, length int64) {
	s := v.String()
	i := strings.LastIndexByte(s, '@')
	if i < 0 {
		return -1, 0
	}
	off, err := strconv.ParseInt(s[i+1:], 10, 64)
	if err != nil {
		return -1, 0
	}
	return off, v.Key("Length").Int64()
}

func rawStream(v pdf.Value, data []byte) ([]byte, error) {
	off, n := rawSpan(v)
	if off < 0 || n < 0 || off > int64(len(data)) || n > int64(len(data))-off {
		return nil, fileErr("malformed", "an image's data lies outside the file")
	}
	return data[off : off+n], nil
}

func filters(v pdf.Value) []string {
	f := v.Key("Filter")
	switch f.Kind() {
	case pdf.Name:
		return []string{f.Name()}
	case pdf.Array:
		var out []string
		for i := 0; i < f.Len() && i < 8; i++ {
			out = append(out, f.Index(i).Name())
		}
		return out
	}
	return nil
}

// components is the number of colour components of an image's colour
// space: 1 (gray) or 3 (RGB); 0 for one the engine does not convert
// (CMYK, Indexed, Lab, …).
func components(v pdf.Value) int {
	if v.Key("ImageMask").Bool() {
		return 1
	}
	cs := v.Key("ColorSpace")
	name := cs.Name()
	if cs.Kind() == pdf.Array && cs.Len() > 0 {
		name = cs.Index(0).Name()
		if name == "ICCBased" && cs.Len() > 1 {
			switch cs.Index(1).Key("N").Int64() {
			case 1:
				return 1
			case 3:
				return 3
			}
			return 0
		}
	}
	switch name {
	case "DeviceGray", "CalGray", "G":
		return 1
	case "DeviceRGB", "CalRGB", "RGB":
		return 3
	}
	return 0
}

// convertImage makes an image XObject something a vision model takes, or
// returns nil and the filter that stopped it.
func convertImage(x pdf.Value, data []byte, il ImageLimits, budget *int, limit int) (*PageImage, string, error) {
	w, h := int(x.Key("Width").Int64()), int(x.Key("Height").Int64())
	if w <= 0 || h <= 0 || w > 1<<16 || h > 1<<16 {
		return nil, "", fileErr("malformed", "an image has no sensible size (%d×%d)", w, h)
	}
	if w*h > il.Pixels {
		return nil, "", fileErr("image_too_large", "an image is %d×%d pixels, over the limit of %d", w, h, il.Pixels)
	}
	fs := filters(x)
	raw, err := rawStream(x, data)
	if err != nil {
		return nil, "", err
	}
	var img *PageImage
	switch {
	case len(fs) == 1 && fs[0] == "DCTDecode":
		if !bytes.HasPrefix(raw, []byte{0xff, 0xd8}) {
			return nil, "", fileErr("malformed", "a DCTDecode image is not a JPEG")
		}
		if components(x) == 0 {
			// A CMYK JPEG (Adobe's, often inverted) is one many vision
			// models cannot decode: left out like the other encodings.
			return nil, "DCTDecode (colour space)", nil
		}
		img = &PageImage{MediaType: "image/jpeg", Data: raw}
	case len(fs) == 1 && fs[0] == "FlateDecode":
		if img, err = flateImage(x, raw, w, h, budget, limit); err != nil || img == nil {
			return nil, "FlateDecode (colour space or depth)", err
		}
	default:
		return nil, strings.Join(fs, "+"), nil
	}
	if len(img.Data) > il.Bytes {
		return nil, "", fileErr("image_too_large", "an image is %d bytes as sent, over the limit of %d", len(img.Data), il.Bytes)
	}
	return img, "", nil
}

// flateImage converts a Flate-compressed gray or RGB image to a PNG: with
// PNG predictors (10-15) the compressed data already is a PNG's IDAT, so
// it is wrapped as it is; without, it is inflated row by row (within the
// decompressed-bytes budget) into a new IDAT. Depths 8 and (gray) 1 are
// converted; nil for anything else.
func flateImage(x pdf.Value, raw []byte, w, h int, budget *int, limit int) (*PageImage, error) {
	comps := components(x)
	bpc := int(x.Key("BitsPerComponent").Int64())
	if x.Key("ImageMask").Bool() {
		bpc = 1
	}
	if comps == 0 || (bpc != 8 && !(bpc == 1 && comps == 1)) {
		return nil, nil
	}
	dp := x.Key("DecodeParms")
	if dp.Kind() == pdf.Array && dp.Len() > 0 {
		dp = dp.Index(0)
	}
	decode := x.Key("Decode")
	inverted := decode.Kind() == pdf.Array && decode.Len() >= 2 && decode.Index(0).Float64() > decode.Index(1).Float64()
	if pred := dp.Key("Predictor").Int64(); pred >= 10 && !inverted {
		colors, cols, pbpc := dp.Key("Colors").Int64(), dp.Key("Columns").Int64(), dp.Key("BitsPerComponent").Int64()
		if (colors == 0 || int(colors) == comps) && (cols == 0 || int(cols) == w) && (pbpc == 0 || int(pbpc) == bpc) {
			return &PageImage{MediaType: "image/png", Data: wrapPNG(raw, w, h, bpc, comps)}, nil
		}
		return nil, nil
	} else if pred > 1 {
		return nil, nil
	}
	// Rows are streamed from the PDF's zlib data into the PNG's (filter
	// type 0 before each): PNG's gray (1 or 8 bits, 0 black) and RGB
	// samples are the PDF's, so no pixel buffer is held, only one row.
	rowBytes := (w*comps*bpc + 7) / 8
	need := rowBytes * h
	if need > *budget {
		return nil, fileErr("decompressed_too_large", "the PDF's images decompress to more than %d bytes", limit)
	}
	zr, err := zlib.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, fileErr("malformed", "an image's Flate data is corrupt (%s)", short(err.Error()))
	}
	var idat bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&idat, zlib.BestSpeed)
	row := make([]byte, 1+rowBytes) // row[0]: PNG filter type None
	for y := 0; y < h; y++ {
		if _, err := io.ReadFull(zr, row[1:]); err != nil {
			return nil, fileErr("malformed", "an image's Flate data is short or corrupt (%s)", short(err.Error()))
		}
		if inverted {
			for i := 1; i < len(row); i++ {
				row[i] = ^row[i]
			}
		}
		zw.Write(row)
	}
	zw.Close()
	*budget -= need
	return &PageImage{MediaType: "image/png", Data: wrapPNG(idat.Bytes(), w, h, bpc, comps)}, nil
}

// wrapPNG makes a PNG file of PNG-predicted zlib data (a PDF image with
// Predictor 10-15 stores exactly a PNG's IDAT stream).
func wrapPNG(idat []byte, w, h, bpc, comps int) []byte {
	colorType := byte(0)
	if comps == 3 {
		colorType = 2
	}
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], uint32(w))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(h))
	ihdr[8], ihdr[9] = byte(bpc), colorType
	chunk(&b, "IHDR", ihdr)
	chunk(&b, "IDAT", idat)
	chunk(&b, "IEND", nil)
	return b.Bytes()
}

func chunk(b *bytes.Buffer, typ string, data []byte) {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(data)))
	b.Write(n[:])
	crc := crc32.NewIEEE()
	crc.Write([]byte(typ))
	crc.Write(data)
	b.WriteString(typ)
	b.Write(data)
	binary.BigEndian.PutUint32(n[:], crc.Sum32())
	b.Write(n[:])
}
