package flow

import (
	"strconv"

	"github.com/switchyard/switchyard/abi/manifest"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/pipeline"
	"github.com/switchyard/switchyard/host/route"
	"github.com/switchyard/switchyard/host/tokenize"
	"github.com/switchyard/switchyard/host/tools"
	"github.com/tidwall/gjson"
)

// A compression plugin (manifest.RoleCompression; the first party's is
// plugins/context-compression) fits an over-long prompt into the context
// of the endpoints a request may be routed to. It is on by default when
// all of them have a context of at most compressionDefaultMax tokens (spec
// 2.3; the request turns it off with "enabled": false).
const compressionDefaultMax = 8192

// buildPipeline builds the request's plugin pipeline with ctx.context
// (the window of the endpoints it may be routed to) and, for a
// small-context request that may not fit, context-compression as a
// default. The router's pipeline, if one ran, is folded in first.
func (r *Request) buildPipeline() *apierr.Error {
	s := r.core
	if aerr := r.checkFusionTools(); aerr != nil {
		return aerr
	}
	w := s.Router.Window(r.routeRequest())
	extra := pipeline.Extra{Context: windowJSON(w), Key: keyID(r.Key.Hash), Presets: s.cachePresets(r.Key)}
	if w.MaxContext > 0 && w.MaxContext <= compressionDefaultMax && mayNotFit(r, w.MaxContext, w.MaxOutput, w.MaxMessages) {
		if c := s.Modules.RolePlugin(r.Key.AccountID, manifest.RoleCompression); c != "" {
			extra.Defaults = []string{c}
		}
	}
	if r.answerPlugin != "" {
		// switchyard/fusion: the plugin answers (routers.go).
		extra.Defaults = append(extra.Defaults, r.answerPlugin)
	}
	extra.ModeratedBy = r.moderatedBy()
	if r.routerPlugin != "" {
		extra.Skip = []string{r.routerPlugin} // it ran already (routers.go)
	}
	pl, aerr := s.Pipeline.BuildWith(r.Key.AccountID, r.Model(), r.Plugins, extra)
	if aerr != nil {
		return aerr
	}
	pl.Prepend(r.pl) // released with pl from here on
	r.pl = pl
	return nil
}

// keyID is ctx.key of a request's plugins: the first 16 hex digits of its
// key's hash, enough to tell an account's keys apart and nothing a caller
// could authenticate with.
func keyID(hash string) string {
	if len(hash) > 16 {
		return hash[:16]
	}
	return hash
}

// checkFusionTools checks the tools option of the plugins that declare
// manifest.RoleServerTools (fusion's panel tools) against the server tools
// installed for the account (tools.CheckList): a 400 naming
// plugins[i].tools[j] now, rather than every panel member failing on it.
func (r *Request) checkFusionTools() *apierr.Error {
	var aerr *apierr.Error
	r.Plugins.ForEach(func(i, p gjson.Result) bool {
		if r.core.Modules.HasRole(r.Key.AccountID, p.Get("id").Str, manifest.RoleServerTools) {
			if t := p.Get("tools"); t.IsArray() {
				aerr = tools.CheckList(r.core.Modules, r.Key.AccountID, "plugins["+strconv.Itoa(int(i.Int()))+"].tools", t)
			}
		}
		return aerr == nil
	})
	return aerr
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
// upper bound of the prompt's tokens (its bytes), and of the router's
// estimate. Near the limit the prompt is counted exactly (natively, as
// the plugin would count it through count_tokens: about 0.1 ms for 10 KB),
// so the default plugin (a Wasm call) runs only for a request it may
// change: a 10 KB prompt is about 2,500 tokens, which an 8K context holds
// though its bytes do not (issue 29).
func mayNotFit(req *Request, ctx, maxOutput, maxMessages int) bool {
	if maxMessages > 0 && req.Messages > maxMessages {
		return true
	}
	out := max(req.MaxOutput, 0)
	if maxOutput > 0 && out > maxOutput {
		out = maxOutput
	}
	if int(req.PromptBound)+out <= ctx {
		return false
	}
	if req.Images > 0 || int(req.PromptBound) > exactCountBelow*ctx {
		// Far over by its bytes (prose is about four bytes a token): the
		// plugin runs, and counts it once.
		return true
	}
	n, images, err := tokenize.CountChatPrompt(req.Model(), req.Body)
	return err != nil || images > 0 || int(n)+out > ctx
}

// exactCountBelow is how many times the context a prompt's byte bound may
// be and still be counted before deciding: up to it, most prompts fit.
const exactCountBelow = 6
