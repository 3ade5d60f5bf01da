// Package fileparser is the file-parser plugin's logic: `file` content parts
// (a PDF or a text file as a data URL) become text parts before routing,
// and the answer carries `file` annotations with each file's hash and text,
// so a client that echoes them on the assistant message skips the parsing
// next turn. The module's main package only wires it to the ABI and to the
// host's kv store.
package fileparser

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/sdk"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// Engines of option pdf.engine.
const (
	EnginePDFText = "pdf-text" // text extraction inside the module
	EngineNative  = "native"   // the file goes to the provider as it is
	EngineVision  = "vision"   // page images transcribed by a vision model (vision.go)
)

// Module is the plugin's hooks over the host functions: kv (nil: no
// cache), chat (engine vision) and http (files by https URL). The glue
// hands on their failures as *HostErr.
type Module struct {
	KVGet func(key string) ([]byte, bool, error)
	KVPut func(key string, val []byte, ttlSeconds int) error
	Chat  func(body []byte) (status int, resp []byte, err error)
	// ChatBatch runs several chat bodies at once (the host's chat_batch):
	// engine vision sends a scan's pages together. nil: one at a time
	// through Chat.
	ChatBatch func(bodies [][]byte) ([]ChatReply, error)
	HTTP      func(method, url, headers string, body []byte) (status int, respHeaders string, respBody []byte, err error)
}

// ChatReply is one answer of ChatBatch.
type ChatReply struct {
	Status int
	Body   []byte
}

// cacheTTL is how long an extracted text stays in kv.
const cacheTTL = 24 * 3600

// Annotation is a `file` annotation of the answer (the shape of
// OpenRouter's file-parser: type file, file.hash, file.name, file.content).
type Annotation struct {
	Type string `json:"type"`
	File struct {
		Hash    string        `json:"hash"`
		Name    string        `json:"name,omitempty"`
		Content []ContentPart `json:"content"`
	} `json:"file"`
}

// ContentPart is a text part of an annotation's content.
type ContentPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type state struct {
	Annotations []Annotation `json:"annotations,omitempty"`
}

// limitsFrom reads the operator's module_settings.file-parser.limits over
// the defaults.
func limitsFrom(settings gjson.Result) Limits {
	l := DefaultLimits
	set := func(dst *int, key string) {
		if v := settings.Get("limits." + key); v.Type == gjson.Number && v.Int() > 0 {
			*dst = int(v.Int())
		}
	}
	set(&l.Bytes, "max_bytes")
	set(&l.Pages, "max_pages")
	set(&l.Decompressed, "max_decompressed_bytes")
	set(&l.Text, "max_text_bytes")
	return l
}

func summary(text string, data map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{"type": "plugin", "summary": text, "data": data})
	return b
}

func block(out *sdk.Out, msg string, meta map[string]any) {
	b, _ := json.Marshal(map[string]any{"code": 400, "message": msg, "metadata": meta})
	out.FieldString(abi.ActionBlock)
	out.Field(b)
	out.Field(summary(msg, meta))
}

// PreRequest replaces each file part of the request with a text part
// (engines pdf-text and vision), or hands it to the provider (native,
// with files given by URL fetched and inlined).
func (m *Module) PreRequest(in *sdk.In, out *sdk.Out) error {
	ctx, body := in.Field(0), in.Field(1)
	engine := sdk.Get(ctx, "config.pdf.engine").Str
	auto := engine == ""
	if auto {
		// Native where every endpoint the request may go to reads files
		// itself: the host says so in ctx.context.native_files (a model
		// whose catalog input_modalities include "file", served through
		// an adapter that translates file parts).
		engine = EnginePDFText
		if sdk.Get(ctx, "context.native_files").Bool() {
			engine = EngineNative
		}
	}
	switch engine {
	case EnginePDFText, EngineVision, EngineNative:
	default:
		block(out, `plugins: file-parser.pdf.engine: unknown engine "`+engine+`": one of pdf-text, vision, native`, map[string]any{"option": "pdf.engine"})
		return nil
	}
	settings := sdk.Get(ctx, "settings")
	lim := limitsFrom(settings)
	vs := visionFrom(settings)
	msgs := sdk.Get(body, "messages")
	echoed := echoedAnnotations(msgs)
	var (
		edited                   []byte
		anns                     []Annotation
		parsed, reused, fromKV   int
		pages, fetched           int
		vst                      visionStats
		fallback                 string
		failPath, failName, fail string
		failReason               string
	)
	msgs.ForEach(func(mi, msg gjson.Result) bool {
		c := msg.Get("content")
		if !c.IsArray() {
			return true
		}
		c.ForEach(func(pi, part gjson.Result) bool {
			if part.Get("type").Str != "file" {
				return true
			}
			path := "messages[" + mi.String() + "].content[" + pi.String() + "]"
			name := part.Get("file.filename").Str
			if name == "" {
				name = "file"
			}
			fd := part.Get("file.file_data")
			if engine == EngineNative {
				// The provider reads the file itself; one given by URL is
				// fetched here and inlined, so providers that take only
				// data get it and the gateway's guard and limits apply.
				if fd.Type != gjson.String || !strings.Contains(fd.Str, "://") {
					return true
				}
				data, ferr := m.fetch(fd.Str, lim)
				if ferr != nil {
					failPath, failName, fail, failReason = path, name, ferr.Message, ferr.Reason
					return false
				}
				if edited == nil {
					edited = append([]byte(nil), body...)
				}
				edited, _ = sjson.SetBytes(edited, "messages."+mi.String()+".content."+pi.String()+".file.file_data", "data:application/pdf;base64,"+base64.StdEncoding.EncodeToString(data))
				fetched++
				return true
			}
			data, wasFetched, ferr := m.fileBytes(fd, lim)
			if ferr != nil {
				failPath, failName, fail, failReason = path, name, ferr.Message, ferr.Reason
				return false
			}
			if wasFetched {
				fetched++
			}
			sum := sha256.Sum256(data)
			hash := hex.EncodeToString(sum[:])
			var text string
			n := 0
			if t, ok := echoed[hash]; ok {
				text = t
				reused++
			} else if t, ok := m.cached(engine, hash); ok {
				text = t
				fromKV++
			} else if t, ok := m.cached(EngineVision, hash); ok && auto && engine == EnginePDFText && vs.Model != "" {
				// A scan the default engine sent to vision before.
				text = t
				fromKV++
			} else {
				used := engine
				var ferr *FileError
				if engine == EngineVision {
					text, n, ferr = m.vision(name, data, lim, vs, &vst)
				} else {
					var empty bool
					text, n, empty, ferr = parse(name, data, lim)
					switch {
					case ferr == nil && empty && auto && vs.Model != "":
						// A scanned PDF under the default engine, and the
						// operator has a vision model: read its images.
						used, fallback = EngineVision, EngineVision
						text, n, ferr = m.vision(name, data, lim, vs, &vst)
					case ferr == nil && empty:
						ferr = fileErr("no_text", `the PDF has no text layer (a scanned PDF?): engine pdf-text cannot read its pages; send it with "pdf": {"engine": "vision"} to have a vision model transcribe them`)
					}
				}
				if ferr != nil {
					failPath, failName, fail, failReason = path, name, ferr.Message, ferr.Reason
					return false
				}
				parsed++
				pages += n
				m.store(used, hash, text)
			}
			a := Annotation{Type: "file"}
			a.File.Hash, a.File.Name = hash, name
			a.File.Content = []ContentPart{{Type: "text", Text: text}}
			anns = append(anns, a)
			if edited == nil {
				edited = append([]byte(nil), body...)
			}
			tp, _ := json.Marshal(ContentPart{Type: "text", Text: text})
			edited, _ = sjson.SetRawBytes(edited, "messages."+mi.String()+".content."+pi.String(), tp)
			return true
		})
		return fail == ""
	})
	if fail != "" {
		block(out, "file-parser: "+failName+" ("+failPath+"): "+fail, map[string]any{"file": failName, "path": failPath, "reason": failReason})
		return nil
	}
	if engine == EngineNative {
		summ := "native: files go to the provider as they are"
		if fetched > 0 {
			summ = "native: " + strconv.Itoa(fetched) + " file(s) fetched by URL and inlined for the provider"
		}
		out.FieldString(abi.ActionContinue)
		out.Field(edited)
		out.Field(summary(summ, map[string]any{"engine": engine, "fetched": fetched}))
		return nil
	}
	data := map[string]any{"engine": engine, "files": len(anns), "parsed": parsed, "reused": reused, "cached": fromKV, "pages": pages, "fetched": fetched}
	if vst.calls > 0 || engine == EngineVision || fallback != "" {
		data["vision"] = map[string]any{"model": vs.Model, "images": vst.images, "calls": vst.calls}
	}
	if fallback != "" {
		data["fallback"] = fallback
	} else if vst.fallback != "" {
		data["fallback"] = vst.fallback
	}
	out.FieldString(abi.ActionContinue)
	out.Field(edited)
	if len(anns) == 0 {
		out.Field(summary("no file parts", data))
		return nil
	}
	out.Field(summary(strconv.Itoa(len(anns))+" file(s) as text: "+strconv.Itoa(parsed)+" parsed, "+strconv.Itoa(reused+fromKV)+" reused", data))
	st, _ := json.Marshal(state{Annotations: anns})
	out.Field(st)
	return nil
}

// echoedAnnotations collects the file annotations a client sent back on
// assistant messages: hash → text.
func echoedAnnotations(msgs gjson.Result) map[string]string {
	out := map[string]string{}
	msgs.ForEach(func(_, msg gjson.Result) bool {
		if msg.Get("role").Str != "assistant" {
			return true
		}
		msg.Get("annotations").ForEach(func(_, a gjson.Result) bool {
			if a.Get("type").Str != "file" {
				return true
			}
			hash := a.Get("file.hash").Str
			var parts []string
			a.Get("file.content").ForEach(func(_, p gjson.Result) bool {
				if p.Get("type").Str == "text" {
					parts = append(parts, p.Get("text").Str)
				}
				return true
			})
			if len(hash) == 64 && len(parts) > 0 {
				out[hash] = strings.Join(parts, "\n")
			}
			return true
		})
		return true
	})
	return out
}

// cacheKey is the kv key of a file's text: each engine's reading of a
// file is kept apart (pdf-text keeps its historical "text/" prefix).
func cacheKey(engine, hash string) string {
	if engine == EngineVision {
		return "vision/" + hash
	}
	return "text/" + hash
}

func (m *Module) cached(engine, hash string) (string, bool) {
	if m.KVGet == nil {
		return "", false
	}
	v, ok, err := m.KVGet(cacheKey(engine, hash))
	if err != nil || !ok {
		return "", false
	}
	return string(v), true
}

// store caches an extracted text; a full store only costs a re-parse later.
func (m *Module) store(engine, hash, text string) {
	if m.KVPut != nil {
		_ = m.KVPut(cacheKey(engine, hash), []byte(text), cacheTTL)
	}
}

// fileBytes decodes file_data, a base64 data URL, or fetches it, an
// https URL (fetch.go); fetched says which.
func (m *Module) fileBytes(v gjson.Result, lim Limits) (data []byte, fetched bool, fe *FileError) {
	if v.Type != gjson.String || v.Str == "" {
		return nil, false, fileErr("missing", "file.file_data is required: a data URL such as data:application/pdf;base64,… or an https URL")
	}
	if strings.Contains(v.Str, "://") && !strings.HasPrefix(v.Str, "data:") {
		data, fe := m.fetch(v.Str, lim)
		return data, fe == nil, fe
	}
	data, fe = dataURLBytes(v.Str, lim)
	return data, false, fe
}

// dataURLBytes decodes a base64 data URL.
func dataURLBytes(url string, lim Limits) ([]byte, *FileError) {
	_, b64, ok := sdk.DataURL(url)
	if !ok {
		return nil, fileErr("malformed", "file.file_data is not a base64 data URL (data:<media type>;base64,<data>)")
	}
	if base64.StdEncoding.DecodedLen(len(b64)) > lim.Bytes+3 {
		return nil, fileErr("too_large", "the file is over the limit of %d bytes", lim.Bytes)
	}
	data, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		if data, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(b64, "=")); err != nil {
			return nil, fileErr("malformed", "file.file_data is not valid base64")
		}
	}
	return data, nil
}

// parse returns a file's text and its page count: a PDF is extracted
// (empty: it has no text layer at all), a text file (UTF-8) is taken as it
// is, anything else is refused.
func parse(name string, data []byte, lim Limits) (text string, pages int, empty bool, fe *FileError) {
	if isPDF(data) {
		doc, err := ExtractPDF(data, lim)
		if err != nil {
			return "", 0, false, asFileErr(err)
		}
		return doc.Text(name), len(doc.Pages), doc.empty(), nil
	}
	if utf8.Valid(data) && !strings.ContainsRune(string(data), 0) {
		text := cutUTF8(string(data), lim.Text)
		return "[file " + name + ", text]\n" + text, 0, false, nil
	}
	return "", 0, false, fileErr("unsupported", "unsupported file type: send a PDF or a UTF-8 text file")
}

func isPDF(data []byte) bool {
	head := data
	if len(head) > 1024 {
		head = head[:1024]
	}
	return strings.Contains(string(head), "%PDF-")
}

// PostResponse adds the file annotations to each choice's message.
func (m *Module) PostResponse(in *sdk.In, out *sdk.Out) error {
	anns := sdk.Get(in.Field(0), "state.annotations")
	out.FieldString(abi.ActionContinue)
	if !anns.IsArray() {
		out.Field(nil)
		out.Field(nil)
		return nil
	}
	result := in.Field(1)
	var edited []byte
	sdk.Get(result, "choices").ForEach(func(i, ch gjson.Result) bool {
		if edited == nil {
			edited = append([]byte(nil), result...)
		}
		edited = appendAnnotations(edited, "choices."+i.String()+".message.annotations", ch.Get("message.annotations"), anns.Raw)
		return true
	})
	out.Field(edited)
	out.Field(nil)
	return nil
}

// PostChunk puts the annotations on the delta of the chunk that finishes
// each choice of a stream.
func (m *Module) PostChunk(in *sdk.In, out *sdk.Out) error {
	anns := sdk.Get(in.Field(0), "state.annotations")
	chunk := in.Field(1)
	out.FieldString(abi.ActionContinue)
	if !anns.IsArray() {
		out.Field(chunk)
		return nil
	}
	var edited []byte
	sdk.Get(chunk, "choices").ForEach(func(i, ch gjson.Result) bool {
		fin := ch.Get("finish_reason")
		if !fin.Exists() || fin.Type == gjson.Null {
			return true
		}
		if edited == nil {
			edited = append([]byte(nil), chunk...)
		}
		edited = appendAnnotations(edited, "choices."+i.String()+".delta.annotations", ch.Get("delta.annotations"), anns.Raw)
		return true
	})
	if edited == nil {
		edited = chunk
	}
	out.Field(edited)
	return nil
}

// appendAnnotations writes ours (a JSON array) after the existing
// annotations at path.
func appendAnnotations(doc []byte, path string, existing gjson.Result, ours string) []byte {
	if existing.IsArray() && len(existing.Array()) > 0 {
		merged := existing.Raw[:strings.LastIndexByte(existing.Raw, ']')] + "," + ours[strings.IndexByte(ours, '[')+1:]
		ours = merged
	}
	doc, _ = sjson.SetRawBytes(doc, path, []byte(ours))
	return doc
}
