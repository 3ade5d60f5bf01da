package flow

import (
	"context"
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/catalog"
	"github.com/switchyard/switchyard/host/dispatch"
	"github.com/switchyard/switchyard/host/keys"
	"github.com/switchyard/switchyard/host/route"
	"github.com/switchyard/switchyard/host/validate"
)

// EmbeddingsJob is one embeddings request to run: the validated,
// normalised request (ParseEmbeddings) and who pays.
type EmbeddingsJob struct {
	Key   *keys.Key
	GenID string
	Req   *validate.EmbeddingsRequest
	Text  []byte // the input decoded to text, for providers that take no token ids
	// Envelope is a group hold the run draws from (a module's planned
	// sub-requests), nil for none.
	Envelope *billing.Envelope
	Adm      *Admission
}

// ParseEmbeddings is the validated, normalised request of an embeddings
// body (NormalizeEmbeddings), with the model's image check.
func (s *Core) ParseEmbeddings(body []byte) (*validate.EmbeddingsRequest, []byte, *apierr.Error) {
	req, aerr := validate.Embeddings(body)
	if aerr != nil {
		return nil, nil, aerr
	}
	req, text, aerr := s.NormalizeEmbeddings(req)
	if aerr != nil {
		return nil, nil, aerr
	}
	if m := s.Router.Catalog().Model(req.Model); m != nil && m.Kind == catalog.KindEmbedding && !m.AcceptsImages() && req.HasImage {
		return nil, nil, apierr.BadRequest("input", "model %s does not accept image input; send text only", req.Model)
	}
	return req, text, nil
}

// Embeddings runs an embeddings request: routed among the key's providers,
// held, sent, read and settled under j.GenID. It serves POST /embeddings
// and the embed host function alike, so a module's embedding is routed,
// priced and recorded as a client's is. res is the dispatcher's result
// (with a failure too: its record says what failed attempts charged).
func (s *Core) Embeddings(ctx context.Context, j EmbeddingsJob) (res *dispatch.Result, raw []byte, g *billing.Generation, aerr *apierr.Error) {
	acct := s.Keys.Providers(j.Key.AccountID)
	req := j.Req
	res, aerr = s.Dispatcher.Run(ctx, &dispatch.Job{
		Key: j.Key, GenID: j.GenID, Body: req.Body, TextBody: j.Text, PromptBound: req.PromptBound, Images: req.Images,
		Envelope: j.Envelope,
		Read:     dispatch.ReadEmbeddings(req.Inputs, req.Base64),
		Route: route.Request{Kind: catalog.KindEmbedding, Models: []string{req.Model}, Prefs: req.Prefs,
			PromptTokens: req.PromptTokens, ContextTokens: req.LongestInput, AccountOnly: acct.Only, AccountIgnore: acct.Ignore},
	})
	if aerr != nil {
		return res, nil, nil, aerr
	}
	usage := res.Usage(res.Body, nil)
	j.Adm.Record(usage)
	raw, g, aerr = res.SettleRecord(res.Body, usage, "")
	if aerr != nil {
		return res, nil, nil, aerr
	}
	res.Succeeded(0, 0)
	return res, raw, g, nil
}

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
		res, raw, g, aerr := parent.core.Embeddings(ctx, EmbeddingsJob{Key: parent.Key, GenID: id, Req: req, Text: text,
			Envelope: parent.group.hold(), Adm: adm})
		if aerr != nil {
			parent.spend.addFailedSub(id, req.Model, res, aerr)
			return aerr.Status, aerr.Envelope(nil), nil
		}
		parent.spend.addSub(g, req.Model)
		return http.StatusOK, raw, nil
	}
}
