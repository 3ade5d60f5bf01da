package server

import (
	"slices"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
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

// openRouterMetadataHeaders are OpenRouter's names of X-Service-Metadata
// (and of its legacy X-Service-Experimental-Metadata).
var openRouterMetadataHeaders = []string{"X-OpenRouter-Metadata", "X-OpenRouter-Experimental-Metadata"}

// openRouterMetadataAsked reports whether the client asked for routing
// metadata under OpenRouter's header name.
func openRouterMetadataAsked(c *fiber.Ctx) bool {
	return slices.ContainsFunc(openRouterMetadataHeaders, func(h string) bool { return c.Get(h) != "" })
}

// openRouterNames wraps a handler so that a client that asked for the
// routing metadata under OpenRouter's header gets it under OpenRouter's
// name, openrouter_metadata, in a JSON answer or error. A stream's chunks
// keep service_metadata (they are written as they go).
func (s *Server) openRouterNames(h fiber.Handler) fiber.Handler {
	return func(c *fiber.Ctx) error {
		err := h(c)
		if !openRouterMetadataAsked(c) {
			return err
		}
		if err != nil {
			if err = s.errorHandler(c, err); err != nil {
				return err
			}
		}
		resp := c.Response()
		if resp.IsBodyStream() || !strings.HasPrefix(string(resp.Header.ContentType()), fiber.MIMEApplicationJSON) {
			return nil
		}
		body := resp.Body()
		m := gjson.GetBytes(body, "service_metadata")
		if !m.Exists() {
			return nil
		}
		out, e := sjson.DeleteBytes(body, "service_metadata")
		if e == nil {
			out, e = sjson.SetRawBytes(out, "openrouter_metadata", []byte(m.Raw))
		}
		if e == nil {
			resp.SetBodyRaw(out)
		}
		return nil
	}
}
