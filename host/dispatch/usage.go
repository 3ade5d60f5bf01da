package dispatch

import (
	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/catalog"
	"github.com/switchyard/switchyard/host/tokenize"
	"github.com/switchyard/switchyard/host/wire"
)

// Usage is what the upstream reported in body, or — when it reported
// nothing usable — the prompt and completion counted with the model's
// tokenizer, marked estimated. completion gives the generated text, and is
// called only when counting (nil: nothing was generated, e.g. embeddings).
func (r *Result) Usage(body []byte, completion func() string) billing.Usage {
	u, ok := wire.ParseUsage(body)
	return r.UsageOr(u, ok, completion)
}

// UsageOr is Usage for usage read already: u when the upstream reported
// it (ok), else counted.
func (r *Result) UsageOr(u billing.Usage, ok bool, completion func() string) billing.Usage {
	if ok {
		u.Requests = 1
		return r.unlessZero(u, completion)
	}
	text := ""
	if completion != nil {
		text = completion()
	}
	return r.Counted(text)
}

// unlessZero checks reported usage against what was sent and received:
// an upstream that reports no prompt tokens (every request sends a
// prompt), or no completion tokens for text it generated, would make the
// request free. Each count it reported as zero is counted instead, the
// usage is marked estimated and ZeroReported (the generation's
// upstream_anomaly), and the provider is logged.
func (r *Result) unlessZero(u billing.Usage, completion func() string) billing.Usage {
	if u.PromptTokens > 0 && (u.CompletionTokens > 0 || completion == nil) {
		return u
	}
	fixed := false
	if u.PromptTokens == 0 {
		if p := r.promptUsage(r.Endpoint()); p.PromptTokens > 0 {
			u.PromptTokens, u.Images, fixed = p.PromptTokens, max(u.Images, p.Images), true
		}
	}
	if u.CompletionTokens == 0 && completion != nil {
		if c := r.CountText(completion()); c > 0 {
			u.CompletionTokens, fixed = c, true
		}
	}
	if fixed {
		u.Estimated, u.ZeroReported = true, true
		ep := r.Endpoint()
		r.d.log().Warn("upstream reported zero usage; the gateway counted the tokens",
			"provider", ep.Provider.Slug, "model", ep.Model.ID, "generation", r.job.GenID,
			"prompt_tokens", u.PromptTokens, "completion_tokens", u.CompletionTokens)
	}
	return u
}

// Counted is the usage counted with the tokenizer: the prompt (counted once
// per run, however often a long stream checkpoints) and completion.
func (r *Result) Counted(completion string) billing.Usage {
	model := r.Endpoint().Model.ID
	u := r.promptUsage(r.Endpoint())
	if completion != "" {
		if c, err := tokenize.Count(model, completion); err == nil {
			u.CompletionTokens = c
		}
	}
	return u
}

// CountText is the tokens of text with the model's tokenizer (0 when it
// cannot be counted). A long stream's checkpoints count only what came
// since the last one and add it up: counting the whole completion at each
// checkpoint made a stream's counting grow with the square of its length.
func (r *Result) CountText(text string) int64 {
	if text == "" {
		return 0
	}
	n, err := tokenize.Count(r.Endpoint().Model.ID, text)
	if err != nil {
		return 0
	}
	return n
}

// promptUsage is the prompt counted with ep's model's tokenizer (once per
// run).
func (r *Result) promptUsage(ep *catalog.Endpoint) billing.Usage {
	model := ep.Model.ID
	if r.prompt == nil {
		p := billing.Usage{Estimated: true, Requests: 1}
		var err error
		if r.job.Route.Kind == catalog.KindEmbedding {
			p.PromptTokens, p.Images, err = tokenize.CountEmbeddingInput(model, r.job.Body)
		} else {
			p.PromptTokens, p.Images, err = tokenize.CountChatPrompt(model, r.job.Body)
		}
		if err != nil {
			p.PromptTokens, p.Images = 0, 0
		}
		r.prompt = &p
	}
	return *r.prompt
}
