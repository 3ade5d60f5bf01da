package flow

import (
	"slices"
	"strconv"

	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/jsonstr"
	"github.com/switchyard/switchyard/host/route"
	"github.com/switchyard/switchyard/host/validate"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// OpenRouter's names for what Switchyard has under its own (issue 32):
// clients written for OpenRouter send them unchanged. Server tool types
// openrouter:… are validate.CanonicalServerTool's; the router model ids,
// the plugin options the SDK types send, and the metadata header are here.

// openRouterModels are OpenRouter's router model ids, aliases of ours.
var openRouterModels = map[string]string{
	"openrouter/auto":        "switchyard/auto",
	"openrouter/pareto-code": "switchyard/pareto-code",
	"openrouter/fusion":      "switchyard/fusion",
}

// compatPlugins is what openRouterCompat needs to know of the plugins a
// request's account runs, from their manifests.
type compatPlugins struct {
	// online is the plugin the :online variant turns on
	// (manifest.RoleOnline), "" when none is installed.
	online string
	// unsupported are plugin id's options its config_schema marks
	// x-unsupported (validate.UnsupportedOptions).
	unsupported func(id string) []string
}

// openRouterCompat rewrites what a validated request names in OpenRouter's
// terms: router model ids in model and models become ours, and the plugin
// options a plugin's config_schema marks x-unsupported are removed
// (returned as "<plugin>.<option>" for service_metadata.unsupported). The request is
// validated again when the body changed; a request with none of them is
// returned as it is, after a look at its models and plugins only.
//
// known reports whether a model name is a catalog id or alias as it
// stands: a catalog id ending in ":online" is a model, not the variant.
// A model named with the :online variant loses the suffix and turns the
// web plugin on (onlineVariant).
func openRouterCompat(vr *validate.ChatRequest, known func(string) bool, pl compatPlugins) (*validate.ChatRequest, []string, *apierr.Error) {
	body := vr.Body
	changed := slices.ContainsFunc(vr.Models, func(m string) bool { return openRouterModels[m] != "" })
	if changed {
		body = renameModels(body)
	}
	if slices.ContainsFunc(vr.Models, func(m string) bool { return isOnline(m, known) }) {
		if pl.online == "" {
			return nil, nil, apierr.BadRequest("model", "the :online variant turns on web search, and no web search plugin is installed for this account")
		}
		body = onlineVariant(body, known, pl.online)
		changed = true
	}
	var ignored []string
	if vr.Plugins.IsArray() {
		for i, p := range vr.Plugins.Array() {
			id := p.Get("id").Str
			if pl.unsupported == nil {
				break
			}
			for _, opt := range pl.unsupported(id) {
				if p.Get(opt).Exists() {
					body, _ = sjson.DeleteBytes(body, "plugins."+strconv.Itoa(i)+"."+opt)
					ignored = append(ignored, id+"."+opt)
					changed = true
				}
			}
		}
	}
	if !changed {
		return vr, nil, nil
	}
	out, err := validate.Chat(body)
	if err != nil {
		return nil, nil, err
	}
	return out, ignored, nil
}

// renameModels is body with OpenRouter's router ids in model and models
// replaced by ours.
func renameModels(body []byte) []byte {
	if to, ok := openRouterModels[gjson.GetBytes(body, "model").Str]; ok {
		body, _ = sjson.SetBytes(body, "model", to)
	}
	for i, m := range gjson.GetBytes(body, "models").Array() {
		if to, ok := openRouterModels[m.Str]; ok {
			body, _ = sjson.SetBytes(body, "models."+strconv.Itoa(i), to)
		}
	}
	return body
}

// isOnline reports whether a model name carries the :online variant.
func isOnline(m string, known func(string) bool) bool {
	_, v := route.SplitVariant(m)
	return v == route.Online && !known(m)
}

// onlineVariant is body with the :online suffix cut off model and models
// and the web search plugin (online, manifest.RoleOnline) listed, as
// OpenRouter defines the variant ("a shortcut for plugins: [{id: web}]").
// An entry of it the request lists already is kept as it is, enabled or
// not: the explicit entry says more than the suffix.
func onlineVariant(body []byte, known func(string) bool, online string) []byte {
	cut := func(path string, m gjson.Result) {
		if m.Type == gjson.String && isOnline(m.Str, known) {
			base, _ := route.SplitVariant(m.Str)
			body, _ = sjson.SetBytes(body, path, base)
		}
	}
	cut("model", gjson.GetBytes(body, "model"))
	for i, m := range gjson.GetBytes(body, "models").Array() {
		cut("models."+strconv.Itoa(i), m)
	}
	plugins := gjson.GetBytes(body, "plugins")
	if slices.ContainsFunc(plugins.Array(), func(p gjson.Result) bool { return p.Get("id").Str == online }) {
		return body
	}
	item := []byte(`{"id":` + jsonstr.Quote(online) + `}`)
	if plugins.IsArray() {
		body, _ = sjson.SetRawBytes(body, "plugins.-1", item)
	} else {
		body, _ = sjson.SetRawBytes(body, "plugins", append(append([]byte{'['}, item...), ']'))
	}
	return body
}
