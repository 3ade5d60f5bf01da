package route

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/catalog"
	"github.com/switchyard/switchyard/host/jsonstr"
)

// Window sums up the endpoints a chat request may be routed to, for the
// context-compression plugin (ctx.context): the smallest and largest
// context length, the largest maximum output (0: none known) and the
// smallest message-count limit of their providers (0: none). An endpoint
// counts when it passes every preference of req but the context length,
// which is what compression is about.
type Window struct {
	MinContext  int `json:"min_context"`
	MaxContext  int `json:"max_context"`
	MaxOutput   int `json:"max_output"`
	MaxMessages int `json:"max_messages"`
	// NativeFiles: every endpoint takes file parts (PDFs) itself — the
	// model lists "file" among its input modalities and the endpoint's
	// adapter translates file parts (its manifest's file_input) — so the
	// file-parser plugin can hand the file on instead of extracting it.
	NativeFiles bool `json:"native_files"`
}

// Adapters tells which adapters translate file content parts into their
// provider's own form: those whose manifest declares the file_input
// capability (modules.Registry). The host names none.
type Adapters interface {
	NativeFiles(adapter string) bool
}

// Window computes req's window. Unknown models count for nothing: Plan
// answers them.
func (r *Router) Window(req Request) Window {
	var w Window
	endpoints, native := 0, 0
	t := r.tab.Load() // one catalog for the whole window
	for _, id := range req.Models {
		st, v := t.lookup(id)
		if st == nil || st.m.Kind != catalog.KindChat {
			continue
		}
		req.noteVariant(st.m, v)
		for _, ep := range st.m.Endpoints {
			if ep == nil || ep.Provider == nil || check(st.m, ep, &req)&^(1<<cContext) != 0 {
				continue
			}
			c := contextOf(st.m, ep)
			if c > 0 && (w.MinContext == 0 || c < w.MinContext) {
				w.MinContext = c
			}
			w.MaxContext = max(w.MaxContext, c)
			w.MaxOutput = max(w.MaxOutput, ep.MaxOutput)
			endpoints++
			if r.opts.Adapters != nil && slices.Contains(st.m.InputModalities, "file") && r.opts.Adapters.NativeFiles(ep.Provider.Adapter) {
				native++
			}
			if mm := ep.Provider.MaxMessages; mm > 0 && (w.MaxMessages == 0 || mm < w.MaxMessages) {
				w.MaxMessages = mm
			}
		}
	}
	w.NativeFiles = endpoints > 0 && native == endpoints
	return w
}

func contextOf(m *catalog.Model, ep *catalog.Endpoint) int {
	if ep.ContextLength > 0 {
		return ep.ContextLength
	}
	return m.ContextLength
}

// contextTooLong is the 400 for a prompt too long for every endpoint that
// the preferences leave: the request, not the catalog, must change, so it
// names the largest context available and the plugin that would make the
// prompt fit. Nil when some endpoint failed for another reason.
func contextTooLong(ms []*catalog.Model, req *Request, ids []string) *apierr.Error {
	largest, at := 0, ""
	for _, m := range ms {
		for _, ep := range m.Endpoints {
			if ep == nil || ep.Provider == nil || check(m, ep, req) != 1<<cContext {
				continue
			}
			if c := contextOf(m, ep); c > largest {
				largest, at = c, m.ID+" at "+ep.Provider.Slug
			}
		}
	}
	if largest == 0 {
		return nil
	}
	if req.Kind == catalog.KindEmbedding {
		e := apierr.BadRequest("input", "an input (about %d tokens) does not fit the largest context available for %s: %d tokens (%s); each input of a batch must fit it. Shorten or split that input",
			req.contextTokens(), strings.Join(ids, ", "), largest, at)
		e.Metadata = map[string]any{"models": ids, "context_length": largest, "input_tokens": req.contextTokens()}
		return e
	}
	out := ""
	if req.MaxOutputTokens > 0 {
		out = " plus " + strconv.Itoa(req.MaxOutputTokens) + " output tokens (max_tokens)"
	}
	fix := "Shorten the conversation or lower max_tokens"
	if req.Compression != "" {
		fix = fmt.Sprintf(`Shorten the conversation, lower max_tokens, or add the %s plugin, "plugins": [{"id": %s}], to drop messages from the middle until it fits`, req.Compression, jsonstr.Quote(req.Compression))
	}
	e := apierr.BadRequest("messages", "the prompt (about %d tokens)%s does not fit the largest context available for %s: %d tokens (%s). %s",
		req.PromptTokens, out, strings.Join(ids, ", "), largest, at, fix)
	e.Metadata = map[string]any{"models": ids, "context_length": largest, "prompt_tokens": req.PromptTokens, "max_output_tokens": req.MaxOutputTokens}
	if req.Compression != "" {
		e.Metadata["suggestion"] = req.Compression
	}
	return e
}
