package demo

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"strings"

	"golang.org/x/image/font/basicfont"
)

// The demo's vision model. It has no neural network: it reads text drawn in
// one known bitmap font — the public-domain X11 "misc-fixed" 7×13 font
// (golang.org/x/image/font/basicfont.Face7x13, printable ASCII) — dark on a
// light background, each pixel of the font scaled to a k×k block (k = 1 to
// 8), the characters on a grid of 7×13 cells anchored anywhere in the
// image. That is what DrawText makes, and what the file-parser's test
// scans are made of (plugins/file-parser/testdata/SOURCES.md). It finds
// the scale and the grid by trying each, reads each cell by template
// matching (the nearest glyph, so a JPEG's noise does not matter) and
// answers the text it read. Any other picture reads as nothing, which is
// how a test knows an image reached it. Honest, offline, deterministic: a
// demo of the plumbing, not OCR.

const (
	cellW, cellH = 7, 13 // a glyph's advance and line height
	glyphW       = 6     // its drawn width (the 7th column is the gap)
	maxScale     = 8
	// maxPixels bounds the images the demo reads (2048×2048): its search
	// for the grid costs a few passes over the image per scale, seconds
	// at this size.
	maxPixels = 1 << 22
)

// glyphKey is a cell's pixels, one byte per row (6 bits used).
type glyphKey [cellH]byte

var (
	glyphs     map[glyphKey]rune
	glyphList  []glyphEntry
	errNoImage = errors.New("not a JPEG or PNG image")
)

type glyphEntry struct {
	key glyphKey
	r   rune
	ink int
}

func init() {
	f := basicfont.Face7x13
	glyphs = map[glyphKey]rune{}
	for _, rg := range f.Ranges {
		for r := rg.Low; r < rg.High; r++ {
			if r == ' ' || r > '~' {
				continue // blank cells are spaces; U+FFFD is not text
			}
			var k glyphKey
			y0 := (int(r-rg.Low) + rg.Offset) * cellH
			ink := 0
			for y := 0; y < cellH; y++ {
				for x := 0; x < glyphW; x++ {
					if _, _, _, a := f.Mask.At(x, y0+y).RGBA(); a > 0x7fff {
						k[y] |= 1 << x
						ink++
					}
				}
			}
			if _, dup := glyphs[k]; !dup {
				glyphs[k] = r
				glyphList = append(glyphList, glyphEntry{k, r, ink})
			}
		}
	}
}

// DrawText renders lines the way the demo vision model reads them: black
// on white, each font pixel a scale×scale block, one blank cell of margin
// around the text. Characters the font lacks are drawn as '?'.
func DrawText(lines []string, scale int) *image.Gray {
	scale = min(max(scale, 1), maxScale)
	cols := 0
	for _, l := range lines {
		cols = max(cols, len([]rune(l)))
	}
	img := image.NewGray(image.Rect(0, 0, (cols+2)*cellW*scale, (len(lines)+2)*cellH*scale))
	for i := range img.Pix {
		img.Pix[i] = 0xff
	}
	f := basicfont.Face7x13
	for row, l := range lines {
		for col, r := range []rune(l) {
			if r == ' ' {
				continue
			}
			if r < '!' || r > '~' {
				r = '?'
			}
			y0 := (int(r-f.Ranges[0].Low) + f.Ranges[0].Offset) * cellH
			for y := 0; y < cellH; y++ {
				for x := 0; x < glyphW; x++ {
					if _, _, _, a := f.Mask.At(x, y0+y).RGBA(); a <= 0x7fff {
						continue
					}
					px := ((col+1)*cellW + x) * scale
					py := ((row+1)*cellH + y) * scale
					for dy := 0; dy < scale; dy++ {
						for dx := 0; dx < scale; dx++ {
							img.SetGray(px+dx, py+dy, color.Gray{})
						}
					}
				}
			}
		}
	}
	return img
}

// ReadImage decodes a JPEG or PNG and returns the text the demo reads in
// it ("" when it finds none).
func ReadImage(data []byte) (string, error) {
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return "", errNoImage
	}
	if cfg.Width*cfg.Height > maxPixels {
		return "", errors.New("image too large for the demo")
	}
	var img image.Image
	if bytes.HasPrefix(data, []byte("\x89PNG")) {
		img, err = png.Decode(bytes.NewReader(data))
	} else {
		img, err = jpeg.Decode(bytes.NewReader(data))
	}
	if err != nil {
		return "", errNoImage
	}
	return readText(img), nil
}

// readDataURL reads the image of a data URL.
func readDataURL(url string) (string, error) {
	rest, ok := strings.CutPrefix(url, "data:")
	if !ok {
		return "", errors.New("the demo reads data URLs only")
	}
	_, b64, ok := strings.Cut(rest, ";base64,")
	if !ok {
		return "", errors.New("not a base64 data URL")
	}
	data, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return "", err
	}
	return ReadImage(data)
}

// inkMap is the image thresholded: true where a pixel is dark. sum is
// its summed-area table, so a blank cell is known in four reads.
type inkMap struct {
	w, h int
	ink  []bool
	sum  []int32 // (w+1)×(h+1): ink pixels above and left of each point
}

func (m *inkMap) sums() {
	m.sum = make([]int32, (m.w+1)*(m.h+1))
	for y := 0; y < m.h; y++ {
		var row int32
		for x := 0; x < m.w; x++ {
			if m.ink[y*m.w+x] {
				row++
			}
			m.sum[(y+1)*(m.w+1)+x+1] = m.sum[y*(m.w+1)+x+1] + row
		}
	}
}

// blank reports whether the rectangle [x0,x1)×[y0,y1) has no ink.
func (m *inkMap) blank(x0, y0, x1, y1 int) bool {
	x0, y0, x1, y1 = max(x0, 0), max(y0, 0), min(x1, m.w), min(y1, m.h)
	if x0 >= x1 || y0 >= y1 {
		return true
	}
	w := m.w + 1
	return m.sum[y1*w+x1]-m.sum[y0*w+x1]-m.sum[y1*w+x0]+m.sum[y0*w+x0] == 0
}

func (m *inkMap) at(x, y int) bool {
	if x < 0 || y < 0 || x >= m.w || y >= m.h {
		return false
	}
	return m.ink[y*m.w+x]
}

// cell samples the cell whose top-left is (x0, y0) at scale k: the centre
// of each k×k block.
func (m *inkMap) cell(x0, y0, k int) (glyphKey, bool) {
	var key glyphKey
	if m.blank(x0, y0, x0+cellW*k, y0+cellH*k) {
		return key, false
	}
	any := false
	for y := 0; y < cellH; y++ {
		for x := 0; x < cellW; x++ {
			if m.at(x0+x*k+k/2, y0+y*k+k/2) {
				if x == glyphW {
					return key, true // ink in the gap column: not this grid
				}
				key[y] |= 1 << x
				any = true
			}
		}
	}
	return key, any
}

func readText(img image.Image) string {
	b := img.Bounds()
	m := &inkMap{w: b.Dx(), h: b.Dy(), ink: make([]bool, b.Dx()*b.Dy())}
	// Luminance straight from the planes of the decoders' usual types
	// (gray PNG, JPEG's Y), through At for the rest.
	for y := 0; y < m.h; y++ {
		for x := 0; x < m.w; x++ {
			var lum uint8
			switch im := img.(type) {
			case *image.Gray:
				lum = im.Pix[im.PixOffset(b.Min.X+x, b.Min.Y+y)]
			case *image.YCbCr:
				lum = im.Y[im.YOffset(b.Min.X+x, b.Min.Y+y)]
			default:
				lum = color.GrayModel.Convert(img.At(b.Min.X+x, b.Min.Y+y)).(color.Gray).Y
			}
			m.ink[y*m.w+x] = lum < 128
		}
	}
	// The grid (scale and origin) under which the most cells are exactly
	// a glyph. Each font pixel is a k×k block, so the image's ink runs
	// start on the grid's phase modulo k: only the 7×13 cell origins of
	// that phase are tried, and each scored on its first scoreCells inked
	// cells, which keeps a full page to well under a second.
	m.sums()
	phaseX, phaseY := m.phases()
	bestK, bestX, bestY, best := 0, 0, 0, 0
	for k := 1; k <= maxScale && cellW*k <= m.w && cellH*k <= m.h; k++ {
		for jy := 0; jy < cellH; jy++ {
			for jx := 0; jx < cellW; jx++ {
				ox, oy := phaseX[k]+jx*k, phaseY[k]+jy*k
				if score := m.score(ox, oy, k); score > best {
					bestK, bestX, bestY, best = k, ox, oy, score
				}
			}
		}
	}
	if best == 0 {
		return ""
	}
	k := bestK
	var lines []string
	for y0 := bestY; y0+cellH*k <= m.h; y0 += cellH * k {
		var line []rune
		for x0 := bestX; x0+cellW*k <= m.w; x0 += cellW * k {
			key, ink := m.cell(x0, y0, k)
			switch {
			case !ink:
				line = append(line, ' ')
			default:
				line = append(line, nearest(key))
			}
		}
		lines = append(lines, strings.TrimRight(string(line), " "))
	}
	// Drop the margin (the indent every line shares), blank lines at both
	// ends and runs of blank lines inside.
	indent := -1
	for _, l := range lines {
		if l != "" {
			n := len(l) - len(strings.TrimLeft(l, " "))
			if indent < 0 || n < indent {
				indent = n
			}
		}
	}
	var out []string
	for _, l := range lines {
		if l == "" && (len(out) == 0 || out[len(out)-1] == "") {
			continue
		}
		if l != "" {
			l = l[indent:]
		}
		out = append(out, l)
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

// scoreCells bounds the inked cells one candidate grid is scored on.
const scoreCells = 2000

// score counts the cells of the grid (ox, oy, k) that are exactly a glyph,
// among its first scoreCells inked cells.
func (m *inkMap) score(ox, oy, k int) int {
	score, inked := 0, 0
	for y0 := oy; y0+cellH*k <= m.h; y0 += cellH * k {
		for x0 := ox; x0+cellW*k <= m.w; x0 += cellW * k {
			key, ink := m.cell(x0, y0, k)
			if !ink {
				continue
			}
			if _, ok := glyphs[key]; ok {
				score++
			}
			if inked++; inked >= scoreCells {
				return score
			}
		}
	}
	return score
}

// phases are, for each scale k, the most common position modulo k where
// horizontal (x) and vertical (y) ink runs start.
func (m *inkMap) phases() (px, py [maxScale + 1]int) {
	var hx, hy [maxScale + 1][maxScale]int
	for y := 0; y < m.h; y++ {
		for x := 0; x < m.w; x++ {
			if !m.ink[y*m.w+x] {
				continue
			}
			if x == 0 || !m.ink[y*m.w+x-1] {
				for k := 1; k <= maxScale; k++ {
					hx[k][x%k]++
				}
			}
			if y == 0 || !m.ink[(y-1)*m.w+x] {
				for k := 1; k <= maxScale; k++ {
					hy[k][y%k]++
				}
			}
		}
	}
	for k := 1; k <= maxScale; k++ {
		for r := 1; r < k; r++ {
			if hx[k][r] > hx[k][px[k]] {
				px[k] = r
			}
			if hy[k][r] > hy[k][py[k]] {
				py[k] = r
			}
		}
	}
	return px, py
}

// nearest is the glyph of key, or the closest one when no more than a
// fifth of its pixels differ, else '?'.
func nearest(key glyphKey) rune {
	if r, ok := glyphs[key]; ok {
		return r
	}
	bestR, bestD := '?', 1<<30
	for _, g := range glyphList {
		d := 0
		for y := range key {
			d += popcount(key[y] ^ g.key[y])
		}
		if d < bestD && d*5 <= g.ink {
			bestR, bestD = g.r, d
		}
	}
	return bestR
}

func popcount(b byte) int {
	n := 0
	for ; b != 0; b &= b - 1 {
		n++
	}
	return n
}

// visionReply is the demo vision model's answer to a user message's
// images (data URLs): the text read in each, in order, separated by a
// blank line; images is how many it was given, for the usage.
func visionReply(urls []string) string {
	if len(urls) == 0 {
		return "The demo vision model got no image to read."
	}
	var parts []string
	for _, u := range urls {
		t, err := readDataURL(u)
		switch {
		case err != nil:
			parts = append(parts, "[unreadable image: "+err.Error()+"]")
		case t == "":
			parts = append(parts, "[no text found in the image]")
		default:
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, "\n\n")
}

// openAIImages are the image_url URLs of an OpenAI message content.
func openAIImages(raw []byte) []string {
	var parts []struct {
		Type     string `json:"type"`
		ImageURL struct {
			URL string `json:"url"`
		} `json:"image_url"`
	}
	_ = json.Unmarshal(raw, &parts)
	var out []string
	for _, p := range parts {
		if p.Type == "image_url" {
			out = append(out, p.ImageURL.URL)
		}
	}
	return out
}

// anthropicImages are an Anthropic message content's base64 image blocks,
// as data URLs.
func anthropicImages(raw []byte) []string {
	var blocks []struct {
		Type   string `json:"type"`
		Source struct {
			Type      string `json:"type"`
			MediaType string `json:"media_type"`
			Data      string `json:"data"`
		} `json:"source"`
	}
	_ = json.Unmarshal(raw, &blocks)
	var out []string
	for _, b := range blocks {
		if b.Type == "image" && b.Source.Type == "base64" {
			out = append(out, "data:"+b.Source.MediaType+";base64,"+b.Source.Data)
		}
	}
	return out
}

// geminiImages are a Gemini content's inlineData images, as data URLs.
func geminiImages(parts []geminiPart) []string {
	var out []string
	for _, p := range parts {
		var d struct {
			MimeType string `json:"mimeType"`
			Data     string `json:"data"`
		}
		if len(p.InlineData) > 0 && json.Unmarshal(p.InlineData, &d) == nil && strings.HasPrefix(d.MimeType, "image/") {
			out = append(out, "data:"+d.MimeType+";base64,"+d.Data)
		}
	}
	return out
}

// IsVisionModel reports whether an upstream model name asks for the demo
// vision model ("echo-vision", "claude-vision-test", …).
func IsVisionModel(model string) bool { return strings.Contains(model, "vision") }
