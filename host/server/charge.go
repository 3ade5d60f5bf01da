package server

import (
	"net/http"

	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/catalog"
	"github.com/switchyard/switchyard/host/keys"
	"github.com/switchyard/switchyard/host/tokenize"
	"github.com/tidwall/gjson"
)

// reserve holds the worst-case cost of a request on its first endpoint
// before anything is sent upstream (docs/billing.md).
func (s *Server) reserve(k *keys.Key, genID string, ep *catalog.Endpoint, body []byte, maxOut int, stream bool) (*billing.Reservation, *apierr.Error) {
	prompt, images := tokenize.EstimatePrompt(body)
	t := target(ep, maxOut)
	return s.Ledger.Reserve(k, billing.Request{
		ID: genID, Model: ep.Model.ID, Provider: t.Provider, Price: t.Price,
		PromptTokens: prompt, Images: images, MaxOutputTokens: t.MaxOutputTokens,
		ContextLength: t.ContextLength, Streamed: stream,
		// Every choice may generate the output bound (spec 2.1's n).
		Choices: max(gjson.GetBytes(body, "n").Int(), 1),
	})
}

// target is what a hold on ep must cover for a request whose own output
// bound is maxOut (0: none): the request's bound, else the endpoint's
// maximum output, else — no bound from either — its context.
func target(ep *catalog.Endpoint, maxOut int) billing.Target {
	out := int64(maxOut)
	if out == 0 {
		out = int64(ep.MaxOutput)
	}
	if out == 0 && ep.Model.Kind == catalog.KindChat {
		out = int64(ep.ContextLength)
	}
	return billing.Target{Provider: ep.Provider.Slug, Price: ep.Price, MaxOutputTokens: out, ContextLength: int64(ep.ContextLength)}
}

// countChat is the usage of a chat call whose upstream reported none,
// counted with the tokenizer.
func countChat(model string, reqBody []byte, completion string) billing.Usage {
	u := billing.Usage{Estimated: true, Requests: 1}
	if p, images, err := tokenize.CountChatPrompt(model, reqBody); err == nil {
		u.PromptTokens, u.Images = p, images
	}
	if c, err := tokenize.Count(model, completion); err == nil {
		u.CompletionTokens = c
	}
	return u
}

// completionText joins the message contents of a chat result.
func completionText(raw []byte) string {
	var text string
	gjson.GetBytes(raw, "choices.#.message.content").ForEach(func(_, v gjson.Result) bool {
		text += v.Str
		return true
	})
	return text
}

// settleOK charges the final usage and writes usage.cost into body. A
// charge that cannot be made durable fails the request: a result whose
// cost the ledger could lose is not handed out.
func settleOK(res *billing.Reservation, body []byte, u billing.Usage, finish string) ([]byte, *apierr.Error) {
	g, err := res.Settle(billing.Outcome{Usage: u, FinishReason: finish})
	if err != nil {
		return nil, apierr.New(http.StatusServiceUnavailable, "the charge for this request could not be recorded; nothing was billed, try again")
	}
	out, err := billing.WriteUsage(body, g)
	if err != nil {
		return body, nil
	}
	return out, nil
}
