package dispatch

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"math"
	"net/http"
	"strconv"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/jsonwalk"
	"github.com/switchyard/switchyard/host/wire"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// ReadChat is Job.Read for a non-streaming chat request: it reads the
// upstream body and runs the adapter's response hook. Its failures are
// retryable: another endpoint may answer.
func ReadChat(ctx context.Context, call *Call) ([]byte, *apierr.Error) {
	raw, aerr := call.readTranslated(ctx, abi.HookChatResponse)
	if aerr != nil {
		return nil, aerr
	}
	raw, fixes, ok := wire.RepairCompletion(raw)
	if !ok {
		call.d.log().Warn("upstream completion refused", "provider", call.Endpoint.Provider.Slug,
			"generation", call.Ctx.GenerationID, "reasons", fixes)
		return nil, &apierr.Error{Status: http.StatusBadGateway, Retryable: true,
			Message: "provider " + call.Endpoint.Provider.Slug + " returned a response that is not a chat completion"}
	}
	if len(fixes) > 0 {
		// A wrong-typed field or invalid UTF-8 never reaches the client.
		call.d.log().Warn("upstream completion repaired", "provider", call.Endpoint.Provider.Slug,
			"generation", call.Ctx.GenerationID, "reasons", fixes)
	}
	return raw, nil
}

// ReadEmbeddings is Job.Read for an embeddings request of inputs inputs:
// it reads the body as ReadChat does (same bound, same retryable
// failures), runs the response hook and normalises — one entry per input in input
// order with its index, the catalog model id, usage, and base64 encoding
// when asked for.
func ReadEmbeddings(inputs int, b64 bool) func(context.Context, *Call) ([]byte, *apierr.Error) {
	return func(ctx context.Context, call *Call) ([]byte, *apierr.Error) {
		raw, aerr := call.readTranslated(ctx, abi.HookEmbedResponse)
		if aerr != nil {
			return nil, aerr
		}
		return normalizeEmbeddings(call, raw, inputs, b64)
	}
}

// readTranslated is the one way a non-streaming answer is read: the body
// within the gateway's bound (readUpstream), then the adapter's response
// hook unless the adapter passes the answer through. Every failure is
// retryable: another endpoint, with its own adapter, may answer.
func (u *Call) readTranslated(ctx context.Context, hook abi.Hook) ([]byte, *apierr.Error) {
	raw, aerr := u.readUpstream(ctx) // respbody.go
	if aerr != nil {
		return nil, aerr
	}
	if u.Native() {
		// The client gets the provider's answer as it is; the hook's
		// translation below is what billing and the record read.
		u.nativeBody = raw
	}
	if u.Module.Manifest.PassthroughFor(hook, u.Ctx.API) {
		return raw, nil
	}
	out, err := u.Hook(ctx, hook, raw)
	if err != nil {
		e := apierr.From(err)
		e.Retryable = true
		return nil, e
	}
	return out.Field(0), nil
}

func normalizeEmbeddings(call *Call, raw []byte, want int, b64 bool) ([]byte, *apierr.Error) {
	slug := call.Endpoint.Provider.Slug
	bad := &apierr.Error{Status: http.StatusBadGateway, Retryable: true,
		Message: "provider " + slug + " returned a response that is not an embeddings list"}
	data := gjson.GetBytes(raw, "data")
	if !jsonwalk.ValidBytes(raw) || !data.IsArray() {
		return nil, bad
	}
	items := data.Array()
	if len(items) != want {
		bad.Message = "provider " + slug + " returned " + strconv.Itoa(len(items)) + " embeddings for " + strconv.Itoa(want) + " inputs"
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
	out := []byte(`{"object":"list","data":[`)
	for i, it := range ordered {
		if i > 0 {
			out = append(out, ',')
		}
		emb := it.Get("embedding")
		if !validEmbedding(emb) {
			return nil, bad
		}
		out = append(out, `{"object":"embedding","index":`...)
		out = strconv.AppendInt(out, int64(i), 10)
		out = append(out, `,"embedding":`...)
		if b64 && emb.IsArray() {
			out = append(out, '"')
			out = append(out, floatsToBase64(emb)...)
			out = append(out, '"')
		} else {
			out = append(out, emb.Raw...)
		}
		out = append(out, '}')
	}
	out = append(out, ']', '}')
	out, _ = sjson.SetBytes(out, "model", call.Endpoint.Model.ID)
	out, _ = sjson.SetBytes(out, "provider", slug)
	if u := gjson.GetBytes(raw, "usage"); u.IsObject() {
		out, _ = sjson.SetRawBytes(out, "usage", []byte(u.Raw))
	}
	return out, nil
}

// validEmbedding reports whether e is what a client may be handed as an
// embedding: an array of numbers, or base64 (the upstream encoded it).
func validEmbedding(e gjson.Result) bool {
	switch {
	case e.Type == gjson.String:
		_, err := base64.StdEncoding.DecodeString(e.Str)
		return err == nil
	case !e.IsArray():
		return false
	}
	ok := true
	e.ForEach(func(_, v gjson.Result) bool {
		ok = v.Type == gjson.Number
		return ok
	})
	return ok
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
