package demo

import (
	"encoding/json"
	"strings"
)

// Instance returns a JSON value that satisfies a (simple) JSON Schema, the
// way a model honouring structured outputs answers: objects with their
// required properties (all of them when none are listed), arrays with one
// item, strings saying text, the first value of an enum or a const. It
// covers the schema keywords structured outputs allow (type, properties,
// required, items, enum, const); anything else is answered with text.
func Instance(schema json.RawMessage, text string) string {
	var s map[string]any
	if json.Unmarshal(schema, &s) != nil {
		return `""`
	}
	b, _ := json.Marshal(instance(s, text, ""))
	return string(b)
}

func instance(s map[string]any, text, name string) any {
	if c, ok := s["const"]; ok {
		return c
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	typ, _ := s["type"].(string)
	if ts, ok := s["type"].([]any); ok && len(ts) > 0 {
		typ, _ = ts[0].(string)
	}
	switch typ {
	case "object":
		props, _ := s["properties"].(map[string]any)
		out := map[string]any{}
		req, _ := s["required"].([]any)
		keys := req
		if len(keys) == 0 {
			for k := range props {
				keys = append(keys, k)
			}
		}
		for _, k := range keys {
			ks, _ := k.(string)
			ps, _ := props[ks].(map[string]any)
			out[ks] = instance(ps, text, ks)
		}
		return out
	case "array":
		items, _ := s["items"].(map[string]any)
		return []any{instance(items, text, name)}
	case "integer", "number":
		return 1
	case "boolean":
		return true
	case "null":
		return nil
	}
	if name != "" {
		return name + " (" + text + ")"
	}
	return text
}

// firstWords is s cut to its first n words.
func firstWords(s string, n int) string {
	w := strings.Fields(s)
	if len(w) > n {
		w = append(w[:n], "…")
	}
	return strings.Join(w, " ")
}
