package server

// Client compatibility (issue 9): what real clients send that validation
// accepts but upstreams may refuse, normalised once in the host before
// routing so every adapter benefits:
//
//   - null for an optional field means absent: the nulls OpenAI's SDK types
//     allow (stream, metadata, modalities, response_format, tools,
//     tool_choice, user, a function's description and parameters, a
//     message's name) are removed, since some providers reject them;
//   - stream_options.include_obfuscation has no effect (the gateway's chunks
//     carry no obfuscation padding) and is removed;
//   - legacy function calling in the conversation becomes tool calling: an
//     assistant function_call becomes tool_calls[0] with a generated id, and
//     the role "function" message answering it a role "tool" message with
//     that id;
//   - a model name without a vendor is resolved through the catalog's
//     aliases (400 with close matches when none covers it);
//   - custom tools ({"type":"custom"}) count as the routing parameter
//     custom_tools: endpoints that list it in supported_parameters receive
//     them, the others get the request without them (or are not eligible,
//     with provider.require_parameters);
//   - a max output above an endpoint's maximum is clamped to it in that
//     endpoint's body, and service_metadata says so;
//   - embeddings input as token ids goes as is to providers that take ids
//     (embedding_token_ids) and is decoded to text for the others.

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"

	"github.com/gofiber/fiber/v2"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/catalog"
	"github.com/switchyard/switchyard/host/route"
	"github.com/switchyard/switchyard/host/tokenize"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// customToolsParam is the routing parameter a request with custom tools
// carries, and the supported_parameters entry by which an endpoint says it
// takes them (docs/interface-choices.md).
const customToolsParam = "custom_tools"

// chatNullable are the top-level fields whose null is removed.
var chatNullable = []string{"stream", "stream_options", "metadata", "modalities", "response_format", "tools", "tool_choice", "user"}

// chatCompat normalises a validated chat body (see the file comment).
func (s *Server) chatCompat(body []byte) ([]byte, *apierr.Error) {
	body, err := s.resolveModels(body, "model", "models")
	if err != nil {
		return nil, err
	}
	if bytes.Contains(body, []byte("null")) {
		body = stripChatNulls(body)
	}
	if bytes.Contains(body, []byte(`"function`)) {
		body = mapLegacyFunctions(body)
	}
	if gjson.GetBytes(body, "stream_options.include_obfuscation").Exists() {
		body, _ = sjson.DeleteBytes(body, "stream_options.include_obfuscation")
	}
	return body, nil
}

// parseChatCompat is parseChat plus the routing parameter of custom tools.
func (s *Server) parseChatCompat(c *fiber.Ctx, body []byte) (*chatRequest, *apierr.Error) {
	r, err := parseChat(c, body)
	if err == nil && hasCustomTool(gjson.GetBytes(body, "tools")) {
		r.params = append(r.params, customToolsParam)
	}
	return r, err
}

// resolveModels rewrites the model fields (a string at the first path, an
// array at the second, if given) to catalog ids through the aliases.
func (s *Server) resolveModels(body []byte, single string, list ...string) ([]byte, *apierr.Error) {
	set := func(path, name string) *apierr.Error {
		to, err := s.Router.Resolve(name)
		if err != nil {
			return err
		}
		if to != name {
			body, _ = sjson.SetBytes(body, path, to)
		}
		return nil
	}
	if m := gjson.GetBytes(body, single); m.Type == gjson.String {
		if err := set(single, m.Str); err != nil {
			return nil, err
		}
	}
	for _, l := range list {
		var err *apierr.Error
		gjson.GetBytes(body, l).ForEach(func(k, m gjson.Result) bool {
			if m.Type == gjson.String {
				err = set(l+"."+k.String(), m.Str)
			}
			return err == nil
		})
		if err != nil {
			return nil, err
		}
	}
	return body, nil
}

func stripChatNulls(body []byte) []byte {
	del := func(path string) { body, _ = sjson.DeleteBytes(body, path) }
	for _, k := range chatNullable {
		if gjson.GetBytes(body, k).Type == gjson.Null {
			del(k)
		}
	}
	gjson.GetBytes(body, "tools").ForEach(func(i, t gjson.Result) bool {
		for _, kind := range []string{"function", "custom"} {
			t.Get(kind).ForEach(func(k, v gjson.Result) bool {
				if v.Type == gjson.Null && k.Str != "strict" {
					del("tools." + i.String() + "." + kind + "." + k.Str)
				}
				return true
			})
		}
		return true
	})
	gjson.GetBytes(body, "messages").ForEach(func(i, m gjson.Result) bool {
		for _, k := range []string{"name", "function_call"} {
			if m.Get(k).Type == gjson.Null {
				del("messages." + i.String() + "." + k)
			}
		}
		return true
	})
	return body
}

// mapLegacyFunctions turns assistant function_call fields and role
// "function" messages into tool calls and tool messages. A function message
// answers the latest unanswered function_call of the same name (the legacy
// protocol has one call at a time, so that is the one before it); one with
// no such call gets an id of its own.
func mapLegacyFunctions(body []byte) []byte {
	msgs := gjson.GetBytes(body, "messages")
	legacy := false
	msgs.ForEach(func(_, m gjson.Result) bool {
		legacy = m.Get("function_call").IsObject() || m.Get("role").Str == "function"
		return !legacy
	})
	if !legacy {
		return body
	}
	type call struct{ id, name string }
	var open []call
	out := []byte{'['}
	msgs.ForEach(func(i, m gjson.Result) bool {
		if len(out) > 1 {
			out = append(out, ',')
		}
		raw := []byte(m.Raw)
		switch fc := m.Get("function_call"); {
		case m.Get("role").Str == "assistant" && fc.IsObject():
			id := "call_fn_" + i.String()
			open = append(open, call{id, fc.Get("name").Str})
			tc := `{"id":` + strconv.Quote(id) + `,"type":"function","function":` + fc.Raw + `}`
			raw, _ = sjson.DeleteBytes(raw, "function_call")
			if prev := m.Get("tool_calls"); prev.IsArray() && len(prev.Array()) > 0 {
				raw, _ = sjson.SetRawBytes(raw, "tool_calls.-1", []byte(tc))
			} else {
				raw, _ = sjson.SetRawBytes(raw, "tool_calls", []byte("["+tc+"]"))
			}
		case m.Get("role").Str == "function":
			name := m.Get("name").Str
			id := "call_fn_" + i.String()
			for j := len(open) - 1; j >= 0; j-- {
				if open[j].name == name {
					id = open[j].id
					open = slices.Delete(open, j, j+1)
					break
				}
			}
			content := m.Get("content").Raw
			if m.Get("content").Type != gjson.String {
				content = `""` // a tool message's content is a string
			}
			raw = []byte(`{"role":"tool","tool_call_id":` + strconv.Quote(id) + `,"content":` + content + `}`)
		}
		out = append(out, raw...)
		return true
	})
	out = append(out, ']')
	body, _ = sjson.SetRawBytes(body, "messages", out)
	return body
}

func hasCustomTool(tools gjson.Result) bool {
	found := false
	tools.ForEach(func(_, t gjson.Result) bool {
		found = t.Get("type").Str == "custom"
		return !found
	})
	return found
}

// upstreamChatBody is the body one endpoint gets: without custom tools when
// it does not take them, and with the max output clamped to its maximum.
func upstreamChatBody(body []byte, ep *catalog.Endpoint, dropped []string) []byte {
	if slices.Contains(dropped, customToolsParam) {
		body = withoutCustomTools(body)
	}
	for _, k := range []string{"max_tokens", "max_completion_tokens"} {
		if n := gjson.GetBytes(body, k); n.Type == gjson.Number {
			if limit, ok := route.ClampedOutput(ep, int(n.Int())); ok {
				body, _ = sjson.SetBytes(body, k, limit)
			}
		}
	}
	return body
}

// withoutCustomTools removes custom tools, and a tool_choice naming one;
// with no tool left, tools and tool_choice go.
func withoutCustomTools(body []byte) []byte {
	kept := []byte{'['}
	gjson.GetBytes(body, "tools").ForEach(func(_, t gjson.Result) bool {
		if t.Get("type").Str != "custom" {
			if len(kept) > 1 {
				kept = append(kept, ',')
			}
			kept = append(kept, t.Raw...)
		}
		return true
	})
	kept = append(kept, ']')
	if len(kept) == 2 {
		body, _ = sjson.DeleteBytes(body, "tools")
		body, _ = sjson.DeleteBytes(body, "tool_choice")
		return body
	}
	body, _ = sjson.SetRawBytes(body, "tools", kept)
	if gjson.GetBytes(body, "tool_choice.type").Str == "custom" {
		body, _ = sjson.DeleteBytes(body, "tool_choice")
	}
	return body
}

// clampMeta notes in service_metadata that the requested max output was
// clamped to the serving endpoint's maximum.
func clampMeta(meta map[string]any, ep *catalog.Endpoint, requested int) {
	if limit, ok := route.ClampedOutput(ep, requested); ok && meta != nil {
		meta["max_output_tokens"] = map[string]any{"requested": requested, "clamped_to": limit}
	}
}

// embedBodies are an embeddings request as the client sent it (ids) and,
// when its input is token ids, with the ids decoded to text.
type embedBodies struct {
	ids, text []byte
}

// forEndpoint is the body for an endpoint: token ids only where the
// provider takes them.
func (b embedBodies) forEndpoint(ep *catalog.Endpoint) []byte {
	if b.text != nil && !ep.Provider.EmbeddingTokenIDs {
		return b.text
	}
	return b.ids
}

// counted is the body whose input the response is checked against: one
// input per string (a single token-id array is one input, not one per id).
func (b embedBodies) counted() []byte {
	if b.text != nil {
		return b.text
	}
	return b.ids
}

// embeddingsCompat normalises a validated embeddings body: the model
// through the aliases, null user and encoding_format removed, and token-id
// input decoded with the model's tokenizer for providers that take text.
func (s *Server) embeddingsCompat(body []byte) (embedBodies, *apierr.Error) {
	body, err := s.resolveModels(body, "model")
	if err != nil {
		return embedBodies{}, err
	}
	for _, k := range []string{"user", "encoding_format"} {
		if gjson.GetBytes(body, k).Type == gjson.Null {
			body, _ = sjson.DeleteBytes(body, k)
		}
	}
	b := embedBodies{ids: body}
	input := gjson.GetBytes(body, "input")
	first := input.Get("0")
	if first.Type != gjson.Number && !first.IsArray() {
		return b, nil
	}
	model := gjson.GetBytes(body, "model").Str
	enc, eerr := tokenize.ForModel(model)
	if eerr != nil {
		return b, apierr.New(http.StatusInternalServerError, "tokenizer for %s: %v", model, eerr)
	}
	decode := func(arr gjson.Result) (string, *apierr.Error) {
		ids := make([]int, 0, 64)
		arr.ForEach(func(_, id gjson.Result) bool { ids = append(ids, int(id.Int())); return true })
		t, err := enc.Decode(ids)
		if err != nil {
			return "", apierr.BadRequest("input", "%v; token ids must come from %s's tokenizer (%s)", err, model, enc.Name())
		}
		return t, nil
	}
	var text []byte
	if first.Type == gjson.Number {
		t, err := decode(input)
		if err != nil {
			return b, err
		}
		text = jsonString(nil, t)
	} else {
		text = []byte{'['}
		var derr *apierr.Error
		input.ForEach(func(_, arr gjson.Result) bool {
			var t string
			if t, derr = decode(arr); derr != nil {
				return false
			}
			if len(text) > 1 {
				text = append(text, ',')
			}
			text = jsonString(text, t)
			return true
		})
		if derr != nil {
			return b, derr
		}
		text = append(text, ']')
	}
	b.text, _ = sjson.SetRawBytes(append([]byte(nil), body...), "input", text)
	return b, nil
}

// jsonString appends t as a JSON string.
func jsonString(dst []byte, t string) []byte {
	q, _ := json.Marshal(t)
	return append(dst, q...)
}
