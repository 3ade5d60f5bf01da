//go:build wasip1

// Command response-healing is the spec's response-healing plugin: when a
// model was asked for JSON and answered with JSON wrapped in a Markdown
// fence, followed by chatter, with trailing commas, or cut off before its
// closing brackets, it repairs the message content into valid JSON. Content
// that already parses, or that holds no JSON at all, is left alone.
//
// It runs on complete results (post_response). Streams are passed through
// untouched: a stream's JSON is only whole at its end, after the client has
// seen it.
package main

import (
	"strconv"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/sdk"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

func main() {}

func init() { sdk.Handle(abi.HookPostResponse, postResponse) }

func postResponse(in *sdk.In, out *sdk.Out) error {
	result := in.Field(1)
	var edited []byte
	repaired, i := 0, -1
	gjson.GetBytes(result, "choices").ForEach(func(_, ch gjson.Result) bool {
		i++
		content := ch.Get("message.content")
		if content.Type != gjson.String {
			return true
		}
		fixed, ok := heal(content.Str)
		if !ok || fixed == content.Str {
			return true
		}
		if edited == nil {
			edited = append([]byte(nil), result...)
		}
		edited, _ = sjson.SetBytes(edited, "choices."+strconv.Itoa(i)+".message.content", fixed)
		repaired++
		return true
	})
	out.FieldString(abi.ActionContinue)
	out.Field(edited) // empty: unchanged
	summary := `{"type":"plugin","summary":"content already valid or not JSON","data":{"repaired":0}}`
	if repaired > 0 {
		summary = `{"type":"plugin","summary":"repaired JSON in ` + strconv.Itoa(repaired) + ` choice(s)","data":{"repaired":` + strconv.Itoa(repaired) + `}}`
	}
	out.FieldString(summary)
	return nil
}

// heal returns valid JSON recovered from s, or false.
func heal(s string) (string, bool) {
	if gjson.Valid(s) {
		return s, true
	}
	s = unfence(s)
	start := -1
	for i := 0; i < len(s); i++ {
		if s[i] == '{' || s[i] == '[' {
			start = i
			break
		}
	}
	if start < 0 {
		return "", false
	}
	s = s[start:]
	// One pass that drops trailing commas, remembers where the outermost
	// value ended (to cut trailing chatter) and which brackets stay open.
	var b []byte
	var stack []byte
	inStr, esc := false, false
	end := -1
	for i := 0; i < len(s) && end < 0; i++ {
		c := s[i]
		if inStr {
			b = append(b, c)
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '{', '[':
			stack = append(stack, c)
		case '}', ']':
			b = trimComma(b)
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			if len(stack) == 0 {
				end = i
			}
		}
		b = append(b, c)
	}
	// Cut off mid-way: close the string and the brackets still open.
	if inStr {
		if esc {
			b = b[:len(b)-1]
		}
		b = append(b, '"')
	}
	for i := len(stack) - 1; i >= 0; i-- {
		b = trimComma(b)
		if stack[i] == '{' {
			b = append(b, '}')
		} else {
			b = append(b, ']')
		}
	}
	if !gjson.ValidBytes(b) {
		return "", false
	}
	return string(b), true
}

// unfence returns the inside of the first ``` fence, if any.
func unfence(s string) string {
	i := indexOf(s, "```")
	if i < 0 {
		return s
	}
	rest := s[i+3:]
	if nl := indexOf(rest, "\n"); nl >= 0 {
		rest = rest[nl+1:] // drop the language tag line
	}
	if j := indexOf(rest, "```"); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

// trimComma removes a trailing comma (and the spaces after it).
func trimComma(b []byte) []byte {
	j := len(b)
	for j > 0 && (b[j-1] == ' ' || b[j-1] == '\n' || b[j-1] == '\t' || b[j-1] == '\r') {
		j--
	}
	if j > 0 && b[j-1] == ',' {
		return b[:j-1]
	}
	return b
}
