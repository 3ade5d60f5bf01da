package modules

import (
	"slices"
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
}

func (r *Registry) routerIndex() *routerIndex {
	act := r.active.Load()
	if ix := r.routers.Load(); ix != nil && ix.from == act {
		return ix
	}
	ix := &routerIndex{from: act, byScope: map[string][]RouterRole{}, names: make(map[string]bool, len(*act))}
	for scoped, mod := range *act {
		ix.names[scoped] = true
		m := mod.Manifest
		if m.Kind != manifest.KindPlugin || m.Router == nil {
			continue
		}
		scope, name := "", scoped
		if i := strings.LastIndexByte(scoped, '/'); i >= 0 {
			scope, name = scoped[:i], scoped[i+1:]
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
	m := (*r.active.Load())[adapter]
	return m != nil && m.Manifest.Kind == manifest.KindAdapter && slices.Contains(m.Manifest.Capabilities, manifest.CapabilityFileInput)
}
