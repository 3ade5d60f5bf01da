package flow

import (
	"context"
	"net/http"

	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/catalog"
	"github.com/switchyard/switchyard/host/dispatch"
	"github.com/switchyard/switchyard/host/keys"
	"github.com/switchyard/switchyard/host/pipeline"
	"github.com/switchyard/switchyard/host/route"
	"github.com/switchyard/switchyard/host/validate"
	"github.com/tidwall/gjson"
)

// ParseEmbeddings is the typed, normalised request of an embeddings body,
// and its input in the form the adapters take (NormalizeEmbeddings).
func (s *Core) ParseEmbeddings(body []byte) (*validate.EmbeddingsRequest, []byte, *apierr.Error) {
	if len(body) == 0 {
		return nil, nil, apierr.BadRequest("", "request body is empty; send a JSON embeddings request")
	}
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
	// EnvelopeOnly: the hold must come from Envelope alone (a plugin's
	// sub-request, within its request's allowance).
	EnvelopeOnly bool
	Adm          *Admission
	// Meta asks for service_metadata in the answer.
	Meta bool
}

// Embeddings runs an embeddings request through the phases of the
// request core that apply to it: the pre_request hooks of the plugins
// that declare they take embeddings (manifest.CapabilityEmbeddings: the
// account's and the gateway's default-on ones; an edited request is
// parsed again), route and dispatch, settle under j.GenID. There is no
// post phase: an embeddings answer is vectors, not text for a plugin to
// read. It serves POST /embeddings and the embed host function alike, so
// a module's embedding is routed, priced and recorded as a client's is.
// raw is the JSON answer with the generation id (as OpenRouter's carry),
// and service_metadata when j.Meta; res is the dispatcher's result (with a
// failure too: its record says what failed attempts charged).
func (s *Core) Embeddings(ctx context.Context, j EmbeddingsJob) (res *dispatch.Result, raw []byte, g *billing.Generation, aerr *apierr.Error) {
	req, text, key := j.Req, j.Text, j.Key
	pl, aerr := s.Pipeline.BuildWith(key.AccountID, req.Model, gjson.Result{}, pipeline.Extra{Embeddings: true, Key: keyID(key.Hash)})
	if aerr != nil {
		return nil, nil, nil, aerr
	}
	defer pl.Release()
	pre, aerr := pl.Pre(ctx, req.Body)
	switch {
	case aerr != nil:
		return nil, nil, nil, aerr
	case pre.Respond != nil:
		return nil, nil, nil, apierr.New(http.StatusBadGateway, "a plugin answered an embeddings request itself; on embeddings a plugin may edit or block the request only")
	case !sameBytes(pre.Body, req.Body):
		if req, text, aerr = s.ParseEmbeddings(pre.Body); aerr != nil {
			aerr.Message = "the request as the plugins left it: " + aerr.Message
			return nil, nil, nil, aerr
		}
	}
	acct := s.Keys.Providers(key.AccountID)
	res, aerr = s.Dispatcher.Run(ctx, &dispatch.Job{
		Key: key, GenID: j.GenID, Body: req.Body, TextBody: text, PromptBound: req.PromptBound, Images: req.Images,
		Envelope: j.Envelope, EnvelopeOnly: j.EnvelopeOnly, Read: dispatch.ReadEmbeddings(req.Inputs, req.Base64), PluginTime: pl.Time,
		ReadPart: func(n int) func(context.Context, *dispatch.Call) ([]byte, *apierr.Error) {
			return dispatch.ReadEmbeddings(n, req.Base64)
		},
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
	// The body is ours (dispatch.ReadEmbeddings wrote it): it has no id.
	if len(raw) > 1 && raw[0] == '{' {
		raw = append([]byte(`{"id":"`+res.Identity().GenID+`",`), raw[1:]...)
	}
	if j.Meta {
		m := res.Metadata(req.Model)
		if len(pl.Stages) > 0 {
			m.Pipeline = pl.Stages
		}
		raw = m.Set(raw)
	}
	return res, raw, g, nil
}

// sameBytes reports whether a and b are the same slice (a pre_request
// run that changed nothing returns the request it was given).
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}
