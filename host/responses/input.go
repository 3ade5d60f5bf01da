package responses

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/switchyard/switchyard/host/apierr"
	"github.com/tidwall/gjson"
)

// message is one chat message being built from input items.
type message struct {
	role      string
	content   string // raw JSON (a string or an array of parts); "" none
	toolCalls []string
	toolID    string // a tool message's tool_call_id
}

func (m *message) json() string {
	var b chatBody
	b.buf.WriteByte('{')
	b.raw("role", str(m.role))
	switch {
	case m.content != "":
		b.raw("content", m.content)
	case m.role == "assistant":
		b.raw("content", "null")
	default:
		b.raw("content", `""`)
	}
	if m.toolID != "" {
		b.raw("tool_call_id", str(m.toolID))
	}
	if len(m.toolCalls) > 0 {
		b.raw("tool_calls", "["+strings.Join(m.toolCalls, ",")+"]")
	}
	b.buf.WriteByte('}')
	return b.buf.String()
}

// messages is the chat messages array of instructions and input:
// instructions become the first (system) message (or messages, given as
// items); a string input is one
// user message, after the stored conversation's items (history); items
// map one to one, except that function_call items
// join the assistant message before them (one chat turn holds the text and
// the calls) and reasoning items are dropped — the chat upstream has no
// field for them, and this gateway never hands out encrypted reasoning a
// client could send back.
func messages(instructions gjson.Result, history []json.RawMessage, input gjson.Result) (string, *apierr.Error) {
	var out []*message
	switch {
	case !instructions.Exists() || instructions.Type == gjson.Null:
	case instructions.Type == gjson.String:
		if instructions.Str != "" {
			out = append(out, &message{role: "system", content: instructions.Raw})
		}
	case instructions.IsArray():
		// Input items (a stored prompt's form): messages before the input.
		var err *apierr.Error
		i := 0
		instructions.ForEach(func(_, it gjson.Result) bool {
			out, err = item(out, i, it)
			i++
			return err == nil
		})
		if err != nil {
			err.Message = "instructions" + strings.TrimPrefix(err.Message, "input")
			return "", err
		}
	default:
		return "", bad("instructions", "must be a string or an array of input items")
	}
	for i, it := range history {
		var err *apierr.Error
		if out, err = item(out, i, gjson.ParseBytes(it)); err != nil {
			err.Message = "previous_response_id: a stored item: " + err.Message
			return "", err
		}
	}
	switch {
	case !input.Exists() || input.Type == gjson.Null:
		return "", bad("input", "required: a string or an array of input items")
	case input.Type == gjson.String:
		out = append(out, &message{role: "user", content: input.Raw})
	case input.IsArray():
		var err *apierr.Error
		i := 0
		input.ForEach(func(_, it gjson.Result) bool {
			out, err = item(out, i, it)
			i++
			return err == nil
		})
		if err != nil {
			return "", err
		}
	default:
		return "", bad("input", "must be a string or an array of input items")
	}
	if len(out) == 0 {
		return "", bad("input", "holds no message")
	}
	parts := make([]string, len(out))
	for i, m := range out {
		parts[i] = m.json()
	}
	return "[" + strings.Join(parts, ",") + "]", nil
}

// item adds input item i to the messages.
func item(out []*message, i int, it gjson.Result) ([]*message, *apierr.Error) {
	if !it.IsObject() {
		return out, bad(itemPath(i, ""), "must be an object")
	}
	typ := it.Get("type").Str
	if typ == "" && it.Get("role").Exists() {
		typ = "message" // EasyInputMessage: {role, content}
	}
	switch typ {
	case "message":
		role := it.Get("role").Str
		if !oneOf(role, "user", "assistant", "system", "developer") {
			return out, bad(itemPath(i, "role"), "must be one of user, assistant, system, developer")
		}
		content, err := content(i, role, it.Get("content"))
		if err != nil {
			return out, err
		}
		return append(out, &message{role: role, content: content}), nil
	case "function_call":
		callID, name := it.Get("call_id"), it.Get("name")
		if callID.Type != gjson.String || callID.Str == "" {
			return out, bad(itemPath(i, "call_id"), "required: the id of the call")
		}
		if name.Type != gjson.String || name.Str == "" {
			return out, bad(itemPath(i, "name"), "required: the function's name")
		}
		args := it.Get("arguments")
		if args.Type != gjson.String {
			return out, bad(itemPath(i, "arguments"), "required: the arguments as a JSON string")
		}
		// The call id goes through byte for byte: the function_call_output
		// that answers it names it.
		call := `{"id":` + callID.Raw + `,"type":"function","function":{"name":` + name.Raw + `,"arguments":` + args.Raw + `}}`
		if n := len(out); n > 0 && out[n-1].role == "assistant" && out[n-1].toolID == "" {
			out[n-1].toolCalls = append(out[n-1].toolCalls, call)
			return out, nil
		}
		return append(out, &message{role: "assistant", toolCalls: []string{call}}), nil
	case "function_call_output":
		callID := it.Get("call_id")
		if callID.Type != gjson.String || callID.Str == "" {
			return out, bad(itemPath(i, "call_id"), "required: the id of the call this answers")
		}
		o := it.Get("output")
		var c string
		switch {
		case o.Type == gjson.String:
			c = o.Raw
		case o.IsArray():
			var err *apierr.Error
			if c, err = parts(i, "tool", o); err != nil {
				return out, err
			}
		default:
			return out, bad(itemPath(i, "output"), "required: the function's output, a string or an array of content parts")
		}
		return append(out, &message{role: "tool", content: c, toolID: callID.Str}), nil
	case "reasoning":
		return out, nil // dropped: see messages
	case "item_reference":
		return out, bad(itemPath(i, "type"), "item_reference is not supported: this gateway does not keep stored responses; send the item itself")
	}
	return out, unsupported(itemPath(i, "type"), "input item type "+jsonQuoteShort(typ))
}

// content is a message's content as chat content: a string as it is, parts
// translated. An assistant's text parts are joined into one string (every
// chat upstream takes that).
func content(i int, role string, c gjson.Result) (string, *apierr.Error) {
	switch {
	case c.Type == gjson.String:
		return c.Raw, nil
	case c.IsArray():
		return parts(i, role, c)
	}
	return "", bad(itemPath(i, "content"), "required: a string or an array of content parts")
}

// parts translates content parts: input_text and output_text to text,
// input_image to image_url, input_file with inline data to file.
func parts(i int, role string, c gjson.Result) (string, *apierr.Error) {
	var out []string
	var text strings.Builder
	onlyText := true
	var err *apierr.Error
	j := 0
	c.ForEach(func(_, p gjson.Result) bool {
		path := itemPath(i, "content["+strconv.Itoa(j)+"]")
		j++
		switch p.Get("type").Str {
		case "input_text", "output_text", "text":
			t := p.Get("text")
			if t.Type != gjson.String {
				err = bad(path+".text", "required: a string")
				return false
			}
			text.WriteString(t.Str)
			out = append(out, `{"type":"text","text":`+t.Raw+`}`)
		case "refusal":
			// An assistant's earlier refusal, as text.
			text.WriteString(p.Get("refusal").Str)
			out = append(out, `{"type":"text","text":`+str(p.Get("refusal").Str)+`}`)
		case "input_image":
			onlyText = false
			u := p.Get("image_url")
			if u.Type != gjson.String || u.Str == "" {
				if p.Get("file_id").Exists() {
					err = unsupported(path+".file_id", "an uploaded file (file_id)")
				} else {
					err = bad(path+".image_url", "required: the image's URL or data URL")
				}
				return false
			}
			img := `{"url":` + u.Raw
			if d := p.Get("detail"); d.Type == gjson.String {
				img += `,"detail":` + d.Raw
			}
			out = append(out, `{"type":"image_url","image_url":`+img+`}}`)
		case "input_file":
			onlyText = false
			data := p.Get("file_data")
			if data.Type != gjson.String || data.Str == "" {
				err = unsupported(path, "a file by file_id or file_url (send it inline as file_data)")
				return false
			}
			f := `{"file_data":` + data.Raw
			if n := p.Get("filename"); n.Type == gjson.String {
				f += `,"filename":` + n.Raw
			}
			out = append(out, `{"type":"file","file":`+f+`}}`)
		default:
			err = unsupported(path+".type", "content part type "+jsonQuoteShort(p.Get("type").Str))
			return false
		}
		return true
	})
	if err != nil {
		return "", err
	}
	if onlyText && (role == "assistant" || role == "tool" || role == "system" || role == "developer") {
		return str(text.String()), nil
	}
	if len(out) == 0 {
		return `""`, nil
	}
	return "[" + strings.Join(out, ",") + "]", nil
}

// jsonQuoteShort quotes a client's value for a message, clipped.
func jsonQuoteShort(s string) string {
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return str(s)
}
