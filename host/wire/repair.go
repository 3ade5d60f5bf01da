package wire

import (
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// An upstream is not trusted to send what its API documents: a field of the
// wrong type ("content":123, a choices object, a delta string) or bytes
// that are not UTF-8 would reach clients whose SDKs refuse them, or parse
// them into nonsense. RepairChunk and RepairCompletion check every field a
// client reads, repair what has an obvious repair (invalid UTF-8 becomes
// U+FFFD, a wrong-typed field is removed, a text-part array becomes its
// text) and say what they did, so the caller can log it; what cannot be a
// chunk or a completion at all is refused.

// RepairChunk checks a chat completion chunk from an upstream. It returns
// the chunk to hand out, what was repaired (empty when nothing was), and
// false when the chunk must be dropped (the repairs then say why).
func RepairChunk(ch []byte) ([]byte, []string, bool) {
	return repair(ch, "delta")
}

// RepairCompletion checks a non-streaming chat completion from an upstream,
// as RepairChunk does a chunk.
func RepairCompletion(raw []byte) ([]byte, []string, bool) {
	return repair(raw, "message")
}

func repair(b []byte, msgField string) ([]byte, []string, bool) {
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
	var top [3]gjson.Result
	members(root, topNames, top[:])
	choices := top[0]
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
	if c := top[1]; c.Exists() && c.Type != gjson.Number {
		edit("created", "", "is not a number: removed")
	}
	if u := top[2]; u.Exists() && u.Type != gjson.Null && !u.IsObject() {
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
		var f [4]gjson.Result
		members(c, choiceNames(msgField), f[:])
		switch x := f[0]; {
		case !x.Exists():
			edit(p+".index", strconv.Itoa(i), "")
		case x.Type != gjson.Number:
			edit(p+".index", strconv.Itoa(i), "is not a number: set to its position")
		}
		if fr := f[1]; fr.Exists() && fr.Type != gjson.String && fr.Type != gjson.Null {
			edit(p+".finish_reason", "", "is not a string: removed")
		}
		if lp := f[2]; lp.Exists() && lp.Type != gjson.Null && !lp.IsObject() {
			edit(p+".logprobs", "", "is not an object: removed")
		}
		m := f[3]
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
		repairMessage(m, mp, edit)
	}
	return b, fixes, true
}

// repairMessage checks the fields of a message or delta that clients read.
func repairMessage(m gjson.Result, p string, edit func(path, raw, why string)) {
	var f [len(messageNames)]gjson.Result
	members(m, messageNames[:], f[:])
	for i, name := range messageNames[:4] {
		if v := f[i]; v.Exists() && v.Type != gjson.String && v.Type != gjson.Null {
			edit(p+"."+name, "", "is not a string: removed")
		}
	}
	switch content := f[4]; {
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
	if fc := f[5]; fc.Exists() && fc.Type != gjson.Null && !fc.IsObject() {
		edit(p+".function_call", "", "is not an object: removed")
	}
	tc := f[6]
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
		var cf [4]gjson.Result
		members(call, callNames[:], cf[:])
		if x := cf[0]; x.Exists() && x.Type != gjson.Number {
			edit(cp+".index", strconv.Itoa(i), "is not a number: set to its position")
		}
		for j, name := range callNames[1:3] {
			if v := cf[1+j]; v.Exists() && v.Type != gjson.String && v.Type != gjson.Null {
				edit(cp+"."+name, "", "is not a string: removed")
			}
		}
		fn := cf[3]
		if fn.Exists() && !fn.IsObject() {
			edit(cp+".function", "", "is not an object: removed")
			continue
		}
		var ff [2]gjson.Result
		members(fn, functionNames[:], ff[:])
		for j, name := range functionNames {
			if v := ff[j]; v.Exists() && v.Type != gjson.String && v.Type != gjson.Null {
				edit(cp+".function."+name, "", "is not a string: removed")
			}
		}
	}
}

// The members repair reads, object by object, in the order of its checks.
var (
	topNames      = []string{"choices", "created", "usage"}
	messageChoice = []string{"index", "finish_reason", "logprobs", "message"}
	deltaChoice   = []string{"index", "finish_reason", "logprobs", "delta"}
	messageNames  = [...]string{"role", "refusal", "reasoning", "reasoning_content", "content", "function_call", "tool_calls"}
	callNames     = [...]string{"index", "id", "type", "function"}
	functionNames = [...]string{"name", "arguments"}
)

func choiceNames(msgField string) []string {
	if msgField == "delta" {
		return deltaChoice
	}
	return messageChoice
}

// members sets out[i] to obj's first member named names[i] (as
// obj.Get(names[i]) would, absent ones left zero) in one pass over obj:
// a Get per name rescanned the object each time, and every absent name
// (most of a message's) scanned it to its end, content included. obj
// that is not an object leaves out zero, as Get does.
func members(obj gjson.Result, names []string, out []gjson.Result) {
	if !obj.IsObject() {
		return
	}
	obj.ForEach(func(k, v gjson.Result) bool {
		for i, n := range names {
			if k.Str == n {
				if !out[i].Exists() {
					out[i] = v
				}
				break
			}
		}
		return true
	})
}
