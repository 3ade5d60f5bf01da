// Package translate is the Gemini adapter's translation, for Google's Gemini API (generateContent,
// streamGenerateContent with SSE, batchEmbedContents). The provider key
// goes in x-goog-api-key through the host's ${API_KEY} placeholder.
//
// It is a plain package so it builds for the host too: the module's main
// only registers these handlers, and the tests run them natively against
// payloads from Google's Gemini API reference and official SDKs (testdata/SOURCES.md).
package translate

import (
	"strconv"
	"strings"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/plugins/internal/websearch"
	"github.com/switchyard/switchyard/sdk"
	"github.com/tidwall/gjson"
)

// Adapter holds what differs between builds of the module.
type Adapter struct {
	// Build is stamped into the X-Switchyard-Adapter request header so
	// operators can see which build translated a request.
	Build string
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

const headers = "x-goog-api-key: " + abi.APIKeyPlaceholder + "\nContent-Type: application/json\n"

var thinkingBudget = map[string]int{
	"none": 0, "minimal": 512, "low": 1024, "medium": 8192, "high": 24576, "xhigh": 32768, "max": 32768,
}

// ChatRequest is the chat_request hook.
func (a *Adapter) ChatRequest(in *sdk.In, out *sdk.Out) error {
	ctx := in.Field(0)
	var p sdk.Params
	req := p.Load(ctx, in.Field(1))
	model := sdk.Get(ctx, "model").Str
	out.FieldString("POST")
	if req.Get("stream").Bool() {
		out.FieldString("/models/" + model + ":streamGenerateContent?alt=sse")
	} else {
		out.FieldString("/models/" + model + ":generateContent")
	}
	out.FieldString(headers + "X-Switchyard-Adapter: " + a.Build + "\n")

	// Function names by call id: a tool result names its call only by id.
	names := map[string]string{}
	var system []string
	var contents []string
	prevTool := false
	req.Get("messages").ForEach(func(_, m gjson.Result) bool {
		switch m.Get("role").Str {
		case "system", "developer":
			system = append(system, sdk.ContentText(m.Get("content")))
		case "user":
			contents = append(contents, `{"role":"user","parts":`+userParts(m.Get("content"))+`}`)
		case "assistant":
			var parts []string
			if t := sdk.ContentText(m.Get("content")); t != "" {
				parts = append(parts, `{"text":`+sdk.Quote(t)+`}`)
			}
			m.Get("tool_calls").ForEach(func(_, c gjson.Result) bool {
				names[c.Get("id").Str] = c.Get("function.name").Str
				args := c.Get("function.arguments").Str
				if !gjson.Valid(args) {
					args = "{}"
				}
				parts = append(parts, `{"functionCall":{"name":`+sdk.Quote(c.Get("function.name").Str)+`,"args":`+args+`}}`)
				return true
			})
			if len(parts) == 0 {
				parts = append(parts, `{"text":""}`)
			}
			contents = append(contents, `{"role":"model","parts":[`+strings.Join(parts, ",")+`]}`)
		case "tool":
			part := `{"functionResponse":{"name":` + sdk.Quote(names[m.Get("tool_call_id").Str]) + `,"response":` + functionResponse(sdk.ContentText(m.Get("content"))) + `}}`
			// The responses to one turn's parallel calls go in one content:
			// Gemini refuses a turn whose number of function response parts
			// differs from the calls it answers.
			if prevTool {
				last := contents[len(contents)-1]
				contents[len(contents)-1] = last[:len(last)-2] + "," + part + "]}"
			} else {
				contents = append(contents, `{"role":"user","parts":[`+part+`]}`)
			}
		}
		prevTool = m.Get("role").Str == "tool"
		return true
	})
	out.Open()
	out.Byte('{')
	out.Member("contents", "["+strings.Join(contents, ",")+"]")
	if len(system) > 0 {
		out.Member("systemInstruction", `{"parts":[{"text":`+sdk.Quote(strings.Join(system, "\n\n"))+`}]}`)
	}
	var gc []string
	for _, name := range [][2]string{{"temperature", "temperature"}, {"top_p", "topP"}, {"top_k", "topK"}, {"seed", "seed"},
		{"presence_penalty", "presencePenalty"}, {"frequency_penalty", "frequencyPenalty"}} {
		if v := p.Get(name[0]); v.Exists() {
			gc = append(gc, sdk.Quote(name[1])+":"+v.Raw)
		}
	}
	if v := p.Get("max_completion_tokens"); v.Exists() {
		gc = append(gc, `"maxOutputTokens":`+v.Raw)
	} else if v := p.Get("max_tokens"); v.Exists() {
		gc = append(gc, `"maxOutputTokens":`+v.Raw)
	}
	if v := p.Get("stop"); v.Exists() {
		if v.Type == gjson.String {
			gc = append(gc, `"stopSequences":[`+v.Raw+`]`)
		} else {
			gc = append(gc, `"stopSequences":`+v.Raw)
		}
	}
	if t := p.Get("response_format").Get("type").Str; t == "json_object" || t == "json_schema" {
		gc = append(gc, `"responseMimeType":"application/json"`)
	}
	effort := req.Get("reasoning.effort").Str
	if e := req.Get("reasoning_effort").Str; e != "" {
		effort = e
	}
	if b, ok := thinkingBudget[effort]; ok && !p.Dropped("reasoning") && !p.Dropped("reasoning_effort") {
		gc = append(gc, `"thinkingConfig":{"thinkingBudget":`+strconv.Itoa(b)+`}`)
	}
	if len(gc) > 0 {
		out.Member("generationConfig", "{"+strings.Join(gc, ",")+"}")
	}
	_, native := websearch.Requested(req)
	if tools := p.Get("tools"); tools.IsArray() && len(tools.Array()) > 0 {
		var decls []string
		tools.ForEach(func(_, t gjson.Result) bool {
			f := t.Get("function")
			d := `{"name":` + sdk.Quote(f.Get("name").Str)
			if v := f.Get("description"); v.Exists() {
				d += `,"description":` + sdk.Quote(v.Str)
			}
			if v := f.Get("parameters"); v.IsObject() {
				d += `,"parameters":` + v.Raw
			}
			decls = append(decls, d+"}")
			return true
		})
		search := ""
		if native {
			search = `,` + googleSearch
		}
		out.Member("tools", `[{"functionDeclarations":[`+strings.Join(decls, ",")+`]}`+search+`]`)
		switch tc := p.Get("tool_choice"); {
		case tc.Str == "none":
			out.Member("toolConfig", `{"functionCallingConfig":{"mode":"NONE"}}`)
		case tc.Str == "required":
			out.Member("toolConfig", `{"functionCallingConfig":{"mode":"ANY"}}`)
		case tc.Get("function.name").Exists():
			out.Member("toolConfig", `{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":[`+sdk.Quote(tc.Get("function.name").Str)+`]}}`)
		}
	} else if native {
		out.Member("tools", `[`+googleSearch+`]`)
	}
	out.Byte('}')
	out.Close()
	return nil
}

// googleSearch is the Google Search grounding tool, for the web plugin's
// native engine (docs/web-search.md). It takes no options: the web
// plugin's domain filters, max_uses and location do not reach Gemini.
const googleSearch = `{"googleSearch":{}}`

// grounding turns a candidate's groundingMetadata into url_citation
// annotations: one per grounding chunk a support cites, spanning the
// support's segment. Segment offsets are bytes of the text; index turns a
// byte offset into a code point offset of the message content (part is
// the segment's partIndex). Supports ending at or before done (a byte
// offset) were annotated already and are skipped.
func grounding(gm gjson.Result, index func(part, byteOffset int64) int, done int64) (annotations []string, end int64) {
	chunks := gm.Get("groundingChunks").Array()
	end = done
	gm.Get("groundingSupports").ForEach(func(_, s gjson.Result) bool {
		seg := s.Get("segment")
		part, from, to := seg.Get("partIndex").Int(), seg.Get("startIndex").Int(), seg.Get("endIndex").Int()
		if to <= done {
			return true
		}
		end = max(end, to)
		s.Get("groundingChunkIndices").ForEach(func(_, i gjson.Result) bool {
			if n := int(i.Int()); n >= 0 && n < len(chunks) {
				w := chunks[n].Get("web")
				if !w.Exists() {
					w = chunks[n].Get("retrievedContext")
				}
				annotations = append(annotations, websearch.Annotation(w.Get("uri").Str, w.Get("title").Str, seg.Get("text").Str, index(part, from), index(part, to)))
			}
			return true
		})
		return true
	})
	return annotations, end
}

// searches is usage.server_tool_use for a grounded answer: Gemini reports
// the queries it ran as webSearchQueries.
func searches(usage string, gm gjson.Result) string {
	n := len(gm.Get("webSearchQueries").Array())
	if n == 0 {
		return usage
	}
	return usage[:len(usage)-1] + `,"server_tool_use":{"web_search_requests":` + strconv.Itoa(n) + `}}`
}

// functionResponse is FunctionResponse.response for a tool result: a
// result that is a JSON object is the response itself (as in Gemini's
// function-calling guide); any other text is the "output" member, the key
// the API reference names for a function's output.
func functionResponse(result string) string {
	if gjson.Valid(result) && gjson.Parse(result).IsObject() {
		return result
	}
	return `{"output":` + sdk.Quote(result) + `}`
}

func userParts(c gjson.Result) string {
	if c.Type == gjson.String {
		return `[{"text":` + sdk.Quote(c.Str) + `}]`
	}
	var parts []string
	c.ForEach(func(_, p gjson.Result) bool {
		switch p.Get("type").Str {
		case "text":
			parts = append(parts, `{"text":`+sdk.Quote(p.Get("text").Str)+`}`)
		case "image_url":
			parts = append(parts, imagePart(p.Get("image_url.url").Str))
		case "file":
			// A PDF for the model to read itself (the file-parser plugin's
			// native engine, or a request without the plugin).
			parts = append(parts, filePart(p.Get("file.file_data").Str))
		}
		return true
	})
	return "[" + strings.Join(parts, ",") + "]"
}

// imagePart is inline data for a data: URL, a file reference otherwise.
func imagePart(url string) string {
	if mime, data, ok := sdk.DataURL(url); ok {
		return `{"inlineData":{"mimeType":` + sdk.Quote(mime) + `,"data":` + sdk.Quote(data) + `}}`
	}
	mime := "image/jpeg"
	switch {
	case strings.HasSuffix(url, ".png"):
		mime = "image/png"
	case strings.HasSuffix(url, ".webp"):
		mime = "image/webp"
	case strings.HasSuffix(url, ".gif"):
		mime = "image/gif"
	}
	return `{"fileData":{"mimeType":` + sdk.Quote(mime) + `,"fileUri":` + sdk.Quote(url) + `}}`
}

// filePart is inline data for a file's data URL, a file reference (a PDF)
// otherwise.
func filePart(url string) string {
	if mime, data, ok := sdk.DataURL(url); ok {
		return `{"inlineData":{"mimeType":` + sdk.Quote(mime) + `,"data":` + sdk.Quote(data) + `}}`
	}
	return `{"fileData":{"mimeType":"application/pdf","fileUri":` + sdk.Quote(url) + `}}`
}

var finishReasons = map[string]string{
	"STOP": "stop", "MAX_TOKENS": "length", "SAFETY": "content_filter", "RECITATION": "content_filter",
	"BLOCKLIST": "content_filter", "PROHIBITED_CONTENT": "content_filter", "SPII": "content_filter",
}

// nativeFinish is Gemini's finishReason as OpenRouter's
// native_finish_reason (JSON): the reason as the provider gave it (STOP,
// MAX_TOKENS, …), null when it gave none.
func nativeFinish(s string) string {
	if s == "" {
		return "null"
	}
	return sdk.Quote(s)
}

func finishReason(s string, toolCalls bool) string {
	if toolCalls {
		return "tool_calls"
	}
	if f, ok := finishReasons[s]; ok {
		return f
	}
	return "stop"
}

func usage(u gjson.Result) string {
	prompt, out, thoughts := u.Get("promptTokenCount").Int(), u.Get("candidatesTokenCount").Int(), u.Get("thoughtsTokenCount").Int()
	completion := out + thoughts
	return `{"prompt_tokens":` + itoa(prompt) + `,"completion_tokens":` + itoa(completion) + `,"total_tokens":` + itoa(prompt+completion) +
		`,"prompt_tokens_details":{"cached_tokens":` + itoa(u.Get("cachedContentTokenCount").Int()) + `}` +
		`,"completion_tokens_details":{"reasoning_tokens":` + itoa(thoughts) + `}}`
}

// candidate turns the first candidate's parts into text, reasoning and
// tool calls (ids numbered from firstCall).
func candidate(c gjson.Result, firstCall int64) (text, reasoning string, calls []string) {
	var t, r strings.Builder
	n := firstCall
	c.Get("content.parts").ForEach(func(_, p gjson.Result) bool {
		switch {
		case p.Get("functionCall").Exists():
			fc := p.Get("functionCall")
			args := fc.Get("args").Raw
			if args == "" {
				args = "{}"
			}
			calls = append(calls, `{"index":`+itoa(n)+`,"id":"call_`+itoa(n)+`","type":"function","function":{"name":`+sdk.Quote(fc.Get("name").Str)+`,"arguments":`+sdk.Quote(args)+`}}`)
			n++
		case p.Get("thought").Bool():
			r.WriteString(p.Get("text").Str)
		default:
			t.WriteString(p.Get("text").Str)
		}
		return true
	})
	return t.String(), r.String(), calls
}

// ChatResponse is the chat_response hook.
func ChatResponse(in *sdk.In, out *sdk.Out) error {
	resp := gjson.ParseBytes(in.Field(1))
	c := resp.Get("candidates.0")
	if !c.Exists() {
		// No candidate with prompt feedback is a blocked prompt; the
		// feedback may carry only blockReasonMessage (seen in Google's SDK
		// test data).
		if !resp.Get("promptFeedback").IsObject() {
			return sdk.Error("upstream response has no candidates")
		}
		out.FieldString(`{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":""},"finish_reason":"content_filter"}],"usage":` + usage(resp.Get("usageMetadata")) + `}`)
		return nil
	}
	t, r, calls := candidate(c, 0)
	var b strings.Builder
	b.WriteString(`{"id":` + sdk.Quote(resp.Get("responseId").Str) + `,"object":"chat.completion","model":` + sdk.Quote(resp.Get("modelVersion").Str))
	b.WriteString(`,"choices":[{"index":0,"message":{"role":"assistant","content":`)
	if t == "" && len(calls) > 0 {
		b.WriteString("null")
	} else {
		b.WriteString(sdk.Quote(t))
	}
	if r != "" {
		b.WriteString(`,"reasoning":` + sdk.Quote(r))
	}
	if len(calls) > 0 {
		b.WriteString(`,"tool_calls":[` + strings.Join(calls, ",") + `]`)
	}
	gm := c.Get("groundingMetadata")
	if gm.Exists() {
		// Offsets are within the segment's part; the content joins the
		// text parts, so each part's offset in it comes first.
		starts := map[int64]int{}
		at := 0
		c.Get("content.parts").ForEach(func(i, p gjson.Result) bool {
			if !p.Get("functionCall").Exists() && !p.Get("thought").Bool() {
				starts[i.Int()] = at
				at += len(p.Get("text").Str)
			}
			return true
		})
		index := func(part, off int64) int { return websearch.RuneIndex(t, starts[part]+int(off)) }
		if anns, _ := grounding(gm, index, -1); len(anns) > 0 {
			b.WriteString(`,"annotations":[` + strings.Join(anns, ",") + `]`)
		}
	}
	b.WriteString(`},"finish_reason":` + sdk.Quote(finishReason(c.Get("finishReason").Str, len(calls) > 0)) +
		`,"native_finish_reason":` + nativeFinish(c.Get("finishReason").Str) + `}]`)
	b.WriteString(`,"usage":` + searches(usage(resp.Get("usageMetadata")), gm) + `}`)
	out.FieldString(b.String())
	return nil
}

// StreamEvent is the chat_stream_event hook: it translates one streamed
// GenerateContentResponse. State: {"calls": n, "a": …, "u": …, "g": …}:
// the tool calls numbered so far (the role is sent with the first event,
// when the state is empty), and what grounding annotations need: the
// answer's text so far as a count of leading ASCII bytes "a" (where bytes
// and code points agree) and the text after the first other byte "u", so
// only answers with non-ASCII text carry text in the state; and "g", the
// byte offset up to which supports were annotated (a support seen again in
// a later chunk is not sent twice). In a stream, segment offsets count
// bytes of the whole answer.
func StreamEvent(in *sdk.In, out *sdk.Out) error {
	resp := gjson.ParseBytes(in.Field(1))
	st := gjson.ParseBytes(in.Field(2))
	first := !st.Exists()
	n := st.Get("calls").Int()
	ascii, rest, done := st.Get("a").Int(), st.Get("u").Str, int64(-1)
	if g := st.Get("g"); g.Exists() {
		done = g.Int()
	}
	head := `{"id":` + sdk.Quote(resp.Get("responseId").Str) + `,"object":"chat.completion.chunk","model":` + sdk.Quote(resp.Get("modelVersion").Str) + `,"choices":`
	c := resp.Get("candidates.0")
	t, r, calls := candidate(c, n)
	if rest == "" && isASCII(t) {
		ascii += int64(len(t))
	} else {
		rest += t
	}
	var anns []string
	if gm := c.Get("groundingMetadata"); gm.Exists() {
		index := func(_, off int64) int {
			if off <= ascii {
				return int(off)
			}
			return int(ascii) + websearch.RuneIndex(rest, int(off-ascii))
		}
		anns, done = grounding(gm, index, done)
	}
	state := `{"calls":` + itoa(n+int64(len(calls)))
	if ascii > 0 {
		state += `,"a":` + itoa(ascii)
	}
	if rest != "" {
		state += `,"u":` + sdk.Quote(rest)
	}
	if done >= 0 {
		state += `,"g":` + itoa(done)
	}
	out.FieldString(state + "}")
	var delta []string
	if first {
		delta = append(delta, `"role":"assistant"`)
	}
	if t != "" || first {
		delta = append(delta, `"content":`+sdk.Quote(t))
	}
	if r != "" {
		delta = append(delta, `"reasoning":`+sdk.Quote(r))
	}
	if len(calls) > 0 {
		delta = append(delta, `"tool_calls":[`+strings.Join(calls, ",")+`]`)
	}
	if len(anns) > 0 {
		delta = append(delta, `"annotations":[`+strings.Join(anns, ",")+`]`)
	}
	if len(delta) > 0 {
		out.FieldString(head + `[{"index":0,"delta":{` + strings.Join(delta, ",") + `},"finish_reason":null}]}`)
	}
	if fr := c.Get("finishReason").Str; fr != "" {
		out.FieldString(head + `[{"index":0,"delta":{},"finish_reason":` + sdk.Quote(finishReason(fr, n+int64(len(calls)) > 0)) +
			`,"native_finish_reason":` + nativeFinish(fr) + `}]}`)
		if u := resp.Get("usageMetadata"); u.Exists() {
			out.FieldString(head + `[],"usage":` + searches(usage(u), c.Get("groundingMetadata")) + `}`)
		}
	}
	return nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// vertex reports a provider that serves Gemini through Vertex AI (api:
// vertex): its chat paths are the Gemini API's under the publisher URL,
// but its embedding models answer :predict, not batchEmbedContents.
func vertex(ctx []byte) bool { return sdk.Get(ctx, "api").Str == "vertex" }

// EmbedRequest is the embed_request hook.
func (a *Adapter) EmbedRequest(in *sdk.In, out *sdk.Out) error {
	ctx, body := in.Field(0), in.Field(1)
	model := sdk.Get(ctx, "model").Str
	req := gjson.ParseBytes(body)
	if vertex(ctx) {
		return a.vertexEmbed(model, req, out)
	}
	out.FieldString("POST")
	out.FieldString("/models/" + model + ":batchEmbedContents")
	out.FieldString(headers + "X-Switchyard-Adapter: " + a.Build + "\n")
	dims := ""
	if d := req.Get("dimensions"); d.Exists() {
		dims = `,"outputDimensionality":` + d.Raw
	}
	item := func(parts string) string {
		return `{"model":` + sdk.Quote("models/"+model) + `,"content":{"parts":` + parts + `}` + dims + `}`
	}
	var reqs []string
	input := req.Get("input")
	if input.Type == gjson.String {
		reqs = append(reqs, item(`[{"text":`+sdk.Quote(input.Str)+`}]`))
	}
	input.ForEach(func(_, it gjson.Result) bool {
		if it.Type == gjson.String {
			reqs = append(reqs, item(`[{"text":`+sdk.Quote(it.Str)+`}]`))
		} else {
			reqs = append(reqs, item(userParts(it.Get("content"))))
		}
		return true
	})
	out.FieldString(`{"requests":[` + strings.Join(reqs, ",") + `]}`)
	return nil
}

// vertexEmbed is a Vertex AI text embedding request
// (https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/text-embeddings-api):
// POST .../models/{model}:predict with one instance per input and the
// dimensions as outputDimensionality. These models embed text: an item
// with another part is refused, never dropped.
func (a *Adapter) vertexEmbed(model string, req gjson.Result, out *sdk.Out) error {
	if multimodal(model) {
		return a.vertexMultimodalEmbed(model, req, out)
	}
	return a.predict(model, req, out, "outputDimensionality", func(it gjson.Result) (string, error) {
		switch {
		case it.Type == gjson.String:
			return `{"content":` + sdk.Quote(it.Str) + `}`, nil
		case it.IsObject():
			var bad error
			it.Get("content").ForEach(func(_, p gjson.Result) bool {
				if p.Get("type").Str != "text" {
					bad = sdk.Error("Vertex AI text embeddings take text, not " + sdk.Quote(p.Get("type").Str))
				}
				return bad == nil
			})
			return `{"content":` + sdk.Quote(sdk.ContentText(it.Get("content"))) + `}`, bad
		default:
			return "", sdk.Error("Vertex AI text embeddings take text, not token ids")
		}
	})
}

// predict writes a Vertex AI :predict embedding request of model: one
// instance per input item (a string input is one item), made by instance,
// which refuses an item with an error (the request is then refused, never
// sent with the item dropped); dimensions go as parameters.<dimension>.
func (a *Adapter) predict(model string, req gjson.Result, out *sdk.Out, dimension string, instance func(it gjson.Result) (string, error)) error {
	var instances []string
	var bad error
	add := func(it gjson.Result) bool {
		var in string
		in, bad = instance(it)
		instances = append(instances, in)
		return bad == nil
	}
	input := req.Get("input")
	if input.Type == gjson.String {
		add(input)
	} else {
		input.ForEach(func(_, it gjson.Result) bool { return add(it) })
	}
	if bad != nil {
		return bad
	}
	body := `{"instances":[` + strings.Join(instances, ",") + `]`
	if d := req.Get("dimensions"); d.Type == gjson.Number {
		body += `,"parameters":{"` + dimension + `":` + d.Raw + `}`
	}
	out.FieldString("POST")
	out.FieldString("/models/" + model + ":predict")
	out.FieldString(headers + "X-Switchyard-Adapter: " + a.Build + "\n")
	out.FieldString(body + "}")
	return nil
}

// multimodal reports Vertex AI's multimodal embedding model
// (multimodalembedding, multimodalembedding@001), whose :predict takes
// text or an image per instance and answers textEmbedding or
// imageEmbedding.
func multimodal(model string) bool { return strings.HasPrefix(model, "multimodalembedding") }

// vertexMultimodalEmbed is a multimodalembedding request
// (https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/multimodal-embeddings):
// one instance per input, {"text"} or {"image": {"bytesBase64Encoded",
// "mimeType"}} for a data URL or {"image": {"gcsUri"}} for a gs:// URL;
// dimensions as parameters.dimension (128, 256, 512 or 1408). An instance
// holds exactly one of text, image or video (the VisionEmbeddingModelInstance
// reference), and the model answers a text and an image with two vectors,
// not one joint vector: an item that mixes them, holds two images, or
// names an image by an http(s) URL (which Vertex does not fetch) is
// refused, as are token ids.
func (a *Adapter) vertexMultimodalEmbed(model string, req gjson.Result, out *sdk.Out) error {
	return a.predict(model, req, out, "dimension", func(it gjson.Result) (string, error) {
		switch {
		case it.Type == gjson.String:
			return `{"text":` + sdk.Quote(it.Str) + `}`, nil
		case it.IsObject():
			var text []string
			var bad error
			image := ""
			it.Get("content").ForEach(func(_, p gjson.Result) bool {
				switch p.Get("type").Str {
				case "text":
					text = append(text, p.Get("text").Str)
				case "image_url":
					if image != "" {
						bad = sdk.Error("Vertex AI multimodal embeddings take one image per input item")
					} else {
						image, bad = vertexImage(p.Get("image_url.url").Str)
					}
				default:
					bad = sdk.Error("Vertex AI multimodal embeddings take text or an image, not " + sdk.Quote(p.Get("type").Str))
				}
				return bad == nil
			})
			switch {
			case bad != nil:
				return "", bad
			case image != "" && len(text) > 0:
				return "", sdk.Error("Vertex AI multimodal embeddings embed text and an image apart (two vectors, not one): send them as two input items")
			case image != "":
				return `{"image":` + image + `}`, nil
			default:
				return `{"text":` + sdk.Quote(strings.Join(text, "\n")) + `}`, nil
			}
		default:
			return "", sdk.Error("Vertex AI multimodal embeddings take text or images, not token ids")
		}
	})
}

// vertexImage is the image object of a multimodal instance for an
// image_url: a data URL's bytes and media type, or a Cloud Storage URI.
func vertexImage(url string) (string, error) {
	if strings.HasPrefix(url, "gs://") {
		return `{"gcsUri":` + sdk.Quote(url) + `}`, nil
	}
	rest, ok := strings.CutPrefix(url, "data:")
	meta, data, found := strings.Cut(rest, ",")
	mime, isB64 := strings.CutSuffix(meta, ";base64")
	if !ok || !found || !isB64 {
		return "", sdk.Error("Vertex AI multimodal embeddings take an image as a base64 data: URL or a gs:// URI")
	}
	return `{"bytesBase64Encoded":` + sdk.Quote(data) + `,"mimeType":` + sdk.Quote(mime) + `}`, nil
}

// vertexMultimodalResponse is a multimodalembedding answer as an
// embeddings list: each prediction's textEmbedding or imageEmbedding (an
// instance holds one of them). Its body reports no token count, so the
// gateway counts the tokens.
func vertexMultimodalResponse(r gjson.Result, out *sdk.Out) error {
	preds := r.Get("predictions")
	if !preds.IsArray() {
		return sdk.Error("upstream response holds no predictions")
	}
	var b strings.Builder
	b.WriteString(`{"object":"list","data":[`)
	var bad error
	preds.ForEach(func(i, p gjson.Result) bool {
		e := p.Get("textEmbedding")
		if !e.IsArray() {
			e = p.Get("imageEmbedding")
		}
		if !e.IsArray() {
			bad = sdk.Error("upstream prediction " + strconv.FormatInt(i.Int(), 10) + " holds no embedding")
			return false
		}
		if i.Int() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"object":"embedding","index":` + strconv.FormatInt(i.Int(), 10) + `,"embedding":` + e.Raw + `}`)
		return true
	})
	if bad != nil {
		return bad
	}
	b.WriteString(`]}`)
	out.FieldString(b.String())
	return nil
}

// vertexEmbedResponse is a Vertex AI :predict answer as an embeddings
// list: each prediction's values, and the token counts of its statistics
// as the usage.
func vertexEmbedResponse(r gjson.Result, out *sdk.Out) error {
	preds := r.Get("predictions")
	if !preds.IsArray() {
		return sdk.Error("upstream response holds no predictions")
	}
	var b strings.Builder
	b.WriteString(`{"object":"list","data":[`)
	var tokens int64
	preds.ForEach(func(i, p gjson.Result) bool {
		if i.Int() > 0 {
			b.WriteByte(',')
		}
		e := p.Get("embeddings")
		tokens += e.Get("statistics.token_count").Int()
		b.WriteString(`{"object":"embedding","index":` + strconv.FormatInt(i.Int(), 10) + `,"embedding":` + e.Get("values").Raw + `}`)
		return true
	})
	n := strconv.FormatInt(tokens, 10)
	b.WriteString(`],"usage":{"prompt_tokens":` + n + `,"total_tokens":` + n + `}}`)
	out.FieldString(b.String())
	return nil
}

// EmbedResponse is the embed_response hook.
func EmbedResponse(in *sdk.In, out *sdk.Out) error {
	if vertex(in.Field(0)) {
		if multimodal(sdk.Get(in.Field(0), "model").Str) {
			return vertexMultimodalResponse(gjson.ParseBytes(in.Field(1)), out)
		}
		return vertexEmbedResponse(gjson.ParseBytes(in.Field(1)), out)
	}
	var b strings.Builder
	b.WriteString(`{"object":"list","data":[`)
	i := 0
	gjson.GetBytes(in.Field(1), "embeddings").ForEach(func(_, e gjson.Result) bool {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"object":"embedding","index":` + strconv.Itoa(i) + `,"embedding":` + e.Get("values").Raw + `}`)
		i++
		return true
	})
	b.WriteString(`]}`)
	out.FieldString(b.String())
	return nil
}

// MapError is the error hook.
func MapError(in *sdk.In, out *sdk.Out) error {
	status, _ := strconv.Atoi(in.String(1))
	body := in.Field(2)
	// Gemini answers a bad or expired API key with 400 INVALID_ARGUMENT
	// (reason API_KEY_INVALID), not 401: it is the gateway's credential
	// that is wrong, not the caller's request, so it is mapped like a 401.
	if status == 400 && keyRejected(sdk.Get(body, "error.details")) {
		status = 401
	}
	sdk.UpstreamError(out, status, sdk.ErrorMessage(body))
	return nil
}

func keyRejected(details gjson.Result) bool {
	rejected := false
	details.ForEach(func(_, d gjson.Result) bool {
		switch d.Get("reason").Str {
		case "API_KEY_INVALID", "API_KEY_EXPIRED":
			rejected = true
		}
		return !rejected
	})
	return rejected
}
