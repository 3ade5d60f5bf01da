package flow

import (
	"context"
	"net/http"
	"strconv"
	"sync/atomic"
)

// subEmbed is CallEnv.Embed for a request: it runs an embeddings body as
// a sub-request — validated, routed, held and settled under its own
// generation id (<request id>-sub<n>, numbered with the chat
// sub-requests), charged to the request's key, counted against its rate
// limits as a request of its own — and counts its charge in the request's
// usage, as subChat does.
func (parent *Request) subEmbed(subs *atomic.Int32) func(ctx context.Context, body []byte) (int, []byte, error) {
	return func(ctx context.Context, body []byte) (int, []byte, error) {
		id := parent.ID + "-sub" + strconv.Itoa(int(subs.Add(1)))
		req, text, aerr := parent.core.ParseEmbeddings(body)
		if aerr != nil {
			return aerr.Status, aerr.Envelope(nil), nil
		}
		parallel := parent.subsInFlight.Add(1) > 1
		defer parent.subsInFlight.Add(-1)
		adm, aerr := parent.adm.also(int64(req.PromptTokens), parallel)
		if aerr != nil {
			return aerr.Status, aerr.Envelope(nil), nil
		}
		defer adm.End()
		// Within a module's reservation when it made one; else held from
		// the account as it runs (embeddings are not in the allowance,
		// Pipeline.SubCostBound).
		env := parent.group.hold()
		res, raw, g, aerr := parent.core.Embeddings(ctx, EmbeddingsJob{Key: parent.Key, GenID: id, Req: req, Text: text,
			Envelope: env, Adm: adm})
		if aerr != nil {
			parent.spend.addFailedSub(id, req.Model, res, aerr)
			return aerr.Status, aerr.Envelope(nil), nil
		}
		parent.spend.addSub(g, req.Model)
		return http.StatusOK, raw, nil
	}
}
