package dispatch

import (
	"bytes"
	"slices"

	"github.com/switchyard/switchyard/abi/chatparams"
	"github.com/switchyard/switchyard/abi/manifest"
	"github.com/switchyard/switchyard/host/catalog"
	"github.com/switchyard/switchyard/host/route"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// bodyFor is the request body one endpoint's adapter gets. The request is
// the same for every attempt; what an endpoint cannot take is shaped here,
// once per attempt, so every adapter benefits (docs/interface-choices.md):
//
//   - chat: custom tools are removed for an endpoint that does not list
//     custom_tools in its supported_parameters (drop names it), and a max
//     output above the endpoint's maximum is clamped to it;
//   - embeddings: token-id input goes to providers that take ids (ids
//     reports it); the others get Job.TextBody, the ids decoded.
//
// The common request needs none of it and gets Job.Body as it is.
func (job *Job) bodyFor(ep *catalog.Endpoint, drop []string, ids capabilities) []byte {
	if job.Route.Kind == catalog.KindEmbedding {
		if job.TextBody != nil && !takesTokenIDs(ids, ep.Provider) {
			return job.TextBody
		}
		return job.Body
	}
	body := job.Body
	if slices.Contains(drop, chatparams.CustomTools) {
		body = withoutCustomTools(body)
	}
	if _, ok := route.ClampedOutput(ep, job.MaxOutput); ok {
		for _, k := range []string{"max_tokens", "max_completion_tokens"} {
			if n := gjson.GetBytes(body, k); n.Type == gjson.Number {
				if limit, ok := route.ClampedOutput(ep, int(n.Int())); ok {
					body, _ = sjson.SetBytes(body, k, limit)
				}
			}
		}
	}
	return body
}

// capabilities answers what the active adapters declare in their
// manifests; *modules.Registry outside tests.
type capabilities interface {
	AdapterHas(adapter, capability string) bool
}

// takesTokenIDs reports whether provider p takes embeddings input as token
// ids: its configuration's embedding_token_ids when set, else its
// adapter's manifest (manifest.CapabilityEmbeddingTokenIDs).
func takesTokenIDs(ids capabilities, p *catalog.Provider) bool {
	if p.EmbeddingTokenIDs != nil {
		return *p.EmbeddingTokenIDs
	}
	return ids.AdapterHas(p.Adapter, manifest.CapabilityEmbeddingTokenIDs)
}

// withoutCustomTools removes custom tools, and a tool_choice naming one;
// with no tool left, tools and tool_choice go. It returns a new body: the
// job's is shared by every attempt.
func withoutCustomTools(body []byte) []byte {
	kept := []byte{'['}
	gjson.GetBytes(body, "tools").ForEach(func(_, t gjson.Result) bool {
		if t.Get("type").Str != "custom" {
			if len(kept) > 1 {
				kept = append(kept, ',')
			}
			kept = append(kept, t.Raw...)
		}
		return true
	})
	kept = append(kept, ']')
	if len(kept) == 2 {
		body, _ = sjson.DeleteBytes(body, "tools")
		body, _ = sjson.DeleteBytes(body, "tool_choice")
		return body
	}
	body, _ = sjson.SetRawBytes(body, "tools", kept)
	if gjson.GetBytes(body, "tool_choice.type").Str == "custom" {
		body, _ = sjson.DeleteBytes(body, "tool_choice")
	}
	return body
}

// nativeFor is Job.Native as ep gets it: a max_tokens above the endpoint's
// maximum output clamped to it, as the chat body's is (the hold is taken
// for the clamped bound); otherwise the client's body as it is. A new
// Native when it changes: the job's is shared by every attempt.
func (job *Job) nativeFor(ep *catalog.Endpoint) *Native {
	if job.Native == nil {
		return nil
	}
	n := gjson.GetBytes(job.Native.Body, "max_tokens")
	if n.Type != gjson.Number {
		return job.Native
	}
	limit, ok := route.ClampedOutput(ep, int(n.Int()))
	if !ok {
		return job.Native
	}
	clamped := *job.Native
	clamped.Body, _ = sjson.SetBytes(bytes.Clone(job.Native.Body), "max_tokens", limit)
	return &clamped
}
