package wire

import (
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/switchyard/switchyard/host/jsonstr"
	"github.com/switchyard/switchyard/host/jsonwalk"
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
	var r repairer
	if !utf8.Valid(b) {
		// JSON's syntax is ASCII: invalid bytes can only be inside strings,
		// and U+FFFD keeps them strings.
		b = []byte(strings.ToValidUTF8(string(b), "\uFFFD"))
		r.fixes = append(r.fixes, "invalid UTF-8 replaced with U+FFFD")
	}
	// Walked without a copy (an answer may be tens of MB): the results
	// point into b, which sjson never edits in place — each edit makes a
	// new r.b — so they stay valid while r.b changes. The walker reads
	// every byte once (jsonwalk); gjson's ForEach parsed each value again
	// at every level above it, numbers and escaped strings included.
	d := jsonwalk.Borrow(unsafe.String(unsafe.SliceData(b), len(b)))
	defer d.Release()
	// The syntax, the nesting's bound and the index in one pass.
	switch d.Scan(jsonwalk.MaxNesting) {
	case jsonwalk.TooDeep:
		return nil, append(r.fixes, "nested deeper than "+strconv.Itoa(jsonwalk.MaxNesting)+" levels"), false
	case jsonwalk.Invalid:
		return nil, append(r.fixes, "not valid JSON"), false
	}
	r.d, r.b = d, b
	root := d.Root()
	if !root.IsObject() {
		return nil, append(r.fixes, "not a JSON object"), false
	}
	choices, ok := r.top(root, msgField)
	if !ok {
		return nil, r.fixes, false
	}
	r.choices(choices, msgField)
	return r.b, r.fixes, true
}

// top checks the top-level members (choices, created, usage) and returns
// choices; false when the document cannot be a chunk or a completion (the
// last fix says why).
func (r *repairer) top(root gjson.Result, msgField string) (gjson.Result, bool) {
	var top [3]gjson.Result
	r.pick(root, topNames, top[:])
	choices := top[0]
	switch {
	case !choices.Exists():
		if msgField == "message" {
			r.fixes = append(r.fixes, "no choices array")
			return choices, false
		}
		// A chunk carrying only usage or an error: no choices is an
		// empty list.
		r.b, _ = sjson.SetRawBytes(r.b, "choices", []byte("[]"))
	case !choices.IsArray():
		r.fixes = append(r.fixes, "choices is not an array")
		return choices, false
	}
	if c := top[1]; c.Exists() && c.Type != gjson.Number {
		r.edit("created", "", "is not a number: removed")
	}
	if u := top[2]; u.Exists() && u.Type != gjson.Null && !u.IsObject() {
		r.edit("usage", "", "is not an object: removed")
	}
	return choices, true
}

// choices checks every choice, last first: removing a choice shifts only
// the ones after it.
func (r *repairer) choices(choices gjson.Result, msgField string) {
	var small [4]gjson.Result
	arr := small[:0]
	r.d.Elements(choices, func(_ int, c gjson.Result) bool { arr = append(arr, c); return true })
	for i := len(arr) - 1; i >= 0; i-- {
		r.choice(arr[i], i, msgField)
	}
}

// choice checks choice i: its index, finish_reason, logprobs and message
// (or delta). Paths are built only for an edit (most answers need none).
func (r *repairer) choice(c gjson.Result, i int, msgField string) {
	if !c.IsObject() {
		r.edit(index("choices", i), "", "is not an object: removed")
		return
	}
	var f [4]gjson.Result
	r.pick(c, choiceNames(msgField), f[:])
	switch x := f[0]; {
	case !x.Exists():
		r.edit(index("choices", i)+".index", strconv.Itoa(i), "")
	case x.Type != gjson.Number:
		r.edit(index("choices", i)+".index", strconv.Itoa(i), "is not a number: set to its position")
	}
	r.finishReason(f[1], i)
	if lp := f[2]; lp.Exists() && lp.Type != gjson.Null && !lp.IsObject() {
		r.edit(index("choices", i)+".logprobs", "", "is not an object: removed")
	}
	m := f[3]
	mp := func() string { return index("choices", i) + "." + msgField }
	switch {
	case !m.Exists() && msgField == "delta":
		r.edit(mp(), "{}", "")
		return
	case !m.Exists():
		r.edit(mp(), `{"role":"assistant","content":null}`, "is missing: set to an empty assistant message")
		return
	case !m.IsObject():
		if msgField == "delta" {
			r.edit(mp(), "{}", "is not an object: set to {}")
		} else {
			r.edit(mp(), `{"role":"assistant","content":null}`, "is not an object: set to an empty assistant message")
		}
		return
	}
	r.message(m, mp)
}

// finishReason checks choice i's finish_reason fr: a string of the
// documented values, or null.
func (r *repairer) finishReason(fr gjson.Result, i int) {
	if fr.Exists() && fr.Type != gjson.String && fr.Type != gjson.Null {
		r.edit(index("choices", i)+".finish_reason", "", "is not a string: removed")
	} else if fr.Type == gjson.String {
		if to, known := FinishReason(fr.Str); to != fr.Str {
			// The upstream's value is kept beside the documented one
			// (OpenRouter's native_finish_reason).
			why := ""
			if !known {
				why = "is not a documented value: set to stop"
			}
			r.edit(index("choices", i)+".native_finish_reason", jsonstr.Quote(fr.Str), "")
			r.edit(index("choices", i)+".finish_reason", `"`+to+`"`, why)
		}
	}
}

// repairer is one repair in progress: the walked document, the body as
// edited so far, and what was repaired.
type repairer struct {
	d     *jsonwalk.Doc
	b     []byte
	fixes []string
}

// edit deletes the member at path (raw "") or sets it to raw, and records
// why ("": a normalisation of a missing field, not worth a log line).
func (r *repairer) edit(path string, raw string, why string) {
	if raw == "" {
		r.b, _ = sjson.DeleteBytes(r.b, path)
	} else {
		r.b, _ = sjson.SetRawBytes(r.b, path, []byte(raw))
	}
	if why != "" {
		r.fixes = append(r.fixes, path+" "+why)
	}
}

// pick sets out[i] to obj's first member named names[i] (as
// obj.Get(names[i]) would, absent ones left zero) in one walk of obj; obj
// that is not an object leaves out zero, as Get does.
func (r *repairer) pick(obj gjson.Result, names []string, out []gjson.Result) {
	if !obj.IsObject() {
		return
	}
	r.d.Members(obj, func(k string, v gjson.Result) bool {
		for i, n := range names {
			if k == n {
				if !out[i].Exists() {
					out[i] = v
				}
				break
			}
		}
		return true
	})
}

// index is the path of element i of the array at path.
func index(path string, i int) string { return path + "." + strconv.Itoa(i) }

// message checks the fields of a message or delta that clients read; path
// builds its path.
func (r *repairer) message(m gjson.Result, path func() string) {
	var f [len(messageNames)]gjson.Result
	r.pick(m, messageNames[:], f[:])
	for i, name := range messageNames[:4] {
		if v := f[i]; v.Exists() && v.Type != gjson.String && v.Type != gjson.Null {
			r.edit(path()+"."+name, "", "is not a string: removed")
		}
	}
	switch content := f[4]; {
	case !content.Exists(), content.Type == gjson.String, content.Type == gjson.Null:
	case content.IsArray():
		// Some compatible servers answer in content parts; the chat
		// completion's content is their text.
		var text strings.Builder
		gjson.Parse(content.Raw).ForEach(func(_, part gjson.Result) bool {
			if part.Type == gjson.String {
				text.WriteString(part.Str)
			} else if t := part.Get("text"); t.Type == gjson.String {
				text.WriteString(t.Str)
			}
			return true
		})
		r.edit(path()+".content", jsonstr.Quote(text.String()), "is an array of parts: joined into its text")
	default:
		r.edit(path()+".content", "", "is not a string: removed")
	}
	if fc := f[5]; fc.Exists() && fc.Type != gjson.Null && !fc.IsObject() {
		r.edit(path()+".function_call", "", "is not an object: removed")
	}
	tc := f[6]
	if !tc.Exists() || tc.Type == gjson.Null {
		return
	}
	if !tc.IsArray() {
		r.edit(path()+".tool_calls", "", "is not an array: removed")
		return
	}
	var small [4]gjson.Result
	calls := small[:0]
	r.d.Elements(tc, func(_ int, c gjson.Result) bool { calls = append(calls, c); return true })
	for i := len(calls) - 1; i >= 0; i-- {
		call := calls[i]
		cp := func() string { return index(path()+".tool_calls", i) }
		if !call.IsObject() {
			r.edit(cp(), "", "is not an object: removed")
			continue
		}
		var cf [4]gjson.Result
		r.pick(call, callNames[:], cf[:])
		if x := cf[0]; x.Exists() && x.Type != gjson.Number {
			r.edit(cp()+".index", strconv.Itoa(i), "is not a number: set to its position")
		}
		for j, name := range callNames[1:3] {
			if v := cf[1+j]; v.Exists() && v.Type != gjson.String && v.Type != gjson.Null {
				r.edit(cp()+"."+name, "", "is not a string: removed")
			}
		}
		fn := cf[3]
		if fn.Exists() && !fn.IsObject() {
			r.edit(cp()+".function", "", "is not an object: removed")
			continue
		}
		var ff [2]gjson.Result
		r.pick(fn, functionNames[:], ff[:])
		for j, name := range functionNames {
			if v := ff[j]; v.Exists() && v.Type != gjson.String && v.Type != gjson.Null {
				r.edit(cp()+".function."+name, "", "is not a string: removed")
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

// FinishReason maps an upstream's finish_reason into the documented set
// (docs/interface-choices.md): stop, length, tool_calls, content_filter,
// function_call (legacy) and error stay as they are; a provider's own name
// for one of them becomes it (end_turn and stop_sequence stop, max_tokens
// length, tool_use tool_calls, SAFETY content_filter, …); anything else is
// stop, and known reports false.
func FinishReason(s string) (to string, known bool) {
	switch s {
	case "stop", "length", "tool_calls", "content_filter", "function_call", "error":
		return s, true
	case "end_turn", "stop_sequence", "eos", "eos_token", "STOP", "end", "finished", "complete":
		return "stop", true
	case "max_tokens", "MAX_TOKENS", "max_output_tokens", "model_length", "model_context_window_exceeded":
		return "length", true
	case "tool_use", "tool_call", "function_calls":
		return "tool_calls", true
	case "SAFETY", "RECITATION", "PROHIBITED_CONTENT", "SPII", "BLOCKLIST", "IMAGE_SAFETY", "refusal", "content_filtered", "safety":
		return "content_filter", true
	}
	return "stop", false
}
