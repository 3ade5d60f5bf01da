package flow

// Client compatibility (issue 9): what real clients send that validation
// accepts but upstreams may refuse, normalised once in the host right after
// validation, before plugins and routing, so every adapter benefits:
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
//   - embeddings input as token ids is also decoded to text, for the
//     providers that take no ids.
//
// The typed request is read again from the normalised body, so what routes
// and bills (models, parameters, max output) is what goes upstream. What
// differs per endpoint — custom tools (chatparams.CustomTools), a max
// output above the endpoint's maximum, token ids or text — is shaped per
// attempt by the dispatcher (host/dispatch/body.go).

import (
	"net/http"
	"slices"

	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/jsonstr"
	"github.com/switchyard/switchyard/host/jsonwalk"
	"github.com/switchyard/switchyard/host/tokenize"
	"github.com/switchyard/switchyard/host/validate"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// normalizeChat normalises a validated chat request (see the file
// comment). A request that needed nothing is returned as it is; otherwise
// the typed request is read again from the normalised body.
func (s *Core) normalizeChat(req *validate.ChatRequest) (*validate.ChatRequest, *apierr.Error) {
	body, err := s.chatCompat(req, s.resolved(req.Models))
	if err != nil {
		return nil, err
	}
	if string(body) == string(req.Body) {
		return req, nil
	}
	return revalidate(validate.Chat(body))
}

// revalidate passes on the request read from a normalised body. The
// normalisations keep a valid body valid, so a failure here is the
// gateway's fault, not the client's.
func revalidate[R any](req *R, err *apierr.Error) (*R, *apierr.Error) {
	if err != nil {
		return nil, &apierr.Error{Status: http.StatusInternalServerError,
			Message: "the gateway made the request invalid while normalising it: " + err.Message}
	}
	return req, nil
}

// chatCompat normalises a validated chat body (see the file comment);
// resolved says its model names are all catalog ids already (resolved),
// so the body need not be searched for them. What else it needs the
// validation's walk noted (Nulls, Legacy): a body that needs nothing is
// not walked again.
func (s *Core) chatCompat(req *validate.ChatRequest, resolved bool) ([]byte, *apierr.Error) {
	body := req.Body
	if !resolved {
		var err *apierr.Error
		if body, err = s.resolveModels(body, "model", "models"); err != nil {
			return nil, err
		}
	}
	if req.Nulls {
		body = stripChatNulls(body)
	}
	if req.Legacy {
		body = mapLegacyFunctions(body)
	}
	return body, nil
}

// resolved reports whether the model names a validated request read
// (model, then models) all resolve to themselves without error:
// resolveModels would then leave the body as it is. Validation refuses an
// empty name, the only one ChatRequest.Models leaves out.
func (s *Core) resolved(models []string) bool {
	for _, m := range models {
		if to, err := s.Router.Resolve(m); err != nil || to != m {
			return false
		}
	}
	return len(models) > 0
}

// resolveModels rewrites the model fields (a string at the first path, an
// array at the second, if given) to catalog ids through the aliases.
func (s *Core) resolveModels(body []byte, single string, list ...string) ([]byte, *apierr.Error) {
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

// stripChatNulls removes the nulls of the file comment, and
// stream_options.include_obfuscation, in one walk and one copy, linear in the body's size: removing them one by one re-parsed and
// copied the whole body each time (issue 29). A body with none is
// returned as it is.
func stripChatNulls(body []byte) []byte {
	s := jsonwalk.String(body)
	d := jsonwalk.Borrow(s)
	defer d.Release()
	if !d.Index(jsonwalk.MaxNesting) {
		return body // validation refused deeper bodies already
	}
	root := d.Root()
	if !root.IsObject() {
		return body
	}
	var cuts jsonwalk.Cuts
	d.Drop(&cuts, root, func(k string, v gjson.Result) bool {
		switch {
		case v.Type == gjson.Null:
			return slices.Contains(validate.ChatNullable, k)
		case k == "stream_options" && v.IsObject():
			d.Drop(&cuts, v, func(k string, _ gjson.Result) bool { return k == "include_obfuscation" })
		case k == "tools" && v.IsArray():
			d.Elements(v, func(_ int, t gjson.Result) bool {
				if t.IsObject() {
					d.Members(t, func(kind string, f gjson.Result) bool {
						if (kind == "function" || kind == "custom") && f.IsObject() {
							d.Drop(&cuts, f, func(k string, v gjson.Result) bool { return v.Type == gjson.Null && k != "strict" })
						}
						return true
					})
				}
				return true
			})
		case k == "messages" && v.IsArray():
			d.Elements(v, func(_ int, m gjson.Result) bool {
				if m.IsObject() {
					d.Drop(&cuts, m, func(k string, v gjson.Result) bool {
						return v.Type == gjson.Null && (k == "name" || k == "function_call")
					})
				}
				return true
			})
		}
		return false
	})
	if cuts.Len() == 0 {
		return body
	}
	return cuts.Apply(s)
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
			tc := `{"id":` + jsonstr.Quote(id) + `,"type":"function","function":` + fc.Raw + `}`
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
			raw = []byte(`{"role":"tool","tool_call_id":` + jsonstr.Quote(id) + `,"content":` + content + `}`)
		}
		out = append(out, raw...)
		return true
	})
	out = append(out, ']')
	body, _ = sjson.SetRawBytes(body, "messages", out)
	return body
}

// NormalizeEmbeddings normalises a validated embeddings request: the model
// through the aliases, and null user and encoding_format removed. When the
// input is token ids it also returns the body with the ids decoded to text
// with the model's tokenizer, for providers that take text
// (dispatch.Job.TextBody).
func (s *Core) NormalizeEmbeddings(req *validate.EmbeddingsRequest) (*validate.EmbeddingsRequest, []byte, *apierr.Error) {
	body, err := s.resolveModels(req.Body, "model")
	if err != nil {
		return nil, nil, err
	}
	for _, k := range []string{"user", "encoding_format"} {
		if gjson.GetBytes(body, k).Type == gjson.Null {
			body, _ = sjson.DeleteBytes(body, k)
		}
	}
	if string(body) != string(req.Body) {
		if req, err = revalidate(validate.Embeddings(body)); err != nil {
			return nil, nil, err
		}
	}
	text, err := decodeTokenIDs(req.Model, req.Input)
	if err != nil || text == nil {
		return req, nil, err
	}
	text, _ = sjson.SetRawBytes(append([]byte(nil), req.Body...), "input", text)
	return req, text, nil
}

// decodeTokenIDs is an embeddings input given as token ids ([1,2,3] or
// [[1,2],[3]]) as text (a string or an array of strings), decoded with
// model's tokenizer; nil when the input is not token ids.
func decodeTokenIDs(model string, input gjson.Result) ([]byte, *apierr.Error) {
	first := input.Get("0")
	if first.Type != gjson.Number && !first.IsArray() {
		return nil, nil
	}
	enc, eerr := tokenize.ForModel(model)
	if eerr != nil {
		return nil, apierr.New(http.StatusInternalServerError, "tokenizer for %s: %v", model, eerr)
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
			return nil, err
		}
		text = jsonstr.Append(nil, t)
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
			text = jsonstr.Append(text, t)
			return true
		})
		if derr != nil {
			return nil, derr
		}
		text = append(text, ']')
	}
	return text, nil
}
