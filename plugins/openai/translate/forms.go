package translate

import (
	"strings"

	"github.com/switchyard/switchyard/sdk"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// A form is what one OpenAI-compatible provider does differently from
// OpenAI's chat API. The provider's configuration selects it (`api:
// deepseek`), and it reaches the adapter as ctx.api, so the host names no
// provider: what each one refuses or answers differently is written here,
// beside the translation it changes, with the page that documents it.
// (Parameters only some of a provider's models refuse — xAI's reasoning
// models and stop — are the endpoint's supported_parameters, which the
// host turns into ctx.drop.)
type form struct {
	// refused are request members the provider answers with an error
	// instead of ignoring them; they are dropped as ctx.drop's are.
	refused map[string]bool
	// only, when set, lists the only request members the provider takes:
	// an API that refuses every member it does not know (Mistral's 422
	// "Extra inputs are not permitted") is sent nothing else.
	only map[string]bool
	// rename maps an OpenAI member to the provider's name for it.
	rename map[string]string
	// noStreamOptions: the provider refuses stream_options (and reports
	// usage in a stream's last chunk without being asked).
	noStreamOptions bool
	// reasoningObject: the provider takes the unified reasoning object
	// itself ({effort, max_tokens, exclude}), not the flat reasoning_effort.
	reasoningObject bool
	// reasoningContent: the provider returns its reasoning text as
	// reasoning_content, which the gateway's responses call reasoning.
	reasoningContent bool
	// cacheHitTokens: the provider reports cache reads as
	// usage.prompt_cache_hit_tokens, not prompt_tokens_details.cached_tokens.
	cacheHitTokens bool
	// reasoningOutside: the provider's completion_tokens leaves out the
	// reasoning tokens (total_tokens = prompt + completion + reasoning),
	// where OpenAI's, and the gateway's billing, count them in.
	reasoningOutside bool
	// finish maps the provider's own finish reasons to OpenAI's.
	finish map[string]string
	// passback: the provider reads an earlier assistant turn's reasoning
	// back as that message's reasoning_content (the gateway's answers call
	// it reasoning; OpenRouter's clients send it back as reasoning or
	// reasoning_details). passToolTurns: only a turn that called tools
	// carries it (others' reasoning is left out).
	passback, passToolTurns bool
}

// answers reports whether f changes the provider's answers (else its
// response hooks hand them on as they came).
func (f *form) answers() bool {
	return f != nil && (f.reasoningContent || f.cacheHitTokens || f.reasoningOutside || f.finish != nil)
}

// forms are the provider forms this adapter speaks; the manifest lists
// the same names in "apis", which is what the host checks a provider's
// api against.
var forms = map[string]*form{
	// https://docs.mistral.ai/api/#tag/chat/operation/chat_completion_v1_chat_completions_post
	// (request members; random_seed for seed, max_tokens; no stream_options:
	// the last chunk carries usage; finish_reason model_length, the model's
	// context filled, is OpenAI's length).
	"mistral": {
		only: set("messages", "temperature", "top_p", "max_tokens", "stream", "stop", "random_seed",
			"response_format", "tools", "tool_choice", "presence_penalty", "frequency_penalty", "n",
			"prediction", "parallel_tool_calls", "safe_prompt"),
		rename:          map[string]string{"seed": "random_seed", "max_completion_tokens": "max_tokens"},
		noStreamOptions: true,
		finish:          map[string]string{"model_length": "length"},
	},
	// https://docs.x.ai/docs/guides/reasoning: grok-3-mini returns
	// message.reasoning_content, and its usage example counts 14
	// completion and 310 reasoning tokens separately.
	"xai": {reasoningContent: true, reasoningOutside: true},
	// https://api-docs.deepseek.com/guides/reasoning_model (reasoning_content
	// in message and delta; logprobs and top_logprobs are errors on
	// deepseek-reasoner) and https://api-docs.deepseek.com/guides/kv_cache
	// (prompt_cache_hit_tokens).
	// https://api-docs.deepseek.com/guides/thinking_mode ("Tool calls"):
	// the reasoning_content of an assistant turn that called tools must be
	// passed back in every later request (else a 400); a turn without tool
	// calls needs none (the API ignores it), and the legacy
	// deepseek-reasoner, which had no tool calls, answered any
	// reasoning_content in the input with a 400
	// (https://api-docs.deepseek.com/guides/reasoning_model): so only tool
	// turns carry it.
	"deepseek": {reasoningContent: true, cacheHitTokens: true, passback: true, passToolTurns: true},
	// https://inference-docs.cerebras.ai/resources/openai: "These fields
	// will result in a 400 error": frequency_penalty, logit_bias,
	// presence_penalty, parallel_tool_calls, service_tier.
	"cerebras": {refused: set("frequency_penalty", "logit_bias", "presence_penalty", "parallel_tool_calls", "service_tier")},
	// https://docs.fireworks.ai/api-reference/post-chatcompletions: the
	// reasoning of reasoning models is message.reasoning_content.
	// https://docs.fireworks.ai/guides/reasoning ("Interleaved thinking"):
	// multi-turn tool agents must include the reasoning_content of previous
	// assistant turns; a model without interleaved thinking ignores it, so
	// every assistant turn carries its reasoning.
	"fireworks": {reasoningContent: true, passback: true},
	// https://openrouter.ai/docs/use-cases/reasoning-tokens: the request's
	// reasoning object ({effort} or {max_tokens}); the answer's reasoning
	// is already the gateway's field, its usage.cost the gateway replaces
	// with its own charge.
	"openrouter": {reasoningObject: true},
}

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// Forms are the names of the provider forms, for the manifest's check.
func Forms() []string {
	out := make([]string, 0, len(forms))
	for name := range forms {
		out = append(out, name)
	}
	return out
}

// formOf is ctx.api's form; nil for OpenAI's own API (and for a form this
// build does not know, which the host refuses before any request).
func formOf(ctx []byte) *form {
	api := sdk.Get(ctx, "api")
	if !api.Exists() {
		return nil
	}
	return forms[api.Str]
}

// keeps reports whether f sends request member key.
func (f *form) keeps(key string) bool {
	if f == nil {
		return true
	}
	if f.only != nil {
		if r, ok := f.rename[key]; ok {
			key = r
		}
		return f.only[key]
	}
	return !f.refused[key]
}

// name is the provider's name of request member key.
func (f *form) name(key string) string {
	if f != nil {
		if r, ok := f.rename[key]; ok {
			return r
		}
	}
	return key
}

// shadowed reports whether key is renamed to a member the body also has
// (max_completion_tokens beside max_tokens): the body's own is sent.
func (f *form) shadowed(key string, body []byte) bool {
	if f == nil {
		return false
	}
	r, ok := f.rename[key]
	return ok && sdk.Get(body, r).Exists()
}

// ChatResponse is the chat_response hook. OpenAI's answers are already
// unified (the manifest declares the hook passthrough, so the host skips
// it for OpenAI itself); a form's answer may name its reasoning
// reasoning_content, or its cache reads its own way.
func ChatResponse(in *sdk.In, out *sdk.Out) error {
	f, body := formOf(in.Field(0)), in.Field(1)
	if !f.answers() {
		out.Field(body)
		return nil
	}
	out.Field(unify(f, body, "message"))
	return nil
}

// ChatStreamEvent is the chat_stream_event hook, as ChatResponse on each
// chunk's deltas. It keeps no stream state.
func ChatStreamEvent(in *sdk.In, out *sdk.Out) error {
	f, ev := formOf(in.Field(0)), in.Field(1)
	out.Field(nil)
	if !f.answers() {
		out.Field(ev)
		return nil
	}
	out.Field(unify(f, ev, "delta"))
	return nil
}

// unify makes a form's answer (part: "message", or a chunk's "delta")
// OpenAI's: its own finish reasons mapped, each choice's reasoning_content
// renamed reasoning, reasoning tokens counted in completion_tokens, and a
// cache-hit count copied to prompt_tokens_details.cached_tokens, where the
// gateway's billing reads cache reads. A body that is not JSON is handed on
// for the host to judge.
func unify(f *form, body []byte, part string) []byte {
	if !gjson.ValidBytes(body) {
		return body
	}
	doc := gjson.ParseBytes(body)
	doc.Get("choices").ForEach(func(i, choice gjson.Result) bool {
		if r, ok := f.finish[choice.Get("finish_reason").Str]; ok {
			body, _ = sjson.SetBytes(body, "choices."+i.String()+".finish_reason", r)
		}
		return true
	})
	if f.reasoningContent {
		doc.Get("choices").ForEach(func(i, choice gjson.Result) bool {
			m := choice.Get(part)
			rc := m.Get("reasoning_content")
			if !rc.Exists() {
				return true
			}
			base := "choices." + i.String() + "." + part + "."
			if r := m.Get("reasoning"); !r.Exists() || r.Type == gjson.Null {
				body, _ = sjson.SetRawBytes(body, base+"reasoning", []byte(rc.Raw))
			}
			body, _ = sjson.DeleteBytes(body, base+"reasoning_content")
			return true
		})
	}
	if f.reasoningOutside {
		u := gjson.GetBytes(body, "usage")
		p, c, r := u.Get("prompt_tokens").Int(), u.Get("completion_tokens").Int(), u.Get("completion_tokens_details.reasoning_tokens").Int()
		// Only when the total says the reasoning was left out: a provider
		// that starts counting it in is not charged twice.
		if r > 0 && u.Get("total_tokens").Int() == p+c+r {
			body, _ = sjson.SetBytes(body, "usage.completion_tokens", c+r)
		}
	}
	if f.cacheHitTokens {
		u := gjson.GetBytes(body, "usage")
		if hit := u.Get("prompt_cache_hit_tokens"); hit.Type == gjson.Number && !u.Get("prompt_tokens_details.cached_tokens").Exists() {
			body, _ = sjson.SetRawBytes(body, "usage.prompt_tokens_details.cached_tokens", []byte(hit.Raw))
		}
	}
	return body
}

// passBack is the messages array with each assistant turn's reasoning
// (reasoning, else the text of OpenRouter's reasoning_details) as the
// provider's reasoning_content, and the gateway's names of it removed.
// A turn that already carries reasoning_content keeps its own. Messages
// without an assistant's reasoning are handed on as they came.
func (f *form) passBack(msgs gjson.Result) string {
	raw := msgs.Raw
	if !strings.Contains(raw, `"reasoning`) || !msgs.IsArray() {
		return raw
	}
	out := []byte(raw)
	msgs.ForEach(func(i, m gjson.Result) bool {
		if m.Get("role").Str != "assistant" {
			return true
		}
		r, details := m.Get("reasoning"), m.Get("reasoning_details")
		if !r.Exists() && !details.Exists() {
			return true
		}
		base := i.String() + "."
		text := ""
		if r.Type == gjson.String {
			text = r.Str
		} else {
			details.ForEach(func(_, d gjson.Result) bool {
				if d.Get("type").Str == "reasoning.text" {
					text += d.Get("text").Str
				}
				return true
			})
		}
		out, _ = sjson.DeleteBytes(out, base+"reasoning")
		out, _ = sjson.DeleteBytes(out, base+"reasoning_details")
		calls := m.Get("tool_calls")
		if text != "" && !m.Get("reasoning_content").Exists() && (!f.passToolTurns || calls.IsArray() && len(calls.Array()) > 0) {
			out, _ = sjson.SetBytes(out, base+"reasoning_content", text)
		}
		return true
	})
	return string(out)
}
