// Package wire is the gateway's side of the unified wire format (spec 2.2,
// 2.5, 2.7): what the host writes into every result and chunk it hands
// out — ids, the catalog model, the serving provider, usage, and
// service_metadata — and the context document adapters receive. Writing
// these in one place keeps a chat result, a stream chunk, a plugin's answer
// and an error chunk from disagreeing about them.
package wire

import (
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/jsonstr"
	"github.com/switchyard/switchyard/host/jsonwalk"
	"github.com/switchyard/switchyard/host/usage"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// Identity is what names a generation on the wire: our id (the generation
// id), the catalog model id, and the serving provider ("" when none served
// it, e.g. a plugin answered).
type Identity struct {
	GenID, Model, Provider string
}

// Completion makes an upstream (or plugin) result the gateway's: our id, the
// catalog model, the serving provider, the object type, and the keys the
// spec requires even when the upstream left them out.
func Completion(raw []byte, id Identity, object string) []byte {
	out, _ := CompletionFacts(raw, id, object)
	return out
}

// Facts are what the gateway reads of a completion it wrote: its usage and
// its first choice's finish reason. CompletionFacts finds them in the pass
// that writes the completion; reading them back scanned the answer twice
// more.
type Facts struct {
	body []byte // the completion written
	// walked: the pass found usage and choices, its first members of
	// those names; otherwise they are read from body when asked for.
	walked         bool
	usage, choices gjson.Result
}

// Usage is ParseUsage of the completion.
func (f Facts) Usage() (usage.Usage, bool) {
	if !f.walked {
		return ParseUsage(f.body)
	}
	return usageOf(f.usage, f.body)
}

// FinishReason is the completion's choices.0.finish_reason ("" when none).
func (f Facts) FinishReason() string {
	if !f.walked {
		return gjson.GetBytes(f.body, "choices.0.finish_reason").Str
	}
	return f.choices.Get("0.finish_reason").Str
}

// CompletionFacts is Completion, and the facts of what it wrote (for raw
// that is valid JSON, as a repaired answer is).
func CompletionFacts(raw []byte, id Identity, object string) ([]byte, Facts) {
	// gjson.ParseBytes would copy raw into a string first; the results
	// point into raw, which is never edited.
	top := gjson.Parse(unsafe.String(unsafe.SliceData(raw), len(raw)))
	if !top.IsObject() {
		out := completionBySet(raw, id, object)
		return out, Facts{body: out} // read when asked for: Completion's callers never ask
	}
	f := Facts{walked: true}
	// One pass, one copy: the identity first, then the upstream's members
	// but those replaced. Setting each key with sjson copied the whole
	// body once per key (six copies of a 30 MB answer).
	out := make([]byte, 0, len(raw)+len(id.GenID)+len(id.Model)+len(id.Provider)+128)
	out = append(out, `{"id":`...)
	out = jsonstr.Append(out, id.GenID)
	out = append(out, `,"object":`...)
	out = jsonstr.Append(out, object)
	out = append(out, `,"model":`...)
	out = jsonstr.Append(out, id.Model)
	if id.Provider != "" {
		out = append(out, `,"provider":`...)
		out = jsonstr.Append(out, id.Provider)
	}
	created, fingerprint := false, false
	top.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "id", "object", "model":
			return true
		case "provider":
			if id.Provider != "" {
				return true
			}
		case "created":
			created = true
		case "system_fingerprint":
			fingerprint = true
		case "usage":
			if !f.usage.Exists() {
				f.usage = v
			}
		case "choices":
			if !f.choices.Exists() {
				f.choices = v
			}
			if object == "chat.completion" {
				out = append(out, ',')
				out = append(out, k.Raw...)
				out = append(out, ':')
				out = appendNativeFinish(out, v)
				return true
			}
		}
		out = append(out, ',')
		out = append(out, k.Raw...)
		out = append(out, ':')
		out = append(out, v.Raw...)
		return true
	})
	if !created {
		out = append(out, `,"created":`...)
		out = strconv.AppendInt(out, time.Now().Unix(), 10)
	}
	if object == "chat.completion" && !fingerprint {
		out = append(out, `,"system_fingerprint":null`...)
	}
	out = append(out, '}')
	f.body = out
	return out, f
}

// appendNativeFinish appends the choices array choices with
// "native_finish_reason" added to each choice object that has a
// finish_reason and no native_finish_reason of its own: OpenRouter's
// field, the finish reason as the provider gave it. An adapter that
// translates a provider's reasons (Anthropic's end_turn) may set it
// itself; otherwise the upstream spoke OpenAI's reasons and the two agree.
// Anything but an array of such choices is appended as it is.
func appendNativeFinish(dst []byte, choices gjson.Result) []byte {
	lacks := func(c gjson.Result) bool {
		if !c.IsObject() {
			return false
		}
		var fr, native bool
		c.ForEach(func(k, _ gjson.Result) bool {
			switch k.Str {
			case "finish_reason":
				fr = true
			case "native_finish_reason":
				native = true
			}
			return true
		})
		return fr && !native
	}
	need := false
	if choices.IsArray() {
		choices.ForEach(func(_, c gjson.Result) bool {
			need = lacks(c)
			return !need
		})
	}
	if !need {
		return append(dst, choices.Raw...)
	}
	dst = append(dst, '[')
	first := true
	choices.ForEach(func(_, c gjson.Result) bool {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		raw := strings.TrimRight(c.Raw, " \t\r\n")
		if !lacks(c) || !strings.HasSuffix(raw, "}") {
			dst = append(dst, c.Raw...)
			return true
		}
		dst = append(dst, raw[:len(raw)-1]...)
		dst = append(dst, `,"native_finish_reason":`...)
		dst = append(dst, c.Get("finish_reason").Raw...)
		dst = append(dst, '}')
		return true
	})
	return append(dst, ']')
}

// NativeFinishReasons is appendNativeFinish on the choices of a stream
// chunk (valid JSON) that finishes one: the chunk, with native_finish_reason
// beside each finish_reason the upstream gave without one.
func NativeFinishReasons(ch []byte) []byte {
	cs := gjson.GetBytes(ch, "choices")
	if !cs.IsArray() || cs.Index <= 0 {
		return ch
	}
	choices := appendNativeFinish(nil, cs)
	if len(choices) == len(cs.Raw) {
		return ch
	}
	out := make([]byte, 0, len(ch)+len(choices)-len(cs.Raw))
	out = append(out, ch[:cs.Index]...)
	out = append(out, choices...)
	return append(out, ch[cs.Index+len(cs.Raw):]...)
}

// completionBySet is Completion for a body that is not a JSON object (sjson
// decides what becomes of it, as before).
func completionBySet(raw []byte, id Identity, object string) []byte {
	raw, _ = sjson.SetBytes(raw, "id", id.GenID)
	raw, _ = sjson.SetBytes(raw, "model", id.Model)
	raw, _ = sjson.SetBytes(raw, "object", object)
	if id.Provider != "" {
		raw, _ = sjson.SetBytes(raw, "provider", id.Provider)
	}
	if !gjson.GetBytes(raw, "created").Exists() {
		raw, _ = sjson.SetBytes(raw, "created", time.Now().Unix())
	}
	if object == "chat.completion" && !gjson.GetBytes(raw, "system_fingerprint").Exists() {
		raw, _ = sjson.SetRawBytes(raw, "system_fingerprint", []byte("null"))
	}
	return raw
}

// ChunkHead is the start of a gateway-made chunk, open at "choices":. The
// provider is left out when no provider served the request.
func (id Identity) ChunkHead() string {
	h := `{"id":` + jsonstr.Quote(id.GenID) + `,"object":"chat.completion.chunk","created":` +
		strconv.FormatInt(time.Now().Unix(), 10) + `,"model":` + jsonstr.Quote(id.Model)
	if id.Provider != "" {
		h += `,"provider":` + jsonstr.Quote(id.Provider)
	}
	return h + `,"choices":`
}

// Chunk makes an adapter's chunk the gateway's. Adapters that read
// ctx.generation_id and ctx.catalog_model already wrote the same values;
// writing them again here is what keeps adapters that do not correct.
func Chunk(ch []byte, id Identity) []byte {
	return chunkAt(ch, id, time.Now().Unix())
}

// chunkAt is Chunk with the clock's reading given: the reference
// ChunkStream's fast path is tested against.
func chunkAt(ch []byte, id Identity, now int64) []byte {
	if !gjson.GetBytes(ch, "created").Exists() {
		ch, _ = sjson.SetBytes(ch, "created", now)
	}
	set := func(path, want string) {
		if gjson.GetBytes(ch, path).Str != want {
			ch, _ = sjson.SetBytes(ch, path, want)
		}
	}
	set("id", id.GenID)
	set("model", id.Model)
	set("provider", id.Provider)
	return ch
}

// IsChunk reports whether b has the shape of a chat completion chunk: a JSON
// object with a choices array whose items are objects. It is how the host
// checks what a post_chunk plugin hands back before a client sees it.
func IsChunk(b []byte) bool {
	if !jsonwalk.ValidBytes(b) {
		return false
	}
	root := gjson.ParseBytes(b)
	choices := root.Get("choices")
	if !root.IsObject() || !choices.IsArray() {
		return false
	}
	ok := true
	choices.ForEach(func(_, c gjson.Result) bool {
		ok = c.IsObject()
		return ok
	})
	return ok
}

// ErrorChunk is the chunk that ends a failed stream (spec 2.5): finish
// reason "error" and the error object.
func (id Identity) ErrorChunk(e *apierr.Error) []byte {
	b, _ := sjson.SetRawBytes([]byte(id.ChunkHead()+`[{"index":0,"delta":{},"finish_reason":"error"}]}`), "error", e.Object())
	return b
}

// UsageChunk is the final chunk of a stream whose upstream reported no
// usage: no choices; the host writes usage into it.
func (id Identity) UsageChunk() []byte { return []byte(id.ChunkHead() + `[]}`) }

// DebugChunk is the first chunk of a stream that asked for
// debug.echo_upstream_body: the body the adapter sent upstream.
func (id Identity) DebugChunk(sent []byte) []byte {
	b, _ := sjson.SetRawBytes([]byte(id.ChunkHead()+`[],"debug":{}}`), "debug.echo_upstream_body", validJSONOr(sent))
	return b
}

func validJSONOr(b []byte) []byte {
	if jsonwalk.ValidBytes(b) {
		return b
	}
	return jsonstr.AppendBytes(nil, b)
}

// NoUsage is the usage of a result nothing upstream produced.
const NoUsage = `{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0,"cost":0}`

// PluginResult normalises a chat result a pre_request plugin answered with.
func PluginResult(result []byte, id Identity) []byte {
	result = Completion(result, id, "chat.completion")
	if !gjson.GetBytes(result, "usage").IsObject() {
		result, _ = sjson.SetRawBytes(result, "usage", []byte(NoUsage))
	}
	return result
}

// ResultChunks turns a complete chat result into the chunks of a stream
// that says the same: per choice a content delta (with its tool calls, if
// any) and a finish, then a final chunk with usage and service_metadata.
func ResultChunks(result []byte, id Identity) [][]byte {
	head := id.ChunkHead()
	var out [][]byte
	gjson.GetBytes(result, "choices").ForEach(func(_, ch gjson.Result) bool {
		idx := strconv.FormatInt(ch.Get("index").Int(), 10)
		delta, _ := sjson.SetRawBytes([]byte(`{"role":"assistant"}`), "content", []byte(ch.Get("message.content").Raw))
		if calls := ch.Get("message.tool_calls"); calls.IsArray() && len(calls.Array()) > 0 {
			// A stream's tool call deltas carry their position in the
			// message's list (OpenAI's chunk shape); a complete call
			// fits in one delta.
			list := []byte(`[]`)
			for i, c := range calls.Array() {
				if !c.IsObject() {
					continue
				}
				call, _ := sjson.SetBytes([]byte(c.Raw), "index", i)
				list, _ = sjson.SetRawBytes(list, "-1", call)
			}
			delta, _ = sjson.SetRawBytes(delta, "tool_calls", list)
		}
		out = append(out, []byte(head+`[{"index":`+idx+`,"delta":`+string(delta)+`,"finish_reason":null}]}`))
		fr := ch.Get("finish_reason").Raw
		if fr == "" {
			fr = `"stop"`
		}
		out = append(out, []byte(head+`[{"index":`+idx+`,"delta":{},"finish_reason":`+fr+`}]}`))
		return true
	})
	final := head + `[],"usage":` + gjson.GetBytes(result, "usage").Raw
	if sm := gjson.GetBytes(result, "service_metadata"); sm.Exists() {
		final += `,"service_metadata":` + sm.Raw
	}
	return append(out, []byte(final+"}"))
}

// CompletionText joins the message contents of a chat result, for counting
// tokens when the upstream reported no usage. The text may share raw's
// memory (a 30 MB answer is not copied to be counted): use it before raw
// changes, and do not keep it.
func CompletionText(raw []byte) string {
	// Walk the choices in place: "choices.#.message.content" would copy
	// them into a new array first, and += copies the text once per choice.
	var texts []string
	size := 0
	gjson.Parse(unsafe.String(unsafe.SliceData(raw), len(raw))).Get("choices").ForEach(func(_, c gjson.Result) bool {
		if mc := c.Get("message.content"); mc.Type == gjson.String && mc.Str != "" {
			texts = append(texts, mc.Str)
			size += len(mc.Str)
		}
		return true
	})
	if len(texts) == 1 {
		return texts[0]
	}
	var b strings.Builder
	b.Grow(size)
	for _, t := range texts {
		b.WriteString(t)
	}
	return b.String()
}

// AdapterCtx is ctx, the JSON document every adapter hook gets first
// (docs/abi.md section 3). GenerationID and CatalogModel are the id and
// model the host writes into every result and chunk: an adapter may use them
// instead of upstream ids; one that ignores them is corrected by the host.
type AdapterCtx struct {
	Model        string   // the endpoint's upstream model name
	Provider     string   // provider slug
	Stream       bool     // the client asked for a stream
	Drop         []string // optional parameters this endpoint does not support
	GenerationID string
	CatalogModel string
	// Native names the API of a body the client sent in the provider's
	// own format ("messages"): the adapter sends it as it is, only the
	// model set (manifest.CapabilityMessagesNative). Beta is the client's
	// anthropic-beta header, forwarded with it. Both are absent from the
	// JSON when empty.
	Native, Beta string
	// API names the provider's form of the adapter's API ("vertex": the
	// Anthropic adapter on Google Vertex AI), from the provider's api
	// setting; absent from the JSON when empty.
	API string
}

// JSON renders ctx without reflection: it is built for every hook call.
func (c AdapterCtx) JSON() []byte {
	b := make([]byte, 0, 160)
	b = append(b, `{"model":`...)
	b = jsonstr.Append(b, c.Model)
	b = append(b, `,"provider":`...)
	b = jsonstr.Append(b, c.Provider)
	b = append(b, `,"stream":`...)
	b = strconv.AppendBool(b, c.Stream)
	b = append(b, `,"drop":[`...)
	for i, d := range c.Drop {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonstr.Append(b, d)
	}
	b = append(b, `],"generation_id":`...)
	b = jsonstr.Append(b, c.GenerationID)
	b = append(b, `,"catalog_model":`...)
	b = jsonstr.Append(b, c.CatalogModel)
	if c.Native != "" {
		b = append(b, `,"native":`...)
		b = jsonstr.Append(b, c.Native)
		b = append(b, `,"beta":`...)
		b = jsonstr.Append(b, c.Beta)
	}
	if c.API != "" {
		b = append(b, `,"api":`...)
		b = jsonstr.Append(b, c.API)
	}
	return append(b, '}')
}
