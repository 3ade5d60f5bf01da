// Package completions is the legacy text-completions front door (POST
// /completions, OpenAI's and OpenRouter's: a prompt in, text out) as a
// translation over chat: the body becomes the chat request with the prompt
// as its one user message (ToChat), which the request core runs as any
// chat request, and the chat answer and stream chunks become
// text_completion objects (FromChat, Stream). Routing, fallbacks, plugins,
// limits, credits and records are chat's; errors keep chat's envelope,
// which is the one completions clients read.
package completions

import (
	"strconv"

	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/jsonstr"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// Request is a translated body: Chat, the chat request, and what the
// answer needs of the original.
type Request struct {
	Chat []byte
	// Echo is the prompt when echo was asked: each choice's text starts
	// with it, as OpenAI's completions do.
	Echo string
	// Logprobs: the client asked for them (completions' integer form).
	Logprobs bool
}

// ToChat translates a completions body. The prompt is a string, or an
// array holding one string (what OpenAI's SDKs send for a single prompt);
// several prompts in one request, token-id prompts, suffix (insertion)
// and best_of above 1 are refused naming the field: chat has no
// equivalent, and answering something else would mislead.
func ToChat(body []byte) (*Request, *apierr.Error) {
	if !gjson.ValidBytes(body) || !gjson.ParseBytes(body).IsObject() {
		return nil, apierr.BadRequest("", "the body must be a JSON object")
	}
	p := gjson.GetBytes(body, "prompt")
	var prompt string
	switch {
	case !p.Exists() || p.Type == gjson.Null:
		return nil, apierr.BadRequest("prompt", "is required: the text to complete")
	case p.Type == gjson.String:
		prompt = p.Str
	case p.IsArray():
		items := p.Array()
		if len(items) != 1 || items[0].Type != gjson.String {
			return nil, apierr.BadRequest("prompt", "must be a string or an array of one string: several prompts in one request, and token ids, are not supported here (send one request per prompt)")
		}
		prompt = items[0].Str
	default:
		return nil, apierr.BadRequest("prompt", "must be a string")
	}
	if s := gjson.GetBytes(body, "suffix"); s.Exists() && s.Type != gjson.Null && s.Str != "" {
		return nil, apierr.BadRequest("suffix", "is not supported: insertion (text after the completion) has no chat equivalent")
	}
	if b := gjson.GetBytes(body, "best_of"); b.Exists() && b.Type != gjson.Null && b.Int() > 1 {
		return nil, apierr.BadRequest("best_of", "is not supported above 1: ask for n completions instead")
	}
	r := &Request{}
	if gjson.GetBytes(body, "echo").Type == gjson.True {
		r.Echo = prompt
	}
	chat := append([]byte(nil), body...)
	for _, f := range []string{"prompt", "suffix", "best_of", "echo"} {
		chat, _ = sjson.DeleteBytes(chat, f)
	}
	// Completions' logprobs is how many alternatives per token (0 asks
	// for the chosen token's alone); chat's is a switch and top_logprobs.
	if lp := gjson.GetBytes(chat, "logprobs"); lp.Exists() {
		chat, _ = sjson.DeleteBytes(chat, "logprobs")
		if lp.Type == gjson.Number && lp.Int() >= 0 {
			r.Logprobs = true
			chat, _ = sjson.SetBytes(chat, "logprobs", true)
			if n := lp.Int(); n > 0 {
				chat, _ = sjson.SetBytes(chat, "top_logprobs", min(n, 20))
			}
		}
	}
	msgs := jsonstr.Append([]byte(`[{"role":"user","content":`), prompt)
	msgs = append(msgs, "}]"...)
	chat, _ = sjson.SetRawBytes(chat, "messages", msgs)
	r.Chat = chat
	return r, nil
}

// FromChat translates a chat.completion into a text_completion: each
// choice's message content becomes its text (after the echoed prompt);
// the rest of the answer (id, model, provider, usage, service_metadata)
// is kept as it is.
func FromChat(chat []byte, r *Request) []byte {
	choices := []byte{'['}
	gjson.GetBytes(chat, "choices").ForEach(func(_, c gjson.Result) bool {
		if len(choices) > 1 {
			choices = append(choices, ',')
		}
		choices = appendChoice(choices, c, c.Get("message"), r.Echo)
		return true
	})
	choices = append(choices, ']')
	out, _ := sjson.SetBytes(chat, "object", "text_completion")
	out, _ = sjson.SetRawBytes(out, "choices", choices)
	return out
}

// appendChoice writes one text_completion choice of chat choice c whose
// text is in m (its message, or a stream chunk's delta).
func appendChoice(dst []byte, c, m gjson.Result, echo string) []byte {
	dst = append(dst, `{"text":`...)
	dst = jsonstr.Append(dst, echo+m.Get("content").Str)
	dst = append(dst, `,"index":`...)
	dst = strconv.AppendInt(dst, c.Get("index").Int(), 10)
	dst = append(dst, `,"logprobs":`...)
	dst = appendLogprobs(dst, c.Get("logprobs.content"))
	dst = append(dst, `,"finish_reason":`...)
	if f := c.Get("finish_reason"); f.Type == gjson.String {
		dst = jsonstr.Append(dst, f.Str)
	} else {
		dst = append(dst, "null"...)
	}
	if f := c.Get("native_finish_reason"); f.Type == gjson.String {
		dst = append(dst, `,"native_finish_reason":`...)
		dst = jsonstr.Append(dst, f.Str)
	}
	if rs := m.Get("reasoning"); rs.Type == gjson.String {
		dst = append(dst, `,"reasoning":`...)
		dst = jsonstr.Append(dst, rs.Str)
	}
	return append(dst, '}')
}

// appendLogprobs writes chat's logprobs.content ([{token, logprob,
// top_logprobs: [{token, logprob}]}]) in completions' form: tokens,
// token_logprobs and top_logprobs side by side, and text_offset, each
// token's offset in the text. null when there are none.
func appendLogprobs(dst []byte, content gjson.Result) []byte {
	items := content.Array()
	if len(items) == 0 {
		return append(dst, "null"...)
	}
	dst = append(dst, `{"tokens":[`...)
	for i, it := range items {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonstr.Append(dst, it.Get("token").Str)
	}
	dst = append(dst, `],"token_logprobs":[`...)
	for i, it := range items {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendFloat(dst, it.Get("logprob").Float(), 'g', -1, 64)
	}
	dst = append(dst, `],"top_logprobs":[`...)
	for i, it := range items {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '{')
		for j, alt := range it.Get("top_logprobs").Array() {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = jsonstr.Append(dst, alt.Get("token").Str)
			dst = append(dst, ':')
			dst = strconv.AppendFloat(dst, alt.Get("logprob").Float(), 'g', -1, 64)
		}
		dst = append(dst, '}')
	}
	dst = append(dst, `],"text_offset":[`...)
	off := 0
	for i, it := range items {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendInt(dst, int64(off), 10)
		off += len(it.Get("token").Str)
	}
	return append(dst, "]}"...)
}
