//go:build wasip1

// Command openai is the adapter for OpenAI and every OpenAI-compatible server
// (vLLM, Ollama's /v1, llama.cpp server, Together, Groq, DeepInfra, …).
// The unified format is OpenAI's, so the work is mostly subtraction: drop
// what the upstream does not understand, name the upstream model, ask for
// usage in streams, and turn upstream errors into the gateway's statuses.
package main

import (
	"strconv"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/sdk"
	"github.com/tidwall/gjson"
)

// build is stamped into a request header so operators (and the tests that
// swap module builds) can see which build translated a request. Override
// with -ldflags "-X main.build=…".
var build = "openai/1.0.0"

func main() {}

func init() {
	sdk.Handle(abi.HookChatRequest, chatRequest)
	sdk.Handle(abi.HookChatResponse, passBody)
	sdk.Handle(abi.HookChatStreamEvent, passEvent)
	sdk.Handle(abi.HookEmbedRequest, embedRequest)
	sdk.Handle(abi.HookEmbedResponse, passBody)
	sdk.Handle(abi.HookError, mapError)
}

// chatParams are the request fields an OpenAI-compatible chat API accepts.
// Everything else (gateway-only fields such as provider, plugins, models,
// session_id, debug) is dropped; the host additionally names, in ctx.drop,
// the optional parameters this endpoint does not support.
var chatParams = map[string]bool{
	"messages": true, "stream": true, "temperature": true, "top_p": true, "top_k": true, "min_p": true,
	"repetition_penalty": true, "frequency_penalty": true, "presence_penalty": true,
	"logit_bias": true, "logprobs": true, "top_logprobs": true, "max_completion_tokens": true,
	"max_tokens": true, "seed": true, "stop": true, "response_format": true, "tools": true,
	"tool_choice": true, "parallel_tool_calls": true, "reasoning_effort": true, "modalities": true,
	"user": true, "service_tier": true, "metadata": true, "n": true, "audio": true,
	"prediction": true, "web_search_options": true, "verbosity": true, "prompt_cache_key": true,
	"safety_identifier": true, "functions": true, "function_call": true, "store": true,
}

func headers(out *sdk.Out) {
	out.FieldString("Authorization: Bearer " + abi.APIKeyPlaceholder + "\nContent-Type: application/json\nX-Switchyard-Adapter: " + build + "\n")
}

// dropSet holds ctx.drop for one call. A fixed array, reused: the hook
// runs for every request and a Go guest must not allocate on that path.
type dropSet struct {
	n     int
	names [32]string
}

var drops dropSet

func (d *dropSet) load(ctx []byte) {
	d.n = 0
	sdk.Get(ctx, "drop").ForEach(func(_, v gjson.Result) bool {
		if d.n < len(d.names) {
			d.names[d.n] = v.Str
			d.n++
		}
		return true
	})
}

func (d *dropSet) has(key string) bool {
	for _, n := range d.names[:d.n] {
		if n == key {
			return true
		}
	}
	return false
}

func chatRequest(in *sdk.In, out *sdk.Out) error {
	ctx, body := in.Field(0), in.Field(1)
	drops.load(ctx)
	stream := sdk.Get(body, "stream").Bool()
	out.FieldString("POST")
	out.FieldString("/chat/completions")
	headers(out)
	out.Open()
	out.Byte('{')
	out.MemberString("model", sdk.Get(ctx, "model").Str)
	var effort gjson.Result
	hasEffort := false
	sdk.Members(body, func(key string, v gjson.Result) bool {
		switch {
		case key == "model" || key == "stream_options":
		case key == "reasoning":
			effort = v.Get("effort")
		case !chatParams[key] || drops.has(key):
		default:
			if key == "reasoning_effort" {
				hasEffort = true
			}
			out.Member(key, v.Raw)
		}
		return true
	})
	// The unified request carries reasoning.effort; OpenAI's chat API takes
	// the flat reasoning_effort.
	if !hasEffort && effort.Type == gjson.String && !drops.has("reasoning_effort") {
		out.Member("reasoning_effort", effort.Raw)
	}
	if stream {
		// Usage arrives in a last chunk only when asked for; the gateway
		// always reports full usage (spec 2.1 stream_options).
		out.Member("stream_options", `{"include_usage":true}`)
	}
	out.Byte('}')
	out.Close()
	return nil
}

func embedRequest(in *sdk.In, out *sdk.Out) error {
	ctx, body := in.Field(0), in.Field(1)
	out.FieldString("POST")
	out.FieldString("/embeddings")
	headers(out)
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

// passEvent keeps no stream state: OpenAI's chunks are already unified.
func passEvent(in *sdk.In, out *sdk.Out) error {
	out.Field(nil)
	out.Field(in.Field(1))
	return nil
}

func passBody(in *sdk.In, out *sdk.Out) error {
	out.Field(in.Field(1))
	return nil
}

// mapError turns an upstream error into a gateway status and a message.
// Upstream authentication failures are the gateway operator's problem, and
// OpenAI's 401 message quotes part of the key, so its text is never passed on.
func mapError(in *sdk.In, out *sdk.Out) error {
	status, _ := strconv.Atoi(in.String(1))
	body := in.Field(2)
	msg := sdk.Get(body, "error.message").Str
	if msg == "" {
		msg = sdk.Get(body, "message").Str
	}
	if msg == "" && len(body) > 0 && len(body) < 300 && !gjson.ValidBytes(body) {
		msg = string(body)
	}
	sdk.UpstreamError(out, status, msg)
	return nil
}
