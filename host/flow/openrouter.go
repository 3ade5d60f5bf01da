package flow

import (
	"slices"
	"strconv"

	"github.com/switchyard/switchyard/host/apierr"
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

// openRouterCompat rewrites what a validated request names in OpenRouter's
// terms: router model ids in model and models become ours, and the plugin
// options validate.UnsupportedPluginOptions lists are removed (returned as
// "<plugin>.<option>" for service_metadata.unsupported). The request is
// validated again when the body changed; a request with none of them is
// returned as it is, after a look at its models and plugins only.
func openRouterCompat(vr *validate.ChatRequest) (*validate.ChatRequest, []string, *apierr.Error) {
	body := vr.Body
	changed := slices.ContainsFunc(vr.Models, func(m string) bool { return openRouterModels[m] != "" })
	if changed {
		body = renameModels(body)
	}
	var ignored []string
	if vr.Plugins.IsArray() {
		for i, p := range vr.Plugins.Array() {
			id := p.Get("id").Str
			for _, opt := range validate.UnsupportedPluginOptions[id] {
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
