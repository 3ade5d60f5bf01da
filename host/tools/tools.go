// Package tools binds a request's server tools ({"type": "service:…"} in
// tools) to the Wasm modules that implement them, shows them to the model
// as function tools with the module's schema, and runs the model's calls
// through each module's tool_call hook. The agent loop that decides when to
// call the model again lives with the request path (host/server); this
// package knows nothing of turns or billing beyond the cost a call reports.
package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/abi/manifest"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/jsonstr"
	"github.com/switchyard/switchyard/host/jsonwalk"
	"github.com/switchyard/switchyard/host/modules"
	"github.com/switchyard/switchyard/host/validate"
	"github.com/switchyard/switchyard/host/wasm"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// ModuleName is the module that implements server tool type typ for a
// request of account: the one whose manifest declares it
// (modules.Registry.ToolModule), else the name the convention gives it
// (service:<x_y> is module "x-y"), for the message saying it is missing.
func ModuleName(reg *modules.Registry, account, typ string) string {
	if m := reg.ToolModule(account, typ); m != "" {
		return m
	}
	return strings.ReplaceAll(strings.TrimPrefix(typ, manifest.ToolTypePrefix), "_", "-")
}

// Limits of one call.
const (
	// CallTimeout bounds one tool call (the module's own limits.timeout_ms
	// bounds each hook call too); the request's deadline bounds all.
	CallTimeout = 30 * time.Second
	// MaxResult is the largest result handed to the model; a larger one
	// is refused as a failed call (the model sees why).
	MaxResult = 256 << 10
	// Parallel is how many calls of one turn run at once.
	Parallel = 4
)

// Tool is one server tool offered by a request, pinned to the module
// version that was active when the request started.
type Tool struct {
	Type string // service:…
	Name string // the function name the model sees
	decl *manifest.Tool
	// params is the request's "parameters" for the tool ({} when none);
	// config is the request's plugins[] item for the module ({} when
	// none): both reach the module in ctx.
	params, config string
	// settings are the operator's module_settings of a global module
	// (nil for an account's module): ctx.settings.
	settings []byte
	mod      *wasm.Module
	release  func()
	made     int // calls of this tool run so far in the request (RunAll)
}

// Set is the server tools of one request. Release it when the request ends.
type Set struct {
	Tools  []*Tool
	byName map[string]*Tool
	// choice is the server tool tool_choice names, if any.
	choice *Tool
}

// Resolve binds the server tools of a chat body to their modules: the
// account's own module first, then the gateway's. A type no active module
// declares is a 400 naming the tools entry. It returns nil when the body
// has no server tools.
func Resolve(reg *modules.Registry, account string, body []byte) (*Set, *apierr.Error) {
	s := &Set{byName: map[string]*Tool{}}
	fnNames := map[string]bool{}
	var err *apierr.Error
	gjson.GetBytes(body, "tools").ForEach(func(i, t gjson.Result) bool {
		typ, server := validate.CanonicalServerTool(t.Get("type").Str) // openrouter:… is ours
		if !server {
			fnNames[t.Get(typ+".name").Str] = true
			return true
		}
		at := fmt.Sprintf("tools[%d].type", i.Int())
		if s.byType(typ) != nil {
			err = apierr.BadRequest(at, "server tool %q is listed twice", typ)
			return false
		}
		mod, release, global := acquire(reg, account, ModuleName(reg, account, typ))
		var decl *manifest.Tool
		if mod != nil && mod.Manifest.Has(abi.HookToolCall) {
			decl = mod.Manifest.Tool(typ)
		}
		if decl == nil {
			release()
			err = apierr.BadRequest(at, "server tool %q is not installed on this gateway: no active module %q declares it", typ, ModuleName(reg, account, typ))
			return false
		}
		params := t.Get("parameters").Raw
		if !strings.HasPrefix(params, "{") {
			params = "{}"
		}
		tl := &Tool{Type: typ, Name: decl.Name, decl: decl, params: params, config: pluginConfig(body, mod.Manifest.Name), mod: mod, release: release}
		if global {
			tl.settings = reg.Settings(mod.Manifest.Name) // the operator's, never an account module's
		}
		s.Tools = append(s.Tools, tl)
		s.byName[tl.Name] = tl
		return true
	})
	if err == nil {
		for _, tl := range s.Tools {
			if fnNames[tl.Name] {
				err = apierr.BadRequest("tools", "server tool %q is shown to the model as function %q, which is also the name of one of the request's function tools; rename the function tool", tl.Type, tl.Name)
				break
			}
		}
	}
	if err == nil {
		if c := gjson.GetBytes(body, "tool_choice.type").Str; c != "" {
			c, _ = validate.CanonicalServerTool(c)
			s.choice = s.byType(choiceAlias(c))
		}
	}
	if err != nil {
		s.Release()
		return nil, err
	}
	if len(s.Tools) == 0 {
		return nil, nil
	}
	return s, nil
}

// CheckList checks a list of server tools a request names outside its
// tools (the fusion plugin's tools option, at path at): each entry's type
// is a server tool an active module declares for the account, listed
// once. Each panel member's sub-request would otherwise fail on it with a
// 400 of its own, and the fusion with a 502 naming no field of the request.
func CheckList(reg *modules.Registry, account, at string, list gjson.Result) *apierr.Error {
	var err *apierr.Error
	seen := map[string]bool{}
	list.ForEach(func(i, t gjson.Result) bool {
		field := fmt.Sprintf("%s[%d].type", at, i.Int())
		typ, server := validate.CanonicalServerTool(t.Get("type").Str)
		switch {
		case !server:
			err = apierr.BadRequest(field, "%q is not a server tool: name one such as service:web_search or service:web_fetch", t.Get("type").Str)
		case seen[typ]:
			err = apierr.BadRequest(field, "server tool %q is listed twice", typ)
		case !declared(reg, account, typ):
			err = apierr.BadRequest(field, "server tool %q is not installed on this gateway: no active module %q declares it", typ, ModuleName(reg, account, typ))
		}
		seen[typ] = true
		return err == nil
	})
	return err
}

// declared reports whether an active module in the account's scope (or
// the gateway's) declares server tool typ with a tool_call hook.
func declared(reg *modules.Registry, account, typ string) bool {
	mod, release, _ := acquire(reg, account, ModuleName(reg, account, typ))
	defer release()
	return mod != nil && mod.Manifest.Has(abi.HookToolCall) && mod.Manifest.Tool(typ) != nil
}

func choiceAlias(c string) string {
	if c == "web_search" || c == "web_search_preview" {
		return "service:web_search"
	}
	return c
}

// acquire finds module name in the account's scope first, then globally
// (as the pipeline finds plugins); global says which.
func acquire(reg *modules.Registry, account, name string) (*wasm.Module, func(), bool) {
	if account != "" {
		if m, rel := reg.Acquire(modules.Scoped(account, name)); m != nil {
			return m, rel, false
		}
	}
	m, rel := reg.Acquire(name)
	return m, rel, true
}

// pluginConfig is the request's plugins[] item whose id is the module's
// name ({} when none): a tool module reads its options there as its plugin
// form does.
func pluginConfig(body []byte, id string) string {
	cfg := "{}"
	gjson.GetBytes(body, "plugins").ForEach(func(_, p gjson.Result) bool {
		if p.Get("id").Str == id {
			cfg = p.Raw
			return false
		}
		return true
	})
	return cfg
}

func (s *Set) byType(typ string) *Tool {
	typ, _ = validate.CanonicalServerTool(typ)
	for _, t := range s.Tools {
		if t.Type == typ {
			return t
		}
	}
	return nil
}

// Named returns the server tool the model calls by name, or nil (a client
// function tool).
func (s *Set) Named(name string) *Tool { return s.byName[name] }

// Release unpins the modules.
func (s *Set) Release() {
	if s == nil {
		return
	}
	for _, t := range s.Tools {
		t.release()
	}
	s.Tools = nil
}

// Turn says how a turn may use tools.
type Turn int

const (
	// First is the first turn: the request's tool_choice applies (a
	// server-tool choice becomes the named function).
	First Turn = iota
	// Next is a later turn: a forced choice is not forced again (the
	// model would call the tool forever); other choices stay.
	Next
	// Final is the last turn after a budget fired: no tool may be called,
	// so the answer ends in prose.
	Final
)

// Body is the chat body the model gets for a turn: server tools replaced by
// function tools with the module's name, description and schema, the
// tool_choice for the turn, and the loop's own fields removed.
func (s *Set) Body(body []byte, turn Turn) []byte {
	var arr []byte
	arr = append(arr, '[')
	n := 0
	gjson.GetBytes(body, "tools").ForEach(func(_, t gjson.Result) bool {
		if n > 0 {
			arr = append(arr, ',')
		}
		n++
		tl := s.byType(t.Get("type").Str)
		if tl == nil {
			arr = append(arr, t.Raw...)
			return true
		}
		arr = append(arr, `{"type":"function","function":{"name":`...)
		arr = jsonstr.Append(arr, tl.Name)
		arr = append(arr, `,"description":`...)
		arr = jsonstr.Append(arr, tl.decl.Description)
		arr = append(arr, `,"parameters":`...)
		arr = append(arr, tl.decl.Parameters...)
		arr = append(arr, `}}`...)
		return true
	})
	arr = append(arr, ']')
	out, _ := sjson.SetRawBytes(body, "tools", arr)
	out, _ = sjson.DeleteBytes(out, "max_tool_calls")
	out, _ = sjson.DeleteBytes(out, "stop_server_tools_when")
	switch {
	case turn == Final:
		out, _ = sjson.SetBytes(out, "tool_choice", "none")
	case s.choice != nil && turn == First:
		out, _ = sjson.SetRawBytes(out, "tool_choice", []byte(`{"type":"function","function":{"name":`+jsonstr.Quote(s.choice.Name)+`}}`))
	case turn == Next && isForced(gjson.GetBytes(out, "tool_choice")):
		out, _ = sjson.SetBytes(out, "tool_choice", "auto")
	}
	return out
}

// isForced reports a tool_choice that makes the model call a tool.
func isForced(c gjson.Result) bool {
	return c.Str == "required" || c.IsObject()
}

// Call is one tool call the model made.
type Call struct {
	ID, Name, Arguments string
	// Seq is how many calls of the same tool the request ran before this
	// one (ctx.calls: a module enforces its max_uses with it). RunAll sets
	// it.
	Seq int
}

// Env is what a tool call's ctx tells the module about the request.
type Env struct {
	RequestID, Account, Model string
}

// Outcome is one call's result, as the model and the client see it.
type Outcome struct {
	Call
	Type string // the server tool type
	// Result is the JSON text the model gets as the tool message.
	Result string
	Cost   billing.Nanos
	// Status is "completed" or "failed" (the model still gets a result:
	// what failed and why).
	Status   string
	Error    string
	Duration time.Duration
}

// MaxFee is the most one call of t costs by its manifest (max_fee), and
// whether the manifest says.
func (t *Tool) MaxFee() (billing.Nanos, bool) {
	if t.decl == nil || t.decl.MaxFee == nil {
		return 0, false
	}
	return billing.FromUSD(*t.decl.MaxFee), true
}

// Run runs one call of t. It never fails: a failure is a result the model
// can read ({"error": …}), so the loop goes on.
func (t *Tool) Run(ctx context.Context, env Env, c Call) Outcome {
	start := time.Now()
	o := Outcome{Call: c, Type: t.Type, Status: "completed"}
	defer func() { o.Duration = time.Since(start) }()
	fail := func(format string, args ...any) Outcome {
		o.Status, o.Error, o.Cost = "failed", fmt.Sprintf(format, args...), 0
		b, _ := json.Marshal(map[string]string{"error": o.Error})
		o.Result = string(b)
		o.Duration = time.Since(start)
		return o
	}
	args := strings.TrimSpace(c.Arguments)
	if args == "" {
		args = "{}"
	}
	if !jsonwalk.Valid(args) || !gjson.Parse(args).IsObject() {
		return fail("tool %s was called with arguments that are not a JSON object", t.Name)
	}
	if err := t.decl.CheckArguments([]byte(args)); err != nil {
		return fail("tool %s was called with arguments that do not match its parameters schema: %v", t.Name, err)
	}
	cctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	out, err := t.mod.Call(cctx, abi.HookToolCall, t.ctxJSON(env, c.Seq), []byte(t.Name), []byte(args))
	switch {
	case cctx.Err() == context.DeadlineExceeded && ctx.Err() == nil:
		return fail("tool %s did not answer within %s", t.Name, CallTimeout)
	case err != nil:
		return fail("tool %s failed: %s", t.Name, apierr.From(err).Message)
	}
	result := out.Field(0)
	switch {
	case len(result) > MaxResult:
		return fail("tool %s returned %d bytes, more than the %d a result may have", t.Name, len(result), MaxResult)
	case !jsonwalk.ValidBytes(result):
		return fail("tool %s returned a result that is not JSON", t.Name)
	}
	if c := strings.TrimSpace(string(out.Field(1))); c != "" {
		cost, perr := billing.ParseUSD(c)
		if perr != nil || cost < 0 {
			return fail("tool %s reported an invalid cost %q", t.Name, clip(c, 32))
		}
		o.Cost = cost
	}
	o.Result = string(result)
	if e := gjson.GetBytes(result, "error"); e.Exists() && e.Type != gjson.Null {
		// The module says the call failed (and may still have cost).
		o.Status, o.Error = "failed", clip(e.String(), 200)
	}
	return o
}

// ctxJSON is the tool_call hook's ctx: the request, the time of the call,
// the tool, how many calls of it ran before in the request, its parameters
// from the request, and the plugin's config.
func (t *Tool) ctxJSON(env Env, seq int) []byte {
	b := make([]byte, 0, 192+len(t.params)+len(t.config))
	b = append(b, `{"request_id":`...)
	b = jsonstr.Append(b, env.RequestID)
	b = append(b, `,"account":`...)
	b = jsonstr.Append(b, env.Account)
	b = append(b, `,"model":`...)
	b = jsonstr.Append(b, env.Model)
	// Modules have no wall clock of their own (wazero's is fixed, so
	// modules are deterministic): the host says when the call is made.
	b = append(b, `,"now":`...)
	b = jsonstr.Append(b, time.Now().UTC().Format(time.RFC3339Nano))
	b = append(b, `,"tool":{"type":`...)
	b = jsonstr.Append(b, t.Type)
	b = append(b, `,"name":`...)
	b = jsonstr.Append(b, t.Name)
	b = append(b, `},"calls":`...)
	b = strconv.AppendInt(b, int64(seq), 10)
	b = append(b, `,"parameters":`...)
	b = append(b, t.params...)
	b = append(b, `,"config":`...)
	b = append(b, t.config...)
	if len(t.settings) > 0 {
		b = append(b, `,"settings":`...)
		b = append(b, t.settings...)
	}
	return append(b, '}')
}

// RunAll runs a turn's calls, at most Parallel at once, and returns their
// outcomes in call order. Calls of tools s does not hold are not run here.
func (s *Set) RunAll(ctx context.Context, env Env, calls []Call) []Outcome {
	out := make([]Outcome, len(calls))
	sem := make(chan struct{}, Parallel)
	var wg sync.WaitGroup
	for i, c := range calls {
		t := s.Named(c.Name)
		// Numbered before any runs: parallel calls of one turn each know
		// their place (a module's max_uses holds within a turn too).
		c.Seq = t.made
		t.made++
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			out[i] = t.Run(ctx, env, c)
		}()
	}
	wg.Wait()
	return out
}

// Skipped is the outcome of a call the loop did not run (its budget was
// spent): the model still gets a result for it, as every call needs one.
func Skipped(t *Tool, c Call, why string) Outcome {
	b, _ := json.Marshal(map[string]string{"error": why})
	return Outcome{Call: c, Type: t.Type, Result: string(b), Status: "skipped", Error: why}
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
