package validate

import (
	"math"
	"slices"
	"strings"

	"github.com/switchyard/switchyard/host/apierr"
	"github.com/tidwall/gjson"
)

// builtinPlugins are the plugin ids of spec 2.3, whose options are checked here.
var builtinPlugins = []string{
	"auto-router", "moderation", "web", "web-fetch", "file-parser",
	"response-healing", "context-compression", "pareto-router", "fusion",
}

// plugin checks one item of plugins (the path is already plugins[i]): an
// object with a string id. For the plugins of spec 2.3 every option is
// checked and an unknown option is a 400; every plugin but moderation
// accepts enabled (boolean).
//
// Any other id is left to the plugin pipeline (host/pipeline), which knows
// the modules installed for the caller's account: it answers an id that
// names none with 400 `plugins[i].id: unknown plugin "x"`, and checks the
// options of an installed one against its manifest's config_schema. Here
// such an item only needs a non-empty id and, if present, a boolean enabled.
func (v *validator) plugin(p gjson.Result) *apierr.Error {
	if err := v.object(p); err != nil {
		return err
	}
	idv := v.Get(p, "id")
	if idv.Type != gjson.String || idv.Raw == `""` {
		return v.failAt("id", "required: the plugin's id, one of %s, got %s", strings.Join(builtinPlugins, ", "), describe(idv))
	}
	id := text(idv)
	if !slices.Contains(builtinPlugins, id) {
		if e := v.Get(p, "enabled"); e.Exists() {
			return v.field("enabled", e, v.boolean)
		}
		return nil
	}
	return v.each(p, func(k string, x gjson.Result) *apierr.Error {
		switch {
		case k == "id":
			return nil
		case k == "enabled" && id == "moderation":
			return v.fail("moderation has no options and cannot be disabled per request")
		case k == "enabled":
			return v.boolean(x)
		}
		err, known := v.pluginOption(id, k, x)
		if !known {
			return v.fail("unknown option of plugin %s", id)
		}
		return err
	})
}

// pluginOption checks option k of built-in plugin id; known is false for an
// option the plugin does not have.
func (v *validator) pluginOption(id, k string, x gjson.Result) (err *apierr.Error, known bool) {
	switch id + "." + k {
	case "auto-router.allowed_models":
		return v.strArray(x), true
	case "auto-router.cost_quality_tradeoff":
		return v.integer(x, 0, 10), true

	case "web.engine":
		return v.nonEmpty(x), true
	case "web.include_domains", "web.exclude_domains",
		"web-fetch.allowed_domains", "web-fetch.blocked_domains":
		return v.strArray(x), true
	case "web.max_results", "web.max_uses", "web-fetch.max_uses", "web-fetch.max_content_tokens":
		return v.integer(x, 1, math.MaxInt64), true
	case "web.search_prompt":
		return v.str(x), true
	case "web.user_location":
		return v.userLocation(x), true

	case "file-parser.pdf":
		return v.object(x), true

	// engine: middle-out drops messages from the middle of the conversation
	// to fit the context; other engines may come with modules, so any
	// non-empty string is accepted.
	case "context-compression.engine":
		return v.nonEmpty(x), true

	case "pareto-router.min_coding_score":
		return v.number(x, 0, 1), true
	case "pareto-router.price_source":
		return v.enum(x, priceSources), true

	case "fusion.analysis_models":
		return v.items(x, 1, 8, func(_ int, m gjson.Result) *apierr.Error { return v.modelID(m) }), true
	case "fusion.model":
		return v.modelID(x), true
	case "fusion.preset":
		return v.enum(x, fusionPresets), true
	case "fusion.max_tool_calls":
		return v.integer(x, 1, 16), true
	case "fusion.tools":
		return v.items(x, 0, 8, func(_ int, t gjson.Result) *apierr.Error { return v.fusionTool(t) }), true

	// Options OpenRouter's SDK types send (issue 32): accepted, checked
	// for their type, and not implemented: the host removes them before
	// the plugin runs and reports them in service_metadata.unsupported
	// (host/server/openrouter.go, UnsupportedPluginOptions).
	case "web.mode", "auto-router.cost_tier":
		return v.nonEmpty(x), true
	case "web.x_search":
		return v.object(x), true
	case "auto-router.excluded_models":
		return v.strArray(x), true
	case "auto-router.pin_model":
		return v.boolean(x), true
	case "pareto-router.max_price":
		return v.number(x, 0, math.MaxFloat64), true
	case "file-parser.max_files":
		return v.integer(x, 1, math.MaxInt64), true
	}
	return nil, false
}

// UnsupportedPluginOptions are the plugin options (plugin id → options)
// the validation accepts because OpenRouter's SDKs send them, and that
// the plugins do not implement.
var UnsupportedPluginOptions = map[string][]string{
	"web":           {"mode", "x_search"},
	"auto-router":   {"cost_tier", "excluded_models", "pin_model"},
	"pareto-router": {"max_price"},
	"file-parser":   {"max_files"},
}

// userLocation checks {"type": "approximate", "city"?, "country"?, "region"?, "timezone"?}.
func (v *validator) userLocation(x gjson.Result) *apierr.Error {
	if err := v.strict(x, func(k string, y gjson.Result) *apierr.Error {
		switch k {
		case "type":
			return v.enum(y, approximate)
		case "city", "country", "region", "timezone":
			return v.str(y)
		}
		return v.unknown()
	}); err != nil {
		return err
	}
	if !v.Get(x, "type").Exists() {
		return v.failAt("type", `required: "approximate"`)
	}
	return nil
}

// fusionTool checks {"type": string (required), "parameters"?: object}.
func (v *validator) fusionTool(t gjson.Result) *apierr.Error {
	if err := v.strict(t, func(k string, y gjson.Result) *apierr.Error {
		switch k {
		case "type":
			return v.nonEmpty(y)
		case "parameters":
			return v.object(y)
		}
		return v.unknown()
	}); err != nil {
		return err
	}
	if !v.Get(t, "type").Exists() {
		return v.failAt("type", "required: a server tool such as service:web_search or service:web_fetch")
	}
	return nil
}
