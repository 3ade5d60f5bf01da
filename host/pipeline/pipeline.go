// Package pipeline runs request plugins around routing: pre_request hooks
// see and may edit the unified request, answer it or block it; post_response
// and post_chunk hooks see and may edit the result and each stream chunk.
// Which plugins run is decided per request: the gateway's and the account's
// default-on plugins, plus those the request's `plugins` array names, minus
// those it disables with "enabled": false (spec 2.3).
package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/abi/manifest"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/jsonstr"
	"github.com/switchyard/switchyard/host/jsonwalk"
	"github.com/switchyard/switchyard/host/modules"
	"github.com/switchyard/switchyard/host/telemetry"
	"github.com/switchyard/switchyard/host/usage"
	"github.com/switchyard/switchyard/host/validate"
	"github.com/switchyard/switchyard/host/wasm"
	"github.com/switchyard/switchyard/host/wire"
	"github.com/tidwall/gjson"
)

// Runner builds per-request pipelines from the module registry.
type Runner struct {
	Modules *modules.Registry
	schemas sync.Map // *wasm.Module → *jsonschema.Schema (nil: no schema)
}

// settings is the ctx "settings" of module mod (id) for a request of
// account that providers require it for: the operator's
// module_settings.<id>. A moderation plugin's (manifest.RoleModeration) may
// hold per-account and per-provider overrides
// ("accounts": {id: {…}}, "providers": {slug: {…}}), merged here key by
// key — the account's over the defaults, then the requiring provider's
// (a provider's condition wins over an account's preference) — so the
// module sees only what applies to this request.
func (r *Runner) settings(mod *wasm.Module, id, account string, providers []string) []byte {
	st := r.Modules.Settings(id)
	if !mod.Manifest.HasRole(manifest.RoleModeration) || len(st) == 0 || (!gjson.GetBytes(st, "accounts").Exists() && !gjson.GetBytes(st, "providers").Exists()) {
		return st
	}
	m := map[string]json.RawMessage{}
	if err := json.Unmarshal(st, &m); err != nil {
		return st
	}
	overlay := func(raw string) {
		var o map[string]json.RawMessage
		if json.Unmarshal([]byte(raw), &o) == nil {
			for k, v := range o {
				m[k] = v
			}
		}
	}
	accounts, provs := gjson.GetBytes(st, "accounts"), gjson.GetBytes(st, "providers")
	delete(m, "accounts")
	delete(m, "providers")
	if a := accounts.Get(gjson.Escape(account)); account != "" && a.IsObject() {
		overlay(a.Raw)
	}
	for _, p := range providers {
		if e := provs.Get(gjson.Escape(p)); e.IsObject() {
			overlay(e.Raw)
			break
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return st
	}
	return b
}

type stage struct {
	mod     *wasm.Module
	release func()
	name    string
	index   int    // position in the request's plugins array, -1 for a default
	ctx     []byte // the ctx field every hook of this stage gets
	// base is ctx without its closing brace, to append the state the
	// plugin returns (abi.ActionContinueState).
	base []byte
}

// setState makes state (a JSON value the plugin returned) ctx.state of the
// stage's later hooks in this request. Anything but valid JSON is ignored.
func (s *stage) setState(state []byte) {
	if len(state) == 0 || !jsonwalk.ValidBytes(state) {
		return
	}
	ctx := make([]byte, 0, len(s.base)+len(state)+10)
	ctx = append(ctx, s.base...)
	ctx = append(ctx, `,"state":`...)
	ctx = append(ctx, state...)
	s.ctx = append(ctx, '}')
}

// Pipeline is the plugins of one request, pinned to the versions that were
// active when it was built. Release it when the request ends.
type Pipeline struct {
	stages []*stage
	spent  atomic.Int64 // wall time of hook calls, ns
	// Stages are the service_metadata.pipeline entries, in order of running.
	Stages []map[string]any
	// Fees are what plugins said their work cost (a stage summary's
	// "cost", dollars as a decimal string: a paid search engine's fee),
	// charged with the request (docs/plugins.md, "Fees").
	Fees []Fee
	// held are pipelines folded into this one (Prepend), released with it.
	held []*Pipeline
}

// Time is the wall time the pipeline's hook calls took so far (recorded on
// the generation as plugin time).
func (p *Pipeline) Time() time.Duration {
	if p == nil {
		return 0
	}
	return time.Duration(p.spent.Load())
}

// call runs one hook of stage s and adds its wall time to the pipeline's.
func (p *Pipeline) call(ctx context.Context, s *stage, hook abi.Hook, field []byte) (*wasm.Output, error) {
	start := time.Now()
	ctx, done := telemetry.From(ctx).Plugin(ctx, s.name, hook.String())
	out, err := s.mod.Call(ctx, hook, s.ctx, field)
	done(err)
	p.spent.Add(int64(time.Since(start)))
	return out, err
}

// Empty reports whether no plugin runs.
func (p *Pipeline) Empty() bool { return p == nil || len(p.stages) == 0 }

// Release unpins the module versions.
func (p *Pipeline) Release() {
	if p == nil {
		return
	}
	for _, s := range p.stages {
		s.release()
	}
	p.stages = nil
	for _, q := range p.held {
		q.Release()
	}
	p.held = nil
}

// Prepend folds q, a pipeline that already ran before p was built (the
// router plugin's: docs/routing.md, "Router models"), into p: its stages
// and fees come first in p's, its hook time counts in p's, and releasing p
// releases it. Its hooks do not run again.
func (p *Pipeline) Prepend(q *Pipeline) {
	if q == nil {
		return
	}
	p.Stages = append(append([]map[string]any{}, q.Stages...), p.Stages...)
	p.Fees = append(append([]Fee{}, q.Fees...), p.Fees...)
	p.spent.Add(q.spent.Load())
	p.held = append(p.held, q)
}

// Build resolves the plugins for a request of account: defaults first (the
// gateway's, then the account's), then the request's list in its order.
func (r *Runner) Build(account, model string, plugins gjson.Result) (*Pipeline, *apierr.Error) {
	return r.BuildWith(account, model, plugins, Extra{})
}

// Extra is what the host adds to a request's pipeline beyond its plugins
// array and the configured defaults.
type Extra struct {
	// Context becomes ctx.context of every hook: a JSON object describing
	// the endpoints the request may be routed to (route.Window), or nil.
	Context []byte
	// Defaults are plugins the host turns on for this request, after the
	// configured defaults and the request's plugins
	// (context-compression for a small context), unless the request
	// disables them; one that is not installed is skipped.
	Defaults []string
	// ModeratedBy are the providers requiring moderation the request may
	// be routed to (their slugs): the moderation plugin runs whether or
	// not the request or the account lists it, last when they do not (so
	// it sees the request as it goes upstream). Its ctx names the
	// providers ("required_by"); without the plugin installed such a
	// request is refused (503) rather than sent unmoderated.
	ModeratedBy []string
	// Skip are plugins that already ran for this request in a pipeline of
	// their own (the router plugin, BuildOne): left out even when listed.
	Skip []string
	// Key identifies the request's API key (a prefix of its hash, never
	// the secret) as ctx.key, so a plugin can keep per-key state in its
	// per-account kv store (response-cache's scope "key").
	Key string
	// Embeddings builds the pipeline of an embeddings request: only the
	// plugins whose manifest declares manifest.CapabilityEmbeddings run
	// (the others, defaults or listed, are left out), with ctx.kind
	// "embeddings".
	Embeddings bool
	// Presets are plugins[] items (each with its "id") that the caller's
	// key or account turns on for each of its requests (the response
	// cache's per-key and per-account defaults, host/cachedefaults). Each
	// runs as if the request listed it, with the request's own item of the
	// same id merged over it member by member (the request's members win);
	// a request's "enabled": false turns it off, and so does a preset's own
	// (a key's {"enabled": false} over its account's default).
	Presets []string
}

// BuildWith is Build with the host's extras.
func (r *Runner) BuildWith(account, model string, plugins gjson.Result, extra Extra) (*Pipeline, *apierr.Error) {
	return r.build(account, model, plugins, extra, true, 0)
}

// build builds a pipeline: with defaults, the gateway's and the account's
// default-on plugins first; first is the position of plugins' first item
// in the request's plugins array (for error paths; -1: added by the host).
func (r *Runner) build(account, model string, plugins gjson.Result, extra Extra, defaults bool, first int) (*Pipeline, *apierr.Error) {
	b := builder{r: r, account: account, model: model, extra: extra,
		p:        &Pipeline{Stages: []map[string]any{}}, // [] not null in service_metadata
		disabled: map[string]bool{}}
	b.read(plugins, first)
	b.seen = map[string]bool{}
	for _, id := range extra.Skip {
		b.seen[id] = true
	}
	if err := b.addAll(defaults); err != nil {
		b.p.Release()
		return nil, err
	}
	return b.p, nil
}

// builder is one pipeline being built: what the request asks for and the
// stages added so far.
type builder struct {
	r              *Runner
	account, model string
	extra          Extra
	p              *Pipeline
	disabled       map[string]bool // turned off by the request ("enabled": false)
	listed         []listed        // the request's plugins, in its order
	seen           map[string]bool // added already, or skipped (Extra.Skip)
}

// listed is one plugin the request's plugins array turns on.
type listed struct {
	id    string
	index int    // its position in the request's plugins array
	item  string // its plugins[] entry, raw
}

// read sorts the request's plugins items into those it disables and those
// it lists; first is the first item's position in the request.
func (b *builder) read(plugins gjson.Result, first int) {
	i := first
	plugins.ForEach(func(_, item gjson.Result) bool {
		id := item.Get("id").Str
		if e := item.Get("enabled"); e.Exists() && !e.Bool() {
			b.disabled[id] = true
		} else {
			b.listed = append(b.listed, listed{id: id, index: i, item: item.Raw})
		}
		i++
		return true
	})
}

// addAll adds the stages in the order they run: the configured defaults
// (with defaults), the request's list, the host's defaults for this
// request, and the moderation a provider requires.
func (b *builder) addAll(defaults bool) *apierr.Error {
	var configured []string
	if defaults {
		configured = b.r.Modules.Defaults(b.account)
	}
	presets := b.presets()
	for i, w := range b.listed {
		if p, ok := presets[w.id]; ok {
			b.listed[i].item = overlay(p, w.item)
			delete(presets, w.id) // runs where the request listed it
		}
	}
	for _, id := range configured {
		if b.disabled[id] {
			continue
		}
		item := presets[id]
		for _, w := range b.listed {
			if w.id == id {
				item = w.item
			}
		}
		if err := b.add(id, -1, item); err != nil {
			return err
		}
	}
	for _, id := range b.extra.Presets {
		id := gjson.Get(id, "id").Str
		if p, ok := presets[id]; ok {
			if err := b.add(id, presetIndex, p); err != nil {
				return err
			}
		}
	}
	for _, w := range b.listed {
		if err := b.add(w.id, w.index, w.item); err != nil {
			return err
		}
	}
	// The host's own defaults for this request run after every plugin the
	// request or the account asked for: context-compression must fit the
	// prompt as it will go upstream, after file-parser has turned a PDF
	// into text or web has injected results (a request listing it runs it
	// where it listed it).
	for _, id := range b.extra.Defaults {
		if b.disabled[id] {
			continue
		}
		if err := b.add(id, -1, ""); err != nil {
			return err
		}
	}
	if len(b.extra.ModeratedBy) > 0 {
		// The gateway's moderation plugin: a provider's condition is
		// the operator's, so an account's module never stands in for it.
		if err := b.add(b.r.Modules.RolePlugin("", manifest.RoleModeration), requiredIndex, ""); err != nil {
			return err
		}
	}
	b.cacheLast()
	return nil
}

// presets are the request's Extra.Presets by id, less those the request
// or the preset itself turns off.
func (b *builder) presets() map[string]string {
	out := map[string]string{}
	for _, p := range b.extra.Presets {
		id := gjson.Get(p, "id").Str
		if e := gjson.Get(p, "enabled"); id == "" || b.disabled[id] || (e.Exists() && !e.Bool()) {
			continue
		}
		out[id] = p
	}
	return out
}

// overlay is the object preset with the members of item over it: a
// request's plugins[] item over its key's or account's preset.
func overlay(preset, item string) string {
	m := map[string]json.RawMessage{}
	if json.Unmarshal([]byte(preset), &m) != nil {
		return item
	}
	var o map[string]json.RawMessage
	if json.Unmarshal([]byte(item), &o) != nil {
		return item // the schema check reports it
	}
	for k, v := range o {
		m[k] = v
	}
	out, err := json.Marshal(m)
	if err != nil {
		return item
	}
	return string(out)
}

// cacheLast moves the response cache's stage (manifest.RoleCache) to the end of the pipeline,
// wherever it was listed: its pre_request answers a hit without running
// the stages after it, so every other plugin (moderation above all) must
// have run first; and its key must be of the request as it goes upstream,
// after the plugins that rewrite it. Its post_response then stores the
// answer as the other plugins left it (response-healing's repair).
func (b *builder) cacheLast() {
	st := b.p.stages
	for i, s := range st {
		if s.mod.Manifest.HasRole(manifest.RoleCache) && i < len(st)-1 {
			copy(st[i:], st[i+1:])
			st[len(st)-1] = s
			return
		}
	}
}

// add pins plugin id and appends its stage, once per pipeline; index is
// its position in the request's plugins (-1: a default, requiredIndex:
// required by a provider), item its plugins[] entry ("" when none).
func (b *builder) add(id string, index int, item string) *apierr.Error {
	if index == requiredIndex {
		return b.addRequired(id)
	}
	if b.seen[id] {
		return nil
	}
	mod, release, scoped := b.r.acquire(b.account, id)
	if mod == nil {
		if index < 0 {
			return nil // a default that was deactivated since
		}
		return apierr.BadRequest(fmt.Sprintf("plugins[%d].id", index), "unknown plugin %q: no such plugin is installed for this account", id)
	}
	if mod.Manifest.Kind != manifest.KindPlugin {
		release()
		return apierr.BadRequest(fmt.Sprintf("plugins[%d].id", index), "%q is not a plugin", id)
	}
	if b.extra.Embeddings && !mod.Manifest.HasCapability(manifest.CapabilityEmbeddings) {
		release()
		return nil // a chat plugin: it does not run on embeddings
	}
	if err := b.r.checkConfig(mod, index, id, item); err != nil {
		release()
		if index == presetIndex {
			// Checked when it was set; the module changed since.
			err.Message = "the default options of plugin " + id + " set for this key or account no longer fit its config_schema (" + err.Message + "); set them again (docs/response-cache.md)"
		}
		return err
	}
	b.seen[id] = true
	b.stage(mod, release, id, index, item, scoped)
	return nil
}

// addRequired adds the gateway's moderation plugin id ("" when none is
// installed) that a provider requires, unless it runs already: listed, or
// a default. An account's module of the same name is not it.
func (b *builder) addRequired(id string) *apierr.Error {
	var mod *wasm.Module
	release := func() {}
	if id != "" {
		mod, release = b.r.Modules.Acquire(id)
	}
	if mod == nil || mod.Manifest.Kind != manifest.KindPlugin {
		release()
		return &apierr.Error{Status: http.StatusServiceUnavailable, Message: fmt.Sprintf("provider %s requires moderation, and no moderation plugin is installed", strings.Join(b.extra.ModeratedBy, ", "))}
	}
	for _, s := range b.p.stages {
		if s.mod == mod {
			release()
			return nil
		}
	}
	b.seen[id] = true
	b.stage(mod, release, id, requiredIndex, "", "global")
	return nil
}

// stage appends the stage of pinned module mod.
func (b *builder) stage(mod *wasm.Module, release func(), id string, index int, item, scoped string) {
	base := b.ctx(mod, id, index, item, scoped)
	ctx := []byte(base + `}`)
	b.p.stages = append(b.p.stages, &stage{mod: mod, release: release, name: id, index: index, ctx: ctx, base: []byte(base)})
}

// ctx is the ctx field of plugin id's hooks without its closing brace
// (stage.base): its config, the model, its scope, and what the host adds.
func (b *builder) ctx(mod *wasm.Module, id string, index int, item, scoped string) string {
	if item == "" {
		item = `{"id":` + jsonstr.Quote(id) + `}`
	}
	base := `{"config":` + item + `,"model":` + jsonstr.Quote(b.model) + `,"scope":` + jsonstr.Quote(scoped)
	var required []string
	if index == requiredIndex || (len(b.extra.ModeratedBy) > 0 && scoped == "global" && mod.Manifest.HasRole(manifest.RoleModeration)) {
		required = b.extra.ModeratedBy
	}
	// The operator's settings of a global module (a first-party
	// module's endpoints, defaults and fees), never handed to a
	// tenant's module of the same name.
	if st := b.r.settings(mod, id, b.account, required); len(st) > 0 && scoped == "global" {
		base += `,"settings":` + string(st)
	}
	if index == -1 {
		base += `,"default":true`
	}
	if b.extra.Embeddings {
		base += `,"kind":"embeddings"`
	}
	if len(required) > 0 {
		bs, _ := json.Marshal(required)
		base += `,"required_by":` + string(bs)
	}
	if len(b.extra.Context) > 0 {
		base += `,"context":` + string(b.extra.Context)
	}
	if b.extra.Key != "" {
		base += `,"key":` + jsonstr.Quote(b.extra.Key)
	}
	return base
}

// Role is the name of the pipeline's first stage whose plugin declares
// role (manifest.Roles), "" when none does.
func (p *Pipeline) Role(role string) string {
	if p == nil {
		return ""
	}
	for _, s := range p.stages {
		if s.mod.Manifest.HasRole(role) {
			return s.name
		}
	}
	for _, h := range p.held {
		if n := h.Role(role); n != "" {
			return n
		}
	}
	return ""
}

// Installed reports whether plugin id is installed for account (its own
// or a global module).
func (r *Runner) Installed(account, id string) bool {
	mod, release, _ := r.acquire(account, id)
	if mod == nil {
		return false
	}
	release()
	return mod.Manifest.Kind == manifest.KindPlugin
}

// BuildOne is a pipeline of plugin id alone, for a request of account:
// item is its plugins[] entry ("" when the host adds it), index its
// position there (-1 when the host adds it), ctx its ctx.context. Unlike
// Build it adds no defaults, and a plugin that is not installed is
// reported (installed false), not an error: the caller knows why it wanted
// it and says so.
func (r *Runner) BuildOne(account, model, id, item string, index int, ctx []byte) (p *Pipeline, installed bool, aerr *apierr.Error) {
	mod, release, _ := r.acquire(account, id)
	if mod == nil {
		return nil, false, nil
	}
	release()
	if item != "" {
		// Build checks the item against the module's config_schema and
		// pins the module; the one plugin listed is all it adds here.
		p, aerr = r.buildList(account, model, `[`+item+`]`, index, ctx)
	} else {
		p, aerr = r.buildList(account, model, `[{"id":`+jsonstr.Quote(id)+`}]`, index, ctx)
	}
	return p, true, aerr
}

// buildList builds a pipeline of exactly the plugins of list (no
// defaults); index is the first one's position in the request's plugins.
func (r *Runner) buildList(account, model, list string, index int, ctx []byte) (*Pipeline, *apierr.Error) {
	return r.build(account, model, gjson.Parse(list), Extra{Context: ctx}, false, index)
}

// requiredIndex marks a stage a provider requires (not a default, not listed).
const requiredIndex = -2

// presetIndex marks a stage the caller's key or account turns on
// (Extra.Presets): not the gateway's default-on (ctx.default), not listed.
const presetIndex = -3

// acquire finds plugin id in the account's scope first, then globally. An
// id is a plugin's name, never a scope path: the registry keys account
// modules as "<account>/<name>", so a global lookup of "acct_x/name" would
// run another account's plugin for this request.
func (r *Runner) acquire(account, id string) (*wasm.Module, func(), string) {
	if strings.Contains(id, "/") {
		return nil, func() {}, ""
	}
	if account != "" {
		if m, rel := r.Modules.Acquire(modules.Scoped(account, id)); m != nil {
			return m, rel, "account"
		}
	}
	m, rel := r.Modules.Acquire(id)
	return m, rel, "global"
}

// checkConfig validates a plugins[] item against the manifest's
// config_schema, so a bad option is a 400 naming the plugin and the field
// (validate.PluginOption words it).
func (r *Runner) checkConfig(mod *wasm.Module, index int, id, item string) *apierr.Error {
	if item == "" || len(mod.Manifest.ConfigSchema) == 0 {
		return nil
	}
	sch, err := r.schema(mod)
	if err != nil {
		return &apierr.Error{Status: http.StatusBadGateway, Message: "plugin " + id + " has an invalid config_schema: " + err.Error()}
	}
	return validate.PluginOption(index, id, sch, item)
}

func (r *Runner) schema(mod *wasm.Module) (*jsonschema.Schema, error) {
	if s, ok := r.schemas.Load(mod); ok {
		return s.(*jsonschema.Schema), nil
	}
	s, err := validate.CompilePluginSchema(mod.Manifest.ConfigSchema)
	if err != nil {
		return nil, err
	}
	r.schemas.Store(mod, s)
	return s, nil
}

// Schemas finds the config_schema of the plugin a request of account
// runs under an id (the account's own module first, then the gateway's),
// for validate.PluginOptions; nil when it has none, is not installed or
// does not compile (the pipeline reports those when it builds).
func (r *Runner) Schemas(account string) validate.PluginSchemas {
	return func(id string) *jsonschema.Schema {
		mod, release, _ := r.acquire(account, id)
		if mod == nil {
			return nil
		}
		defer release()
		if mod.Manifest.Kind != manifest.KindPlugin || len(mod.Manifest.ConfigSchema) == 0 {
			return nil
		}
		sch, err := r.schema(mod)
		if err != nil {
			return nil
		}
		return sch
	}
}

// Unsupported are the options of plugin id, as a request of account runs
// it, that its config_schema marks x-unsupported
// (validate.UnsupportedOptions).
func (r *Runner) Unsupported(account, id string) []string {
	mod, release, _ := r.acquire(account, id)
	if mod == nil {
		return nil
	}
	defer release()
	return validate.UnsupportedOptions(mod.Manifest.ConfigSchema)
}

// Result of a pre_request run.
type Result struct {
	Body    []byte // the request after the plugins (same slice when unchanged)
	Respond []byte // non-nil: answer with this chat result, no upstream call
}

// Pre runs the pre_request hooks in order.
func (p *Pipeline) Pre(ctx context.Context, body []byte) (Result, *apierr.Error) {
	res := Result{Body: body}
	for _, s := range p.stages {
		if !s.mod.Manifest.Has(abi.HookPreRequest) {
			continue
		}
		out, err := p.call(ctx, s, abi.HookPreRequest, res.Body)
		if err != nil {
			return res, apierr.From(err)
		}
		action, b := string(out.Field(0)), out.Field(1)
		if aerr := p.record(s, "pre_request", action, out.Field(2)); aerr != nil {
			return res, aerr
		}
		switch action {
		case abi.ActionContinue:
			if len(b) > 0 {
				if !jsonwalk.ValidBytes(b) || !gjson.ParseBytes(b).IsObject() {
					return res, s.fail("pre_request", "returned a request that is not a JSON object")
				}
				res.Body = validUTF8(b)
			}
			s.setState(out.Field(3))
		case abi.ActionRespond:
			if !jsonwalk.ValidBytes(b) || !gjson.GetBytes(b, "choices").IsArray() {
				return res, s.fail("pre_request", "responded with something that is not a chat result")
			}
			answer, aerr := s.result("pre_request", b)
			if aerr != nil {
				return res, aerr
			}
			res.Respond = answer
			return res, nil
		case abi.ActionBlock:
			return res, s.block(b, p.Stages)
		default:
			return res, s.fail("pre_request", fmt.Sprintf("returned unknown action %q", action))
		}
	}
	return res, nil
}

// Post runs the post_response hooks on a complete result.
func (p *Pipeline) Post(ctx context.Context, result []byte) ([]byte, *apierr.Error) {
	for _, s := range p.stages {
		if !s.mod.Manifest.Has(abi.HookPostResponse) {
			continue
		}
		out, err := p.call(ctx, s, abi.HookPostResponse, result)
		if err != nil {
			return nil, apierr.From(err)
		}
		action, b := string(out.Field(0)), out.Field(1)
		if aerr := p.record(s, "post_response", action, out.Field(2)); aerr != nil {
			return nil, aerr
		}
		switch action {
		case abi.ActionContinue:
			if len(b) > 0 {
				if !jsonwalk.ValidBytes(b) {
					return nil, s.fail("post_response", "returned a result that is not JSON")
				}
				var aerr *apierr.Error
				if result, aerr = s.result("post_response", b); aerr != nil {
					return nil, aerr
				}
			}
		case abi.ActionBlock:
			return nil, s.block(b, p.Stages)
		default:
			return nil, s.fail("post_response", fmt.Sprintf("returned unknown action %q", action))
		}
	}
	return result, nil
}

// HasChunkHooks reports whether any stage edits stream chunks.
func (p *Pipeline) HasChunkHooks() bool {
	for _, s := range p.stages {
		if s.mod.Manifest.Has(abi.HookPostChunk) {
			return true
		}
	}
	return false
}

// Chunk runs the post_chunk hooks on one chunk; each may turn it into zero
// or more chunks.
func (p *Pipeline) Chunk(ctx context.Context, chunk []byte) ([][]byte, *apierr.Error) {
	chunks := [][]byte{chunk}
	for _, s := range p.stages {
		if !s.mod.Manifest.Has(abi.HookPostChunk) {
			continue
		}
		var next [][]byte
		for _, c := range chunks {
			out, err := p.call(ctx, s, abi.HookPostChunk, c)
			if err != nil {
				return nil, apierr.From(err)
			}
			var made [][]byte // the chunks the hook made of c
			switch string(out.Field(0)) {
			case abi.ActionContinue:
				made = out.Fields[1:]
			case abi.ActionContinueState:
				s.setState(out.Field(1))
				if len(out.Fields) > 2 {
					made = out.Fields[2:]
				}
			case abi.ActionBlock:
				return nil, s.block(out.Field(1), p.Stages)
			default:
				return nil, s.fail("post_chunk", fmt.Sprintf("returned unknown action %q", out.Field(0)))
			}
			for _, ch := range made {
				ch, aerr := s.chunk(ch)
				if aerr != nil {
					return nil, aerr
				}
				next = append(next, ch)
			}
		}
		chunks = next
	}
	return chunks, nil
}

// record adds a service_metadata.pipeline entry. A plugin may describe
// itself with a summary object ({"type","summary","data",…}); the host sets
// name and hook. A summary out of shape (checkSummary) is the plugin's
// fault: a 502 naming it.
func (p *Pipeline) record(s *stage, hook, action string, summary []byte) *apierr.Error {
	if aerr := s.checkSummary(hook, summary); aerr != nil {
		return aerr
	}
	e := map[string]any{}
	if len(summary) > 0 {
		_ = json.Unmarshal(summary, &e) // invalid UTF-8 becomes U+FFFD
	}
	if e == nil {
		e = map[string]any{}
	}
	if _, ok := e["type"]; !ok {
		e["type"] = "plugin"
	}
	e["name"] = s.name
	e["hook"] = hook
	e["action"] = action
	e["module"] = s.mod.ID
	if e["type"] == "guardrail" {
		guardrailStage(e, s.name, hook)
	}
	if c, ok := e["cost"].(string); ok && c != "" {
		p.Fees = append(p.Fees, Fee{Plugin: s.name, Cost: c, Max: s.mod.Manifest.MaxFee})
	}
	p.Stages = append(p.Stages, e)
	return nil
}

// checkSummary holds a stage summary to its contract (docs/plugins.md):
// absent, null or a JSON object whose type and summary are strings, and
// whose cost, if any, is a non-negative dollar amount as a decimal string.
func (s *stage) checkSummary(hook string, summary []byte) *apierr.Error {
	if len(summary) == 0 || string(summary) == "null" {
		return nil
	}
	if !jsonwalk.ValidBytes(summary) || !gjson.ParseBytes(summary).IsObject() {
		return s.fail(hook, "returned a stage summary that is not a JSON object")
	}
	var f [3]gjson.Result
	members(gjson.ParseBytes(summary), summaryNames[:], f[:])
	for i, name := range summaryNames[:2] {
		if v := f[i]; v.Exists() && v.Type != gjson.String {
			return s.fail(hook, fmt.Sprintf("returned a stage summary whose %s is not a string (%s)", name, clip(v.Raw)))
		}
	}
	if c := f[2]; c.Exists() && !(c.Type == gjson.String && c.Str == "") {
		if n, err := billing.ParseUSD(c.Str); c.Type != gjson.String || err != nil || n < 0 {
			return s.fail(hook, fmt.Sprintf("reported an invalid cost %s: a fee is a non-negative dollar amount as a decimal string, such as \"0.005\"", clip(c.Raw)))
		}
	}
	return nil
}

// summaryNames are the stage summary members checkSummary reads.
var summaryNames = [...]string{"type", "summary", "cost"}

// members sets out[i] to obj's first member named names[i], in one pass.
func members(obj gjson.Result, names []string, out []gjson.Result) {
	obj.ForEach(func(k, v gjson.Result) bool {
		for i, n := range names {
			if k.Str == n && !out[i].Exists() {
				out[i] = v
			}
		}
		return true
	})
}

// result holds a chat result a plugin produced (pre_request respond,
// post_response continue) to what upstream answers are held to
// (wire.RepairCompletion): bytes that are not UTF-8 become U+FFFD, and a
// field of the wrong type, or a result that is not a completion, is the
// plugin's fault — a 502 naming it and the field — where an upstream's
// would be repaired.
func (s *stage) result(hook string, b []byte) ([]byte, *apierr.Error) {
	out, fixes, ok := wire.RepairCompletion(validUTF8(b))
	if !ok || len(fixes) > 0 {
		return nil, s.fail(hook, "returned a chat result out of shape ("+shape(fixes)+")")
	}
	return out, nil
}

// chunk is result for a chunk a post_chunk hook produced. One that is not
// a chunk at all is left for the stream's writer to drop (docs/plugins.md:
// logged, and the stream goes on).
func (s *stage) chunk(ch []byte) ([]byte, *apierr.Error) {
	ch = validUTF8(ch)
	if !wire.IsChunk(ch) {
		return ch, nil
	}
	out, fixes, ok := wire.RepairChunk(ch)
	if !ok || len(fixes) > 0 {
		return nil, s.fail("post_chunk", "returned a chunk out of shape ("+shape(fixes)+")")
	}
	return out, nil
}

// validUTF8 is b with each run of bytes that are not valid UTF-8 replaced
// by one U+FFFD, as wire's repair of upstream answers does (b itself when
// it is valid, the common case).
func validUTF8(b []byte) []byte {
	if utf8.Valid(b) {
		return b
	}
	return bytes.ToValidUTF8(b, []byte("\uFFFD"))
}

// shape words repair's findings for a plugin's error: what was wrong,
// without what repair would have done about it.
func shape(fixes []string) string {
	out := make([]string, 0, len(fixes))
	for _, f := range fixes {
		what, _, _ := strings.Cut(f, ": ")
		out = append(out, what)
	}
	return strings.Join(out, "; ")
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// Fee is one plugin's charge for its work in a request.
type Fee struct {
	Plugin string
	Cost   string // dollars, as the plugin wrote it
	// Max is the plugin's manifest max_fee (nil: unset), the most the
	// host charges it in a request (FeeCeiling).
	Max *float64
}

// FeeCeiling is the most a plugin whose manifest max_fee is maxFee
// charges in one request: max_fee when that is lower than ceiling (the
// operator's limits.max_tool_fee_per_call), else ceiling.
func FeeCeiling(maxFee *float64, ceiling billing.Nanos) billing.Nanos {
	if maxFee != nil {
		if n := billing.FromUSD(*maxFee); n < ceiling {
			return max(n, 0)
		}
	}
	return ceiling
}

// FeeBound is the most p's own stages may charge in fees
// (docs/plugins.md, "Fees"): the FeeCeiling of each stage with a hook
// that reports a cost and will run — pre_request, or post_response when
// post (a stream runs none). A router's stage folded in by Prepend ran
// already and is not counted. The host holds it before the pipeline
// runs, so a fee is always inside the request's hold.
func (p *Pipeline) FeeBound(ceiling billing.Nanos, post bool) billing.Nanos {
	if p == nil {
		return 0
	}
	var total billing.Nanos
	for _, s := range p.stages {
		m := s.mod.Manifest
		if m.Has(abi.HookPreRequest) || post && m.Has(abi.HookPostResponse) {
			total = usage.AddSat(total, FeeCeiling(m.MaxFee, ceiling))
		}
	}
	return total
}

// SubCostBound is the most p's own stages' chat sub-requests (chat,
// chat_batch) may cost without a reservation of their own: for each
// stage granted chat, FeeCeiling of its manifest's
// max_sub_cost under ceiling (limits.max_sub_request_cost). The host holds
// it before the stages run (the request's allowance for sub-requests), so
// no sub-request is charged for a request that could not pay for it. An
// embed sub-request (a few hundred-thousandths of a dollar, the response
// cache's) is not counted: it is held from the account when made, so a
// cache hit does not need the money of a miss's chat calls.
func (p *Pipeline) SubCostBound(ceiling billing.Nanos) billing.Nanos {
	if p == nil {
		return 0
	}
	var total billing.Nanos
	for _, s := range p.stages {
		m := s.mod.Manifest
		if slices.Contains(m.Grants.HostFunctions, abi.GrantChat) {
			total = usage.AddSat(total, FeeCeiling(m.MaxSubCost, ceiling))
		}
	}
	return total
}

// guardrailStage completes a guardrail stage with the fields spec 2.2 shows
// on one (guardrail_id, guardrail_scope, data.engines) where the plugin did
// not give them: the plugin is the guardrail and its only engine, and its
// scope is what it inspected, the request or the response.
func guardrailStage(e map[string]any, name, hook string) {
	if _, ok := e["guardrail_id"]; !ok {
		e["guardrail_id"] = name
	}
	if _, ok := e["guardrail_scope"]; !ok {
		scope := "response"
		if hook == "pre_request" {
			scope = "request"
		}
		e["guardrail_scope"] = scope
	}
	data, ok := e["data"].(map[string]any)
	if !ok {
		data = map[string]any{}
		e["data"] = data
	}
	if _, ok := data["engines"]; !ok {
		data["engines"] = []any{name}
	}
}

func (s *stage) fail(hook, msg string) *apierr.Error {
	return &apierr.Error{Status: http.StatusBadGateway, Message: fmt.Sprintf("plugin %s (%s) %s in %s", s.name, s.mod.ID, msg, hook)}
}

// block turns a plugin's block body into the error the caller gets: 403
// unless the plugin chose another 4xx or 5xx status, with its metadata (e.g. the patterns
// a guardrail matched).
func (s *stage) block(b []byte, stages []map[string]any) *apierr.Error {
	e := &apierr.Error{Status: http.StatusForbidden, Message: "request blocked by plugin " + s.name}
	if jsonwalk.ValidBytes(b) {
		// A 4xx refuses the request; a 5xx says the plugin's own work
		// failed upstream (a fusion whose every panel member failed).
		if c := int(gjson.GetBytes(b, "code").Int()); c >= 400 && c < 600 {
			e.Status = c
		}
		if m := gjson.GetBytes(b, "message").Str; m != "" {
			e.Message = m
		}
		if md := gjson.GetBytes(b, "metadata"); md.IsObject() {
			_ = json.Unmarshal([]byte(md.Raw), &e.Metadata)
		}
	}
	if e.Metadata == nil {
		e.Metadata = map[string]any{}
	}
	e.Metadata["plugin"] = s.name
	return e
}
