package server

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/catalog"
	"github.com/switchyard/switchyard/host/keys"
	"github.com/switchyard/switchyard/host/route"
	"github.com/switchyard/switchyard/host/tokenize"
	"github.com/switchyard/switchyard/host/validate"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

func (s *Server) embeddings(c *fiber.Ctx) error {
	body := c.Body()
	if len(body) == 0 {
		return apierr.BadRequest("", "request body is empty; send a JSON embeddings request")
	}
	if err := validate.Embeddings(body); err != nil {
		return err
	}
	in, aerr := s.embeddingsCompat(body)
	if aerr != nil {
		return aerr
	}
	body = in.ids
	model := gjson.GetBytes(body, "model").Str
	prefs, aerr := route.ParsePreferences(gjson.GetBytes(body, "provider"), gjson.Result{})
	if aerr != nil {
		return aerr
	}
	input := gjson.GetBytes(body, "input")
	if m := s.Catalog.Model(model); m != nil && m.Kind == catalog.KindEmbedding && !m.AcceptsImages() && hasImage(input) {
		return apierr.BadRequest("input", "model %s does not accept image input; send text only", model)
	}
	key := c.Locals(localsKey).(*keys.Key)
	acct := s.Keys.Providers(key.AccountID)
	plan, aerr := s.Router.Plan(route.Request{
		Kind: catalog.KindEmbedding, Models: []string{model}, Prefs: prefs,
		PromptTokens: estimateTokens(len(input.Raw)),
		AccountOnly:  acct.Only, AccountIgnore: acct.Ignore,
	})
	if aerr != nil {
		return aerr
	}
	meta := metadataRequested(c)
	res, aerr := s.reserve(key, newGenerationID(), plan.Attempts[0], body, 0, false)
	if aerr != nil {
		return aerr
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(s.Config.Timeouts.Request))
	defer cancel()
	var last *apierr.Error
	for i, ep := range plan.Attempts {
		if i > 0 {
			if err := res.Retarget(ep.Provider.Slug, ep.Price); err != nil {
				last = err
				break
			}
		}
		start := time.Now()
		call, err := s.send(ctx, ep, abi.HookEmbedRequest, in.forEndpoint(ep), false, nil)
		if err == nil {
			raw, rerr := io.ReadAll(io.LimitReader(call.resp.Body, 256<<20))
			if rerr != nil {
				err = s.transportError(ctx, call, rerr)
			} else {
				raw, err = s.finishEmbeddings(ctx, call, raw, in.counted())
			}
			call.close()
			if err == nil {
				usage, ok := billing.ParseUsage(raw)
				if !ok || usage.Estimated {
					usage = billing.Usage{Estimated: true}
					usage.PromptTokens, usage.Images, _ = tokenize.CountEmbeddingInput(ep.Model.ID, body)
				}
				usage.Requests = 1
				raw, err = settleOK(res, raw, usage, "")
			}
			if err == nil {
				s.report(ep, true, http.StatusOK, time.Since(start), 0)
				if meta {
					b, _ := json.Marshal(plan.Metadata(model, ep, i+1))
					raw, _ = sjson.SetRawBytes(raw, "service_metadata", b)
				}
				c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
				return c.Send(raw)
			}
		}
		res.AddFailedAttempt(billing.Usage{})
		s.report(ep, false, err.Status, time.Since(start), 0)
		last = err
		if !err.Retryable || !prefs.AllowFallbacks() {
			break
		}
	}
	if last == nil {
		last = apierr.New(http.StatusServiceUnavailable, "no provider is available for %s", model)
	}
	_, _ = res.Settle(billing.Outcome{Status: billing.StatusError, Error: last.Message})
	return last
}

// finishEmbeddings runs the response hook and normalises: one entry per
// input in input order with its index, the catalog model id, usage, and the
// encoding the client asked for.
func (s *Server) finishEmbeddings(ctx context.Context, call *upstreamCall, raw, reqBody []byte) ([]byte, *apierr.Error) {
	if !call.mod.Manifest.IsPassthrough(abi.HookEmbedResponse) {
		out, err := call.mod.Call(ctx, abi.HookEmbedResponse, adapterCtx(call.ep, false, nil), raw)
		if err != nil {
			return nil, apierr.From(err)
		}
		raw = out.Field(0)
	}
	bad := &apierr.Error{Status: http.StatusBadGateway, Retryable: true,
		Message: "provider " + call.ep.Provider.Slug + " returned a response that is not an embeddings list"}
	data := gjson.GetBytes(raw, "data")
	if !gjson.ValidBytes(raw) || !data.IsArray() {
		return nil, bad
	}
	input := gjson.GetBytes(reqBody, "input")
	want := 1
	if input.IsArray() {
		want = len(input.Array())
	}
	items := data.Array()
	if len(items) != want {
		bad.Message = "provider " + call.ep.Provider.Slug + " returned " + itoa(len(items)) + " embeddings for " + itoa(want) + " inputs"
		return nil, bad
	}
	// Upstreams may answer out of order; the spec promises input order.
	ordered := make([]gjson.Result, want)
	for i, it := range items {
		idx := i
		if x := it.Get("index"); x.Exists() {
			idx = int(x.Int())
		}
		if idx < 0 || idx >= want || ordered[idx].Exists() {
			return nil, bad
		}
		ordered[idx] = it
	}
	b64 := gjson.GetBytes(reqBody, "encoding_format").Str == "base64"
	out := []byte(`{"object":"list","data":[`)
	for i, it := range ordered {
		if i > 0 {
			out = append(out, ',')
		}
		emb := it.Get("embedding")
		if !emb.IsArray() && emb.Type != gjson.String {
			return nil, bad
		}
		out = append(out, `{"object":"embedding","index":`...)
		out = append(out, itoa(i)...)
		out = append(out, `,"embedding":`...)
		switch {
		case b64 && emb.IsArray():
			out = append(out, '"')
			out = append(out, floatsToBase64(emb)...)
			out = append(out, '"')
		default:
			out = append(out, emb.Raw...)
		}
		out = append(out, '}')
	}
	out = append(out, ']', '}')
	out, _ = sjson.SetBytes(out, "model", call.ep.Model.ID)
	out, _ = sjson.SetBytes(out, "provider", call.ep.Provider.Slug)
	if u := gjson.GetBytes(raw, "usage"); u.IsObject() {
		out, _ = sjson.SetRawBytes(out, "usage", []byte(u.Raw))
	}
	return out, nil
}

// floatsToBase64 encodes a JSON number array as OpenAI does for
// encoding_format=base64: little-endian float32s, standard base64.
func floatsToBase64(arr gjson.Result) string {
	vals := arr.Array()
	b := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(v.Float())))
	}
	return base64.StdEncoding.EncodeToString(b)
}

// listModels serves GET /models and GET /embeddings/models (spec 2.8).
func (s *Server) listModels(kind catalog.Kind) fiber.Handler {
	type entry struct {
		ID            string            `json:"id"`
		Object        string            `json:"object"`
		Name          string            `json:"name,omitempty"`
		Kind          catalog.Kind      `json:"kind"`
		ContextLength int               `json:"context_length,omitempty"`
		OwnedBy       string            `json:"owned_by"`
		Modalities    []string          `json:"input_modalities"`
		Pricing       map[string]string `json:"pricing"`
		Providers     []string          `json:"providers"`
	}
	return func(c *fiber.Ctx) error {
		out := []entry{}
		for _, k := range []catalog.Kind{catalog.KindChat, catalog.KindEmbedding} {
			if kind != "" && k != kind {
				continue
			}
			for _, m := range s.Catalog.ModelsOfKind(k) {
				e := entry{ID: m.ID, Object: "model", Name: m.Name, Kind: m.Kind, ContextLength: m.ContextLength,
					Modalities: m.InputModalities, OwnedBy: m.ID[:indexSlash(m.ID)]}
				cheapest := m.Endpoints[0]
				for _, ep := range m.Endpoints {
					e.Providers = append(e.Providers, ep.Provider.Slug)
					if ep.Price.Prompt+ep.Price.Completion < cheapest.Price.Prompt+cheapest.Price.Completion {
						cheapest = ep
					}
				}
				// Per-token USD strings, as the public gateways list them.
				e.Pricing = map[string]string{
					"prompt":     perToken(cheapest.Price.Prompt),
					"completion": perToken(cheapest.Price.Completion),
					"request":    usd(cheapest.Price.Request),
				}
				out = append(out, e)
			}
		}
		return c.JSON(fiber.Map{"object": "list", "data": out})
	}
}

// hasImage reports whether any multimodal input item has an image part.
func hasImage(input gjson.Result) bool {
	found := false
	input.ForEach(func(_, item gjson.Result) bool {
		item.Get("content").ForEach(func(_, p gjson.Result) bool {
			found = p.Get("type").Str == "image_url"
			return !found
		})
		return !found
	})
	return found
}
