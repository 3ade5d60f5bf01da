package server

import (
	"strconv"

	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/pipeline"
	"github.com/switchyard/switchyard/host/route"
	"github.com/tidwall/gjson"
)

// compressionPlugin fits an over-long prompt into the context of the
// endpoints a request may be routed to (plugins/context-compression). It
// is on by default when all of them have a context of at most
// compressionDefaultMax tokens (spec 2.3; the request turns it off with
// "enabled": false).
const (
	compressionPlugin     = "context-compression"
	compressionDefaultMax = 8192
)

// buildPipeline builds req's plugin pipeline with ctx.context (the window
// of the endpoints req may be routed to) and, for a small-context request
// that may not fit, context-compression as a default.
func (s *Server) buildPipeline(req *chatRequest) (*pipeline.Pipeline, *apierr.Error) {
	w := s.Router.Window(req.job(s.Keys, "").Route)
	extra := pipeline.Extra{Context: windowJSON(w)}
	if w.MaxContext > 0 && w.MaxContext <= compressionDefaultMax && mayNotFit(req, w.MaxContext, w.MaxOutput, w.MaxMessages) {
		extra.Defaults = []string{compressionPlugin}
	}
	if req.answerPlugin != "" {
		// switchyard/fusion: the plugin answers (routers.go).
		extra.Defaults = append(extra.Defaults, req.answerPlugin)
	}
	extra.ModeratedBy = s.moderatedBy(req)
	if req.routerPlugin != "" {
		extra.Skip = []string{req.routerPlugin} // it ran already (routers.go)
	}
	return s.Pipeline.BuildWith(req.key.AccountID, req.Model(), req.Plugins, extra)
}

// windowJSON is ctx.context's window. By hand, not with fmt or
// encoding/json: this runs for every request.
func windowJSON(w route.Window) []byte {
	b := make([]byte, 0, 112)
	b = append(b, `{"min_context":`...)
	b = strconv.AppendInt(b, int64(w.MinContext), 10)
	b = append(b, `,"max_context":`...)
	b = strconv.AppendInt(b, int64(w.MaxContext), 10)
	b = append(b, `,"max_output":`...)
	b = strconv.AppendInt(b, int64(w.MaxOutput), 10)
	b = append(b, `,"max_messages":`...)
	b = strconv.AppendInt(b, int64(w.MaxMessages), 10)
	b = append(b, `,"native_files":`...)
	b = strconv.AppendBool(b, w.NativeFiles)
	return append(b, '}')
}

// mayNotFit reports whether req might not fit a context of ctx tokens. It
// is cheap and never wrong when it says a request fits: PromptBound is an
// upper bound of the prompt's tokens, and of the router's estimate. So the
// default plugin (a Wasm call that tokenizes the prompt) runs only for a
// request it may change.
func mayNotFit(req *chatRequest, ctx, maxOutput, maxMessages int) bool {
	out := req.MaxOutput
	if maxOutput > 0 && out > maxOutput {
		out = maxOutput
	}
	if int(req.PromptBound)+max(out, 0) > ctx {
		return true
	}
	return maxMessages > 0 && int(gjson.GetBytes(req.Body, "messages.#").Int()) > maxMessages
}
