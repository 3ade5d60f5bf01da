package modules

import (
	"slices"

	"github.com/switchyard/switchyard/abi"
	"sort"
	"strings"

	"github.com/switchyard/switchyard/abi/manifest"
	"github.com/switchyard/switchyard/host/wasm"
)

// RouterRole is a router an active plugin declares in its manifest
// (manifest.Router): the host knows routers by their manifests, not by
// name, so a router an account publishes works for its keys like a
// first-party one.
type RouterRole struct {
	manifest.Router
	// Plugin is the plugin id a request lists (the module's name).
	Plugin string
}

// routerIndex is the router roles of one set of active modules, built
// when first asked for after a swap.
type routerIndex struct {
	from    *map[string]*wasm.Module
	byScope map[string][]RouterRole // "" is the gateway-wide scope
	names   map[string]bool         // every active scoped name
	// roles: scope → plugin role (manifest.Roles) → the plugin's name;
	// of two plugins of one scope declaring a role, the first by name.
	roles map[string]map[string]string
	// tools: scope → server tool type → the module declaring it
	// (manifest.Tools, with a tool_call hook); the first by name.
	tools map[string]map[string]string
}

func (r *Registry) routerIndex() *routerIndex {
	act := r.active.Load()
	if ix := r.routers.Load(); ix != nil && ix.from == act {
		return ix
	}
	ix := &routerIndex{from: act, byScope: map[string][]RouterRole{}, names: make(map[string]bool, len(*act)), roles: map[string]map[string]string{}, tools: map[string]map[string]string{}}
	for scoped, mod := range *act {
		ix.names[scoped] = true
		m := mod.Manifest
		scope, name := "", scoped
		if i := strings.LastIndexByte(scoped, '/'); i >= 0 {
			scope, name = scoped[:i], scoped[i+1:]
		}
		if m.Has(abi.HookToolCall) {
			for _, t := range m.Tools {
				ix.add(ix.tools, scope, t.Type, name)
			}
		}
		if m.Kind != manifest.KindPlugin {
			continue
		}
		for _, role := range m.Roles {
			ix.add(ix.roles, scope, role, name)
		}
		if m.Router == nil {
			continue
		}
		ix.byScope[scope] = append(ix.byScope[scope], RouterRole{Router: *m.Router, Plugin: name})
	}
	for _, roles := range ix.byScope {
		sort.Slice(roles, func(i, j int) bool { return roles[i].Model < roles[j].Model })
	}
	r.routers.Store(ix)
	return ix
}

// Routers are the routers a request of account can use: the account's own
// plugins' first, then the gateway's — except one whose model id an
// account's router takes, or whose plugin id an account's module takes
// (the request would run the account's module by that id).
func (r *Registry) Routers(account string) []RouterRole {
	ix := r.routerIndex()
	var out []RouterRole
	if account != "" {
		out = append(out, ix.byScope[account]...)
	}
	for _, g := range ix.byScope[""] {
		if !ix.hidden(account, out, &g) {
			out = append(out, g)
		}
	}
	return out
}

// add records name under key in scope's table of t; of two names, the
// first by name wins, so the choice does not depend on map order.
func (ix *routerIndex) add(t map[string]map[string]string, scope, key, name string) {
	if t[scope] == nil {
		t[scope] = map[string]string{}
	}
	if cur := t[scope][key]; cur == "" || name < cur {
		t[scope][key] = name
	}
}

// ToolModule is the module that implements server tool type typ for a
// request of account (its manifest declares the tool and a tool_call
// hook): the account's own first, then the gateway's; "" when none does.
func (r *Registry) ToolModule(account, typ string) string {
	if r == nil {
		return ""
	}
	ix := r.routerIndex()
	if account != "" {
		if name := ix.tools[account][typ]; name != "" {
			return name
		}
	}
	return ix.tools[""][typ]
}

// RolePlugin is the plugin id that plays role (manifest.Roles) for a
// request of account: the account's own plugin first, then the gateway's;
// "" when no active plugin declares it. account "" asks for the gateway's
// alone. It allocates nothing: the flow asks on every request.
func (r *Registry) RolePlugin(account, role string) string {
	if r == nil {
		return ""
	}
	ix := r.routerIndex()
	if account != "" {
		if name := ix.roles[account][role]; name != "" {
			return name
		}
	}
	return ix.roles[""][role]
}

// HasRole reports whether the plugin a request of account runs under id
// (its own module of that name first, then the gateway's) declares role.
func (r *Registry) HasRole(account, id, role string) bool {
	if r == nil || strings.Contains(id, "/") {
		return false // an id is a name, never a scope path
	}
	act := *r.active.Load()
	m := act[Scoped(account, id)]
	if m == nil || account == "" {
		m = act[id]
	}
	return m != nil && m.Manifest.Kind == manifest.KindPlugin && m.Manifest.HasRole(role)
}

// Router is the router of a request of account whose model id is model,
// or whose plugin id is plugin ("" matches neither); ok false when none
// is. It allocates nothing: every chat request asks.
func (r *Registry) Router(account, model, plugin string) (RouterRole, bool) {
	ix := r.routerIndex()
	match := func(rr *RouterRole) bool {
		return (model != "" && rr.Model == model) || (plugin != "" && rr.Plugin == plugin)
	}
	own := ix.byScope[account]
	if account != "" {
		for i := range own {
			if match(&own[i]) {
				return own[i], true
			}
		}
	}
	for i, g := range ix.byScope[""] {
		if match(&g) && !ix.hidden(account, own, &g) {
			return ix.byScope[""][i], true
		}
	}
	return RouterRole{}, false
}

// hidden reports whether gateway-wide router g is not account's: a router
// of before (the account's own) takes its model id, or a module of the
// account's takes its plugin id (a request would run that module).
func (ix *routerIndex) hidden(account string, before []RouterRole, g *RouterRole) bool {
	if account == "" {
		return false
	}
	for _, r := range before {
		if r.Model == g.Model {
			return true
		}
	}
	return ix.names[Scoped(account, g.Plugin)]
}

// NativeFiles reports whether the active gateway-wide adapter of that name
// declares the file_input capability (route.Adapters).
func (r *Registry) NativeFiles(adapter string) bool {
	return r.AdapterHas(adapter, manifest.CapabilityFileInput)
}

// AdapterHas reports whether the active gateway-wide adapter of that name
// declares capability c. The host reads it at each use, so a version that
// gains or drops a capability changes what the host does with no release.
func (r *Registry) AdapterHas(adapter, c string) bool {
	m := (*r.active.Load())[adapter]
	return m != nil && m.Manifest.Kind == manifest.KindAdapter && slices.Contains(m.Manifest.Capabilities, c)
}
