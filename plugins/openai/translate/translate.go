// Package translate is the OpenAI adapter's translation: the adapter for OpenAI and every OpenAI-compatible server
// (vLLM, Ollama's /v1, llama.cpp server, Together, Groq, DeepInfra, …).
// The unified format is OpenAI's, so the work is mostly subtraction: drop
// what the upstream does not understand, name the upstream model, ask for
// usage in streams, and turn upstream errors into the gateway's statuses.
//
// It is a plain package so it builds for the host too: the module's main
// only registers these handlers, and the tests run them natively against
// payloads from OpenAI's API reference (testdata/SOURCES.md).
package translate

import (
	"strings"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/abi/chatparams"
	"github.com/switchyard/switchyard/plugins/internal/websearch"
	"github.com/switchyard/switchyard/sdk"
	"github.com/tidwall/gjson"
)

// Adapter holds what differs between builds of the module.
type Adapter struct {
	// Build is stamped into the X-Switchyard-Adapter request header so
	// operators (and the tests that swap module builds) can see which build
	// translated a request.
	Build string

	// drops is reused across calls: the hook runs for every request and a
	// Go guest must not allocate on that path. It is per Adapter, not
	// global, because the host runs this same code natively and
	// concurrently for a module that declares it (docs/abi.md, "native"),
	// one Adapter per goroutine.
	drops sdk.Params
}

// forwarded are the request fields an OpenAI-compatible chat API accepts:
// the chat parameters the shared list marks Forwarded. Everything else
// (gateway-only fields such as provider, plugins, models, session_id,
// debug) is dropped; the host additionally names, in ctx.drop, the optional
// parameters this endpoint does not support. (Custom tools travel in tools;
// the host removes them from the body of an endpoint that does not take
// them, so ctx.drop's custom_tools needs nothing here.)
var forwarded = func() map[string]bool {
	m := map[string]bool{}
	for _, name := range chatparams.Names(chatparams.Forwarded) {
		m[name] = true
	}
	return m
}()

func (a *Adapter) headers(out *sdk.Out) {
	out.FieldString("Authorization: Bearer " + abi.APIKeyPlaceholder + "\nContent-Type: application/json\nX-Switchyard-Adapter: " + a.Build + "\n")
}

// ChatRequest is the chat_request hook.
func (a *Adapter) ChatRequest(in *sdk.In, out *sdk.Out) error {
	ctx, body := in.Field(0), in.Field(1)
	drops := &a.drops
	drops.Load(ctx, nil) // only the drop list is read here
	f := formOf(ctx)
	out.FieldString("POST")
	out.FieldString("/chat/completions")
	a.headers(out)
	out.Open()
	out.Byte('{')
	out.MemberString("model", sdk.Get(ctx, "model").Str)
	// One walk of the body: what the rest needs to know of it (the first
	// member of each name, as a Get would find) is noted on the way, not
	// looked up with three more scans.
	var effort, stream gjson.Result
	hasEffort, hasSearch, hasPlugins, hasReasoning := false, false, false, false
	sdk.Members(body, func(key string, v gjson.Result) bool {
		switch key {
		case "stream":
			if !stream.Exists() {
				stream = v
			}
		case "web_search_options":
			hasSearch = true
		case "plugins":
			hasPlugins = true
		}
		switch {
		case key == "model" || key == "stream_options":
		case key == "reasoning":
			effort = v.Get("effort")
			if f != nil && f.reasoningObject && !drops.Dropped(key) && !hasReasoning {
				hasReasoning = true
				out.Member(key, v.Raw)
			}
		case !forwarded[key] || drops.Dropped(key) || !f.keeps(key) || f.shadowed(key, body):
		case key == "messages" && f != nil && f.passback:
			out.Member(key, f.passBack(v))
		default:
			if key == "reasoning_effort" {
				hasEffort = true
			}
			out.Member(f.name(key), v.Raw)
		}
		return true
	})
	// The unified request carries reasoning.effort; OpenAI's chat API takes
	// the flat reasoning_effort.
	if !hasEffort && !hasReasoning && effort.Type == gjson.String && !drops.Dropped("reasoning_effort") && f.keeps("reasoning_effort") {
		out.Member("reasoning_effort", effort.Raw)
	}
	// The web plugin's native engine: OpenAI searches when the request
	// carries web_search_options (forwarded above when the client sent it).
	if !hasSearch && hasPlugins && f.keeps("web_search_options") {
		if o, on := websearch.Requested(gjson.ParseBytes(body)); on {
			out.Member("web_search_options", searchOptions(o))
		}
	}
	if stream.Bool() && (f == nil || !f.noStreamOptions) {
		// Usage arrives in a last chunk only when asked for; the gateway
		// always reports full usage (spec 2.1 stream_options).
		out.Member("stream_options", `{"include_usage":true}`)
	}
	out.Byte('}')
	out.Close()
	return nil
}

// searchOptions is web_search_options for the web plugin's options:
// OpenAI takes the user's location (in its nested form) and no domain
// filters or use cap, which are left out.
func searchOptions(o websearch.Options) string {
	if o.Location == "" {
		return "{}"
	}
	return `{"user_location":{"type":"approximate","approximate":{` + strings.Join(websearch.LocationFields(o.Location), ",") + `}}}`
}

// EmbedRequest is the embed_request hook.
func (a *Adapter) EmbedRequest(in *sdk.In, out *sdk.Out) error {
	ctx, body := in.Field(0), in.Field(1)
	out.FieldString("POST")
	out.FieldString("/embeddings")
	a.headers(out)
	out.Open()
	out.Byte('{')
	out.MemberString("model", sdk.Get(ctx, "model").Str)
	sdk.Members(body, func(key string, v gjson.Result) bool {
		switch key {
		case "input":
			writeInput(out, v)
		case "dimensions", "user":
			out.Member(key, v.Raw)
		}
		return true
	})
	// The host converts to base64 itself when the client asked for it, so
	// every upstream is asked for floats.
	out.Member("encoding_format", `"float"`)
	out.Byte('}')
	out.Close()
	return nil
}

// writeInput passes strings and token ids through and flattens multimodal
// items that hold only text into strings, which every OpenAI-compatible
// server accepts. Items with images are passed as they are, for servers that
// embed images.
func writeInput(out *sdk.Out, v gjson.Result) {
	if !v.IsArray() || !onlyText(v) {
		out.Member("input", v.Raw)
		return
	}
	out.Member("input", "[")
	first := true
	v.ForEach(func(_, item gjson.Result) bool {
		if !first {
			out.Byte(',')
		}
		first = false
		if item.Type == gjson.String {
			out.WriteString(item.Raw)
			return true
		}
		// The text parts of one item joined with a newline: one item, one vector.
		out.WriteString(sdk.Quote(sdk.ContentText(item.Get("content"))))
		return true
	})
	out.Byte(']')
}

func onlyText(items gjson.Result) bool {
	ok := true
	items.ForEach(func(_, item gjson.Result) bool {
		if item.Type == gjson.Number || item.IsArray() {
			ok = false // token ids: passed as they are
		} else if item.IsObject() {
			item.Get("content").ForEach(func(_, p gjson.Result) bool {
				ok = p.Get("type").Str == "text"
				return ok
			})
		}
		return ok
	})
	return ok
}

// PassEvent is the chat_stream_event hook. It keeps no stream state:
// OpenAI's chunks are already unified.
func PassEvent(in *sdk.In, out *sdk.Out) error {
	out.Field(nil)
	out.Field(in.Field(1))
	return nil
}

// PassBody is the chat_response and embed_response hook: OpenAI's
// responses are already unified.
func PassBody(in *sdk.In, out *sdk.Out) error {
	out.Field(in.Field(1))
	return nil
}

// MapError is the error hook. Upstream authentication failures are the
// gateway operator's problem, and OpenAI's 401 message quotes part of the
// key, so sdk.UpstreamError never passes a 401's text on.
func MapError(in *sdk.In, out *sdk.Out) error { return sdk.MapError(in, out) }
