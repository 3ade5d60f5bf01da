package wire

import (
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// repairRef is repair as it was before it read each object's members in
// one pass: the definition FuzzRepair holds the faster one to (same
// bytes, same repairs, same verdict).
func repairRef(b []byte, msgField string) ([]byte, []string, bool) {
	var fixes []string
	if !utf8.Valid(b) {
		// JSON's syntax is ASCII: invalid bytes can only be inside strings,
		// and U+FFFD keeps them strings.
		b = []byte(strings.ToValidUTF8(string(b), "\uFFFD"))
		fixes = append(fixes, "invalid UTF-8 replaced with U+FFFD")
	}
	if !gjson.ValidBytes(b) {
		return nil, append(fixes, "not valid JSON"), false
	}
	// Parsed without a copy (an answer may be tens of MB): the results point
	// into b, which sjson never edits in place — each edit makes a new b —
	// so they stay valid while b changes.
	root := gjson.Parse(unsafe.String(unsafe.SliceData(b), len(b)))
	if !root.IsObject() {
		return nil, append(fixes, "not a JSON object"), false
	}
	choices := root.Get("choices")
	switch {
	case !choices.Exists():
		if msgField == "message" {
			return nil, append(fixes, "no choices array"), false
		}
		// A chunk carrying only usage or an error: no choices is an
		// empty list.
		b, _ = sjson.SetRawBytes(b, "choices", []byte("[]"))
	case !choices.IsArray():
		return nil, append(fixes, "choices is not an array"), false
	}
	edit := func(path string, raw string, why string) {
		if raw == "" {
			b, _ = sjson.DeleteBytes(b, path)
		} else {
			b, _ = sjson.SetRawBytes(b, path, []byte(raw))
		}
		if why != "" { // "": a normalisation of a missing field, not worth a log line
			fixes = append(fixes, path+" "+why)
		}
	}
	if c := root.Get("created"); c.Exists() && c.Type != gjson.Number {
		edit("created", "", "is not a number: removed")
	}
	if u := root.Get("usage"); u.Exists() && u.Type != gjson.Null && !u.IsObject() {
		edit("usage", "", "is not an object: removed")
	}
	arr := choices.Array()
	// Backwards: removing a choice shifts only the ones after it.
	for i := len(arr) - 1; i >= 0; i-- {
		c, p := arr[i], "choices."+strconv.Itoa(i)
		if !c.IsObject() {
			edit(p, "", "is not an object: removed")
			continue
		}
		switch x := c.Get("index"); {
		case !x.Exists():
			edit(p+".index", strconv.Itoa(i), "")
		case x.Type != gjson.Number:
			edit(p+".index", strconv.Itoa(i), "is not a number: set to its position")
		}
		if fr := c.Get("finish_reason"); fr.Exists() && fr.Type != gjson.String && fr.Type != gjson.Null {
			edit(p+".finish_reason", "", "is not a string: removed")
		}
		if lp := c.Get("logprobs"); lp.Exists() && lp.Type != gjson.Null && !lp.IsObject() {
			edit(p+".logprobs", "", "is not an object: removed")
		}
		m := c.Get(msgField)
		mp := p + "." + msgField
		switch {
		case !m.Exists() && msgField == "delta":
			edit(mp, "{}", "")
			continue
		case !m.Exists():
			edit(mp, `{"role":"assistant","content":null}`, "is missing: set to an empty assistant message")
			continue
		case !m.IsObject():
			if msgField == "delta" {
				edit(mp, "{}", "is not an object: set to {}")
			} else {
				edit(mp, `{"role":"assistant","content":null}`, "is not an object: set to an empty assistant message")
			}
			continue
		}
		repairMessageRef(m, mp, edit)
	}
	return b, fixes, true
}

// repairMessage checks the fields of a message or delta that clients read.
func repairMessageRef(m gjson.Result, p string, edit func(path, raw, why string)) {
	for _, f := range []string{"role", "refusal", "reasoning", "reasoning_content"} {
		if v := m.Get(f); v.Exists() && v.Type != gjson.String && v.Type != gjson.Null {
			edit(p+"."+f, "", "is not a string: removed")
		}
	}
	switch content := m.Get("content"); {
	case !content.Exists(), content.Type == gjson.String, content.Type == gjson.Null:
	case content.IsArray():
		// Some compatible servers answer in content parts; the chat
		// completion's content is their text.
		var text strings.Builder
		content.ForEach(func(_, part gjson.Result) bool {
			if part.Type == gjson.String {
				text.WriteString(part.Str)
			} else if t := part.Get("text"); t.Type == gjson.String {
				text.WriteString(t.Str)
			}
			return true
		})
		edit(p+".content", strconv.Quote(text.String()), "is an array of parts: joined into its text")
	default:
		edit(p+".content", "", "is not a string: removed")
	}
	if fc := m.Get("function_call"); fc.Exists() && fc.Type != gjson.Null && !fc.IsObject() {
		edit(p+".function_call", "", "is not an object: removed")
	}
	tc := m.Get("tool_calls")
	if !tc.Exists() || tc.Type == gjson.Null {
		return
	}
	if !tc.IsArray() {
		edit(p+".tool_calls", "", "is not an array: removed")
		return
	}
	calls := tc.Array()
	for i := len(calls) - 1; i >= 0; i-- {
		call, cp := calls[i], p+".tool_calls."+strconv.Itoa(i)
		if !call.IsObject() {
			edit(cp, "", "is not an object: removed")
			continue
		}
		if x := call.Get("index"); x.Exists() && x.Type != gjson.Number {
			edit(cp+".index", strconv.Itoa(i), "is not a number: set to its position")
		}
		for _, f := range []string{"id", "type"} {
			if v := call.Get(f); v.Exists() && v.Type != gjson.String && v.Type != gjson.Null {
				edit(cp+"."+f, "", "is not a string: removed")
			}
		}
		fn := call.Get("function")
		if fn.Exists() && !fn.IsObject() {
			edit(cp+".function", "", "is not an object: removed")
			continue
		}
		for _, f := range []string{"name", "arguments"} {
			if v := fn.Get(f); v.Exists() && v.Type != gjson.String && v.Type != gjson.Null {
				edit(cp+".function."+f, "", "is not a string: removed")
			}
		}
	}
}
