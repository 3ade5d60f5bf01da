package responses

import (
	"strconv"
	"strings"

	"github.com/switchyard/switchyard/host/apierr"
	"github.com/tidwall/gjson"
)

// webSearch is the gateway's web search server tool (docs/server-tools.md),
// which OpenAI's hosted web_search tool stands for. When no module serves
// it, chat validation answers the 400 that names it.
const webSearch = `{"type":"service:web_search"}`

// chatTools translates tools: function tools to chat's nested shape, a
// namespace's functions flattened (a chat request has no namespaces; the
// model calls them by their names), the hosted web search tool to the
// gateway's, the gateway's own server tools ("service:<name>") as they
// are. Other hosted tools (file search, computer use, code interpreter,
// MCP…) are refused.
func chatTools(tools gjson.Result) (string, *apierr.Error) {
	if !tools.IsArray() {
		return "", bad("tools", "must be an array")
	}
	out, err := appendTools(nil, "tools", tools, true)
	if err != nil || len(out) == 0 {
		return "", err
	}
	return "[" + strings.Join(out, ",") + "]", nil
}

// appendTools appends the chat tools of list (at path) to out; top: the
// request's own list, where namespaces and hosted tools may appear.
func appendTools(out []string, path string, list gjson.Result, top bool) ([]string, *apierr.Error) {
	var err *apierr.Error
	i := 0
	list.ForEach(func(_, t gjson.Result) bool {
		at := path + "[" + strconv.Itoa(i) + "]"
		i++
		typ := t.Get("type").Str
		switch {
		case typ == "function":
			var fn string
			if fn, err = function(at, t); err == nil {
				out = append(out, fn)
			}
		case top && typ == "namespace":
			inner := t.Get("tools")
			if !inner.IsArray() {
				err = bad(at+".tools", "required: the namespace's function tools")
				break
			}
			out, err = appendTools(out, at+".tools", inner, false)
		case top && isWebSearch(typ):
			// external_web_access false asks for cached results only,
			// which the gateway's live search cannot honour: the tool is
			// left out rather than searched live against the client's
			// word (Codex sends it so by default).
			if w := t.Get("external_web_access"); w.Exists() && w.Type == gjson.False {
				break
			}
			out = append(out, webSearch)
		case top && strings.HasPrefix(typ, "service:"):
			// The gateway's own server tools, as on chat
			// (docs/server-tools.md): chat validation checks them.
			out = append(out, t.Raw)
		default:
			err = unsupported(at+".type", "tool type "+jsonQuoteShort(typ))
		}
		return err == nil
	})
	return out, err
}

// function is a function tool in chat's shape.
func function(at string, t gjson.Result) (string, *apierr.Error) {
	name := t.Get("name")
	if name.Type != gjson.String || name.Str == "" {
		return "", bad(at+".name", "required: the function's name")
	}
	var b chatBody
	b.buf.WriteByte('{')
	b.raw("name", name.Raw)
	for _, k := range []string{"description", "parameters", "strict"} {
		if v := t.Get(k); v.Exists() && v.Type != gjson.Null {
			b.raw(k, v.Raw)
		}
	}
	b.buf.WriteByte('}')
	return `{"type":"function","function":` + b.buf.String() + `}`, nil
}

func isWebSearch(typ string) bool {
	return oneOf(typ, "web_search", "web_search_preview", "web_search_2025_08_26", "web_search_preview_2025_03_11")
}

// chatToolChoice translates tool_choice: the modes as they are, a named
// function to chat's nested shape, a hosted web search to the gateway's.
func chatToolChoice(tc gjson.Result) (string, *apierr.Error) {
	if tc.Type == gjson.String {
		if !oneOf(tc.Str, "auto", "none", "required") {
			return "", bad("tool_choice", "must be auto, none, required or an object naming a tool")
		}
		return tc.Raw, nil
	}
	if !tc.IsObject() {
		return "", bad("tool_choice", "must be auto, none, required or an object naming a tool")
	}
	switch typ := tc.Get("type").Str; typ {
	case "function":
		name := tc.Get("name")
		if name.Type != gjson.String || name.Str == "" {
			return "", bad("tool_choice.name", "required: the function's name")
		}
		return `{"type":"function","function":{"name":` + name.Raw + `}}`, nil
	default:
		if isWebSearch(typ) {
			return webSearch, nil
		}
		return "", unsupported("tool_choice.type", "tool choice "+jsonQuoteShort(typ))
	}
}

// responseFormat translates text.format to chat's response_format.
func responseFormat(f gjson.Result) (string, *apierr.Error) {
	switch typ := f.Get("type").Str; typ {
	case "text", "json_object":
		return `{"type":` + str(typ) + `}`, nil
	case "json_schema":
		var b chatBody
		b.buf.WriteByte('{')
		name := f.Get("name")
		if name.Type != gjson.String || name.Str == "" {
			return "", bad("text.format.name", "required when type is json_schema")
		}
		b.raw("name", name.Raw)
		for _, k := range []string{"schema", "strict", "description"} {
			if v := f.Get(k); v.Exists() && v.Type != gjson.Null {
				b.raw(k, v.Raw)
			}
		}
		b.buf.WriteByte('}')
		return `{"type":"json_schema","json_schema":` + b.buf.String() + `}`, nil
	}
	return "", bad("text.format.type", "must be text, json_object or json_schema")
}

// reasoning passes effort and summary on as chat's reasoning object
// (OpenRouter's shape, which the gateway's adapters translate).
func reasoning(r gjson.Result) (string, *apierr.Error) {
	if !r.IsObject() {
		return "", bad("reasoning", "must be an object: {effort, summary}")
	}
	var b chatBody
	b.buf.WriteByte('{')
	for _, k := range []string{"effort", "summary"} {
		if v := r.Get(k); v.Exists() && v.Type != gjson.Null {
			b.raw(k, v.Raw)
		}
	}
	// generate_summary is the older name of summary.
	if v := r.Get("generate_summary"); v.Type == gjson.String {
		b.raw("summary", v.Raw)
	}
	if len(b.keys) == 0 {
		return "", nil
	}
	b.buf.WriteByte('}')
	return b.buf.String(), nil
}
