package fileparser

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/switchyard/switchyard/abi"
	"github.com/tidwall/gjson"
)

// Engine vision: the images each page of a PDF draws (a scan's pages are
// images) go to a vision-capable chat model through the host's chat
// function, one sub-request per page with images, and the text it
// transcribes replaces the file part. The sub-requests are routed, billed
// to the caller's key and counted in the response's usage like any
// request (host/server/servertools.go, subChat). Which model is the
// operator's choice (module_settings.file-parser.vision.model): the spec
// gives plugin option pdf no field but engine.

// HostErr is a host function's failure as the module's glue hands it on:
// Code is one of abi's codes (HostDenied, HostFailed, HostBudget; for http
// HTTPDenied, HTTPFailed, HTTPBudget).
type HostErr struct {
	Code    int64
	Message string
}

func (e *HostErr) Error() string { return e.Message }

// defaultVisionPrompt is the system prompt of each transcription call.
const defaultVisionPrompt = "You transcribe scanned document pages. Write out all the text in the images exactly as written, in reading order, keeping line breaks. Output only the transcribed text: no commentary, no description of the image. If an image has no text, output nothing for it."

// VisionSettings are module_settings.file-parser.vision.
type VisionSettings struct {
	Model     string // the vision model; "" = engine vision is not available
	Prompt    string
	MaxTokens int // per page's transcription
	Images    ImageLimits
}

func visionFrom(settings gjson.Result) VisionSettings {
	v := settings.Get("vision")
	vs := VisionSettings{Model: v.Get("model").Str, Prompt: v.Get("prompt").Str, MaxTokens: 2048, Images: DefaultImageLimits}
	if vs.Prompt == "" {
		vs.Prompt = defaultVisionPrompt
	}
	set := func(dst *int, key string) {
		if x := v.Get(key); x.Type == gjson.Number && x.Int() > 0 {
			*dst = int(x.Int())
		}
	}
	set(&vs.MaxTokens, "max_tokens_per_page")
	set(&vs.Images.Images, "max_images")
	set(&vs.Images.Bytes, "max_image_bytes")
	set(&vs.Images.Pixels, "max_image_pixels")
	return vs
}

// visionStats are what engine vision did with one file, for the stage.
type visionStats struct {
	images, calls int
	fallback      string // "text": the PDF had no images, its text layer was used
}

// vision reads a PDF with engine vision and returns its text and pages.
func (m *Module) vision(name string, data []byte, lim Limits, vs VisionSettings, st *visionStats) (string, int, *FileError) {
	if !isPDF(data) {
		text, n, _, fe := parse(name, data, lim)
		return text, n, fe
	}
	doc, err := ExtractPDF(data, lim)
	if err != nil {
		return "", 0, asFileErr(err)
	}
	imgs, err := ExtractImages(data, lim, vs.Images)
	if err != nil {
		return "", 0, asFileErr(err)
	}
	if imgs.Count == 0 {
		if !doc.empty() {
			st.fallback = "text"
			return doc.Text(name), len(doc.Pages), nil
		}
		msg := "the PDF has neither a text layer nor images engine vision can send"
		if len(imgs.Unsupported) > 0 {
			msg += " (its images are " + strings.Join(uniq(imgs.Unsupported), ", ") + "; JPEG and Flate gray or RGB images are supported)"
		}
		return "", 0, fileErr("no_content", "%s", msg)
	}
	if vs.Model == "" {
		return "", 0, fileErr("vision_unavailable", "engine vision needs a vision model and this gateway has none configured (operator: module_settings.file-parser.vision.model); use engine pdf-text or native")
	}
	if m.Chat == nil {
		return "", 0, fileErr("vision_unavailable", "engine vision cannot call a model here (the chat host function is not available)")
	}
	texts, fe := m.transcribeAll(name, imgs.Pages, vs, st)
	if fe != nil {
		return "", 0, fe
	}
	var b strings.Builder
	b.WriteString("[file " + name + ", " + strconv.Itoa(len(imgs.Pages)) + " page(s), " + strconv.Itoa(st.images) + " page image(s) transcribed by " + vs.Model + " for the gateway]")
	for i := range imgs.Pages {
		b.WriteString("\n--- page " + strconv.Itoa(i+1) + " ---")
		if i < len(doc.Pages) && doc.Pages[i] != "" {
			b.WriteString("\n" + doc.Pages[i])
		}
		if texts[i] != "" {
			b.WriteString("\n" + texts[i])
		}
	}
	if doc.Truncated {
		b.WriteString("\n[text layer truncated at the gateway's limit]")
	}
	return b.String(), len(imgs.Pages), nil
}

// batchBytes bounds the request bodies of one chat_batch: the bodies
// (base64 images) and the host's copy of them live in the module's memory
// at once.
const batchBytes = 12 << 20

// transcribeAll sends each page's images to the vision model: with
// ChatBatch up to abi.MaxChatBatch pages at once (and batchBytes of
// bodies), else one page after another. It returns the text of each page.
func (m *Module) transcribeAll(name string, pages [][]PageImage, vs VisionSettings, st *visionStats) ([]string, *FileError) {
	type job struct {
		page int // 0-based
		body []byte
	}
	var jobs []job
	for i, imgs := range pages {
		if len(imgs) > 0 {
			jobs = append(jobs, job{i, visionBody(name, i+1, len(pages), imgs, vs)})
		}
	}
	texts := make([]string, len(pages))
	done := func(j job, status int, resp []byte) *FileError {
		t, fe := transcript(j.page+1, status, resp, vs)
		if fe != nil {
			return fe
		}
		texts[j.page] = t
		st.images += len(pages[j.page])
		st.calls++
		return nil
	}
	for next := 0; next < len(jobs); {
		n, size := 0, 0
		for next+n < len(jobs) && n < abi.MaxChatBatch && (n == 0 || size+len(jobs[next+n].body) <= batchBytes) {
			size += len(jobs[next+n].body)
			n++
		}
		if m.ChatBatch != nil && n > 1 {
			bodies := make([][]byte, n)
			for k := range bodies {
				bodies[k] = jobs[next+k].body
			}
			replies, err := m.ChatBatch(bodies)
			switch {
			case err == nil && len(replies) == n:
				for k, r := range replies {
					if fe := done(jobs[next+k], r.Status, r.Body); fe != nil {
						return nil, fe
					}
				}
				next += n
				continue
			case err != nil && hostCode(err) != abi.HostBudget:
				return nil, callErr(jobs[next].page+1, err)
			}
			// A batch that does not fit in the request's budget of model
			// calls is refused whole: go one page at a time, so the pages
			// the budget covers are read and the error names the first
			// that is not.
		}
		status, resp, err := m.Chat(jobs[next].body)
		if err != nil {
			return nil, callErr(jobs[next].page+1, err)
		}
		if fe := done(jobs[next], status, resp); fe != nil {
			return nil, fe
		}
		next++
	}
	return texts, nil
}

// visionBody is the chat request that transcribes one page's images.
func visionBody(name string, page, pages int, imgs []PageImage, vs VisionSettings) []byte {
	content := []map[string]any{{"type": "text", "text": "Page " + strconv.Itoa(page) + " of " + strconv.Itoa(pages) + " of the file " + name + ":"}}
	for _, im := range imgs {
		content = append(content, map[string]any{"type": "image_url", "image_url": map[string]any{
			"url": "data:" + im.MediaType + ";base64," + base64.StdEncoding.EncodeToString(im.Data)}})
	}
	body, _ := json.Marshal(map[string]any{
		"model":       vs.Model,
		"max_tokens":  vs.MaxTokens,
		"temperature": 0,
		"messages": []map[string]any{
			{"role": "system", "content": vs.Prompt},
			{"role": "user", "content": content},
		},
	})
	return body
}

func hostCode(err error) int64 {
	if he, ok := err.(*HostErr); ok {
		return he.Code
	}
	return abi.HostFailed
}

// callErr is the error of a chat call that did not run.
func callErr(page int, err error) *FileError {
	switch hostCode(err) {
	case abi.HostBudget:
		return fileErr("budget", "page %d: this request's budget of model calls is spent (engine vision makes one per page with images); send fewer scanned pages per request", page)
	case abi.HostDenied:
		return fileErr("vision_unavailable", "page %d: the vision model cannot be called from here (%s)", page, err.Error())
	}
	return fileErr("vision_failed", "page %d: the vision model call failed (%s)", page, short(err.Error()))
}

// transcript reads the vision model's answer for one page.
func transcript(page, status int, resp []byte, vs VisionSettings) (string, *FileError) {
	r := gjson.ParseBytes(resp)
	if status != 200 {
		return "", fileErr("vision_failed", "page %d: the vision model %s answered %d: %s", page, vs.Model, status, short(r.Get("error.message").Str))
	}
	return strings.TrimSpace(r.Get("choices.0.message.content").Str), nil
}

func asFileErr(err error) *FileError {
	if fe, ok := err.(*FileError); ok {
		return fe
	}
	return fileErr("malformed", "%s", err.Error())
}

func uniq(xs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
