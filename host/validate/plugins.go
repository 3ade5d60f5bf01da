package validate

import (
	"strconv"

	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/route"
	"github.com/tidwall/gjson"
)

// pluginFields are the options of each plugin of spec 2.3; unknown options
// are a 400 so a typo does not silently change nothing.
var pluginFields = map[string]map[string]check{
	"auto-router": {
		"allowed_models":        stringArray,
		"cost_quality_tradeoff": integer(0, 10),
	},
	"moderation": {},
	"web": {
		"engine":          str,
		"exclude_domains": stringArray,
		"include_domains": stringArray,
		"max_results":     positiveInt,
		"max_uses":        positiveInt,
		"search_prompt":   str,
		"user_location": fields(true, map[string]check{
			"type": oneOf("approximate"), "city": str, "country": str, "region": str, "timezone": str,
		}, "type"),
	},
	"web-fetch": {
		"allowed_domains":    stringArray,
		"blocked_domains":    stringArray,
		"max_content_tokens": positiveInt,
		"max_uses":           positiveInt,
	},
	"file-parser":      {"pdf": object},
	"response-healing": {},
	// engine: "middle-out" compresses the middle of the conversation; other
	// engines may come with modules.
	"context-compression": {"engine": nonEmptyStr},
	"pareto-router": {
		"min_coding_score": number(0, 1),
		"price_source":     oneOf("prompt", "weighted_avg"),
	},
	"fusion": {
		"analysis_models": arrayOf(1, 8, modelID),
		"model":           modelID,
		"preset":          oneOf("general-high", "general-budget", "general-fast"),
		"max_tool_calls":  integer(1, 16),
		"tools": arrayOf(0, 8, fields(true, map[string]check{
			"type":       nonEmptyStr,
			"parameters": object,
		}, "type")),
	},
}

func plugin(p string, v gjson.Result) *apierr.Error {
	if err := object(p, v); err != nil {
		return err
	}
	id := v.Get("id")
	if id.Type != gjson.String {
		return bad(p+".id", "required: the plugin to configure")
	}
	known, ok := pluginFields[id.Str]
	if !ok {
		// A third-party or account plugin: whether it is installed, and its
		// options, are checked against its manifest's config_schema when the
		// pipeline is built.
		if e := v.Get("enabled"); e.Exists() {
			return boolean(p+".enabled", e)
		}
		return nil
	}
	var err *apierr.Error
	v.ForEach(func(k, val gjson.Result) bool {
		switch c, ok := known[k.Str]; {
		case k.Str == "id":
		case k.Str == "enabled" && id.Str != "moderation":
			err = boolean(p+".enabled", val)
		case !ok:
			err = bad(p+"."+k.Str, "unknown option of plugin %s", id.Str)
		default:
			err = c(p+"."+k.Str, val)
		}
		return err == nil
	})
	return err
}

// MaxEmbeddingInputs caps one embeddings batch.
const MaxEmbeddingInputs = 2048

var embeddingFields = map[string]check{
	"model":           modelID,
	"input":           embeddingInput,
	"encoding_format": oneOf("float", "base64"),
	"dimensions":      positiveInt,
	"user":            str,
	"provider":        nil,
	"input_type":      str,
}

// Embeddings validates the body of POST /embeddings.
func Embeddings(body []byte) *apierr.Error {
	root, err := parse(body)
	if err != nil {
		return err
	}
	root.ForEach(func(k, v gjson.Result) bool {
		if c := embeddingFields[k.Str]; c != nil {
			err = c(k.Str, v)
		}
		return err == nil
	})
	if err != nil {
		return err
	}
	if !root.Get("model").Exists() {
		return bad("model", "required: the embedding model, e.g. openai/text-embedding-3-small")
	}
	if !root.Get("input").Exists() {
		return bad("input", "required: a string, an array of strings, or an array of multimodal items")
	}
	_, err = route.ParsePreferences(root.Get("provider"), gjson.Result{})
	return err
}

func embeddingInput(p string, v gjson.Result) *apierr.Error {
	if v.Type == gjson.String {
		if v.Str == "" {
			return bad(p, "must not be empty")
		}
		return nil
	}
	if !v.IsArray() {
		return bad(p, "must be a string, an array of strings or an array of multimodal items, got %s", typeName(v))
	}
	items := v.Array()
	if len(items) == 0 {
		return bad(p, "must have at least 1 item")
	}
	if len(items) > MaxEmbeddingInputs {
		return bad(p, "at most %d inputs per request, got %d", MaxEmbeddingInputs, len(items))
	}
	for i, it := range items {
		ip := p + "[" + strconv.Itoa(i) + "]"
		switch {
		case it.Type == gjson.String:
			if it.Str == "" {
				return bad(ip, "must not be empty")
			}
		case it.Type == gjson.Number || it.IsArray():
			return bad(ip, "token-id input is not supported; send text")
		case it.IsObject():
			if err := multimodalItem(ip, it); err != nil {
				return err
			}
		default:
			return bad(ip, "must be a string or a multimodal item, got %s", typeName(it))
		}
	}
	return nil
}

func multimodalItem(p string, v gjson.Result) *apierr.Error {
	return fields(true, map[string]check{
		"content": arrayOf(1, -1, func(p string, part gjson.Result) *apierr.Error {
			if err := object(p, part); err != nil {
				return err
			}
			switch t := part.Get("type"); t.Str {
			case "text":
				return nonEmptyStr(p+".text", part.Get("text"))
			case "image_url":
				if err := object(p+".image_url", part.Get("image_url")); err != nil {
					return err
				}
				return nonEmptyStr(p+".image_url.url", part.Get("image_url.url"))
			default:
				return bad(p+".type", "must be text or image_url, got %s", clip(t.Raw))
			}
		}),
	}, "content")(p, v)
}
