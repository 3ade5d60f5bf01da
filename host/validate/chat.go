package validate

import (
	"math"
	"regexp"
	"strconv"
	"unicode/utf8"

	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/route"
	"github.com/tidwall/gjson"
)

var (
	efforts       = []string{"max", "xhigh", "high", "medium", "low", "minimal", "none"}
	functionName  = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	anyInt        = integer(math.MinInt64, math.MaxInt64)
	positiveInt   = integer(1, math.MaxInt64)
	stringArray   = arrayOf(0, -1, str)
	nullableBool  = nullable(boolean)
	nullableFloat = func(min, max float64) check { return nullable(number(min, max)) }
)

// chatFields are the top-level fields of spec 2.1. Fields not listed are
// accepted and not forwarded: OpenAI clients add fields faster than
// gateways learn them, and rejecting them would break unchanged SDKs.
var chatFields map[string]check

func init() {
	chatFields = map[string]check{
		"messages":              arrayOf(1, -1, message),
		"model":                 modelID,
		"models":                arrayOf(0, -1, modelID),
		"stream":                boolean,
		"stream_options":        nullable(fields(true, map[string]check{"include_usage": boolean})),
		"temperature":           nullableFloat(0, 2),
		"top_p":                 nullableFloat(0, 1),
		"top_k":                 nullable(integer(0, math.MaxInt64)),
		"min_p":                 nullableFloat(0, 1),
		"top_a":                 nullableFloat(0, 1),
		"frequency_penalty":     nullableFloat(-2, 2),
		"presence_penalty":      nullableFloat(-2, 2),
		"repetition_penalty":    nullable(repetitionPenalty),
		"logit_bias":            nullable(logitBias),
		"logprobs":              nullableBool,
		"top_logprobs":          nullable(integer(0, 20)),
		"max_completion_tokens": nullable(positiveInt),
		"max_tokens":            nullable(positiveInt),
		"seed":                  nullable(anyInt),
		"stop":                  nullable(stop),
		"response_format":       responseFormat,
		"tools":                 arrayOf(0, -1, tool),
		"tool_choice":           toolChoice,
		"parallel_tool_calls":   nullableBool,
		"reasoning": fields(true, map[string]check{
			"effort":     nullable(oneOf(efforts...)),
			"summary":    nullable(oneOf("auto", "concise", "detailed")),
			"max_tokens": nullable(positiveInt),
			"exclude":    nullableBool,
			"enabled":    nullableBool,
		}),
		"reasoning_effort": nullable(oneOf(efforts...)),
		"modalities":       arrayOf(0, -1, oneOf("text", "image", "audio")),
		"image_config":     imageConfig,
		"metadata":         metadata,
		"user":             str,
		"session_id":       maxLen(256),
		"service_tier":     nullable(oneOf("auto", "default", "flex", "priority", "scale")),
		"provider":         nil, // checked by route.ParsePreferences, the parser the router uses
		"plugins":          arrayOf(0, -1, plugin),
		"route":            nullable(oneOf("fallback", "sort")),
		"cache_control": fields(true, map[string]check{
			"type": oneOf("ephemeral"),
			"ttl":  oneOf("5m", "1h"),
		}, "type"),
		"debug":                  fields(true, map[string]check{"echo_upstream_body": boolean}),
		"trace":                  object,
		"stop_server_tools_when": arrayOf(1, -1, stopCondition),
	}
}

// Chat validates the body of POST /chat/completions.
func Chat(body []byte) *apierr.Error {
	root, err := parse(body)
	if err != nil {
		return err
	}
	root.ForEach(func(k, v gjson.Result) bool {
		if c := chatFields[k.Str]; c != nil {
			err = c(k.Str, v)
		}
		return err == nil
	})
	if err != nil {
		return err
	}
	if !root.Get("messages").Exists() {
		return bad("messages", "required: the conversation to complete (at least 1 message)")
	}
	if !root.Get("model").Exists() && len(root.Get("models").Array()) == 0 {
		return bad("model", "required (or give a non-empty models list)")
	}
	if _, err := route.ParsePreferences(root.Get("provider"), root.Get("route")); err != nil {
		return err
	}
	// reasoning_effort is shorthand for reasoning.effort; both must agree.
	if re, e := root.Get("reasoning_effort"), root.Get("reasoning.effort"); re.Type == gjson.String && e.Type == gjson.String && re.Str != e.Str {
		return bad("reasoning_effort", "%q differs from reasoning.effort %q; send one or make them equal", re.Str, e.Str)
	}
	return checkToolChoiceName(root)
}

func repetitionPenalty(p string, v gjson.Result) *apierr.Error {
	if v.Type != gjson.Number || v.Float() <= 0 || v.Float() > 2 {
		return bad(p, "must be a number greater than 0 and at most 2 (1.0 means no penalty), got %s", clip(v.Raw))
	}
	return nil
}

func logitBias(p string, v gjson.Result) *apierr.Error {
	if err := object(p, v); err != nil {
		return err
	}
	var err *apierr.Error
	v.ForEach(func(k, b gjson.Result) bool {
		if _, perr := strconv.ParseUint(k.Str, 10, 32); perr != nil {
			err = bad(p+"."+k.Str, "keys must be token ids (non-negative integers)")
		} else {
			err = number(-100, 100)(p+"."+k.Str, b)
		}
		return err == nil
	})
	return err
}

func stop(p string, v gjson.Result) *apierr.Error {
	if v.Type == gjson.String {
		return nil
	}
	if !v.IsArray() {
		return bad(p, "must be a string or an array of at most 4 strings, got %s", typeName(v))
	}
	if n := len(v.Array()); n > 4 {
		return bad(p, "at most 4 stop sequences, got %d", n)
	}
	return stringArray(p, v)
}

func metadata(p string, v gjson.Result) *apierr.Error {
	if err := object(p, v); err != nil {
		return err
	}
	n := 0
	var err *apierr.Error
	v.ForEach(func(k, val gjson.Result) bool {
		n++
		switch kl := utf8.RuneCountInString(k.Str); {
		case n > 16:
			err = bad(p, "at most 16 pairs")
		case kl == 0:
			err = bad(p, "keys must not be empty")
		case kl > 64:
			err = bad(p+"."+clip(k.Str), "keys are at most 64 characters, got %d", kl)
		case val.Type != gjson.String:
			err = bad(p+"."+k.Str, "values must be strings, got %s", typeName(val))
		case utf8.RuneCountInString(val.Str) > 512:
			err = bad(p+"."+k.Str, "values are at most 512 characters, got %d", utf8.RuneCountInString(val.Str))
		}
		return err == nil
	})
	return err
}

func imageConfig(p string, v gjson.Result) *apierr.Error {
	if err := object(p, v); err != nil {
		return err
	}
	var err *apierr.Error
	v.ForEach(func(k, val gjson.Result) bool {
		if val.Type != gjson.String && val.Type != gjson.Number && !val.IsArray() {
			err = bad(p+"."+k.Str, "values must be a string, a number or an array, got %s", typeName(val))
		}
		return err == nil
	})
	return err
}

var roles = oneOf("system", "user", "developer", "assistant", "tool")

func message(p string, v gjson.Result) *apierr.Error {
	if err := object(p, v); err != nil {
		return err
	}
	role := v.Get("role")
	if !role.Exists() {
		return bad(p+".role", "required")
	}
	if err := roles(p+".role", role); err != nil {
		return err
	}
	if n := v.Get("name"); n.Exists() {
		if err := str(p+".name", n); err != nil {
			return err
		}
	}
	content := v.Get("content")
	toolCalls := v.Get("tool_calls")
	if role.Str == "assistant" && toolCalls.Exists() {
		if err := arrayOf(0, -1, toolCall)(p+".tool_calls", toolCalls); err != nil {
			return err
		}
	}
	switch {
	case !content.Exists() && !(role.Str == "assistant" && toolCalls.Exists()):
		return bad(p+".content", "required")
	case !content.Exists():
	case content.Type == gjson.String:
	case isNull(content):
		if role.Str != "assistant" {
			return bad(p+".content", "may be null only in an assistant message")
		}
	case content.IsArray():
		if err := arrayOf(0, -1, contentPart)(p+".content", content); err != nil {
			return err
		}
	default:
		return bad(p+".content", "must be a string or an array of content parts, got %s", typeName(content))
	}
	if role.Str == "tool" {
		if err := str(p+".tool_call_id", v.Get("tool_call_id")); err != nil {
			return bad(p+".tool_call_id", "required in a tool message: the id of the call it answers")
		}
	}
	return nil
}

func contentPart(p string, v gjson.Result) *apierr.Error {
	if err := object(p, v); err != nil {
		return err
	}
	t := v.Get("type")
	if t.Type != gjson.String || t.Str == "" {
		return bad(p+".type", "required: a string such as text or image_url")
	}
	switch t.Str {
	case "text":
		return str(p+".text", v.Get("text"))
	case "image_url":
		if err := object(p+".image_url", v.Get("image_url")); err != nil {
			return err
		}
		return nonEmptyStr(p+".image_url.url", v.Get("image_url.url"))
	}
	return nil // input_audio, file, … are provider-specific parts
}

func toolCall(p string, v gjson.Result) *apierr.Error {
	return fields(false, map[string]check{
		"id":   str,
		"type": oneOf("function"),
		"function": fields(false, map[string]check{
			"name":      str,
			"arguments": str,
		}, "name", "arguments"),
	}, "id", "type", "function")(p, v)
}

func tool(p string, v gjson.Result) *apierr.Error {
	return fields(false, map[string]check{
		"type": oneOf("function"),
		"function": fields(false, map[string]check{
			"name": func(p string, v gjson.Result) *apierr.Error {
				if err := str(p, v); err != nil {
					return err
				}
				if !functionName.MatchString(v.Str) {
					return bad(p, "must be 1 to 64 letters, digits, underscores or dashes, got %s", clip(v.Raw))
				}
				return nil
			},
			"description": str,
			"parameters":  object,
			"strict":      nullableBool,
		}, "name"),
		"cache_control": object,
	}, "type", "function")(p, v)
}

// toolChoice accepts "none", "auto", "required", a named-tool object
// {"type":"function","function":{"name":…}}, or a server-tool object (any
// other string type, e.g. {"type":"web_search"}).
func toolChoice(p string, v gjson.Result) *apierr.Error {
	if v.Type == gjson.String {
		return oneOf("none", "auto", "required")(p, v)
	}
	if err := object(p, v); err != nil {
		return bad(p, "must be none, auto, required or a tool choice object, got %s", typeName(v))
	}
	t := v.Get("type")
	if t.Type != gjson.String || t.Str == "" {
		return bad(p+".type", "required")
	}
	if t.Str == "function" {
		return nonEmptyStr(p+".function.name", v.Get("function.name"))
	}
	return nil
}

func checkToolChoiceName(root gjson.Result) *apierr.Error {
	name := root.Get("tool_choice.function.name")
	tools := root.Get("tools")
	if name.Type != gjson.String || !tools.IsArray() {
		return nil
	}
	found := false
	tools.ForEach(func(_, t gjson.Result) bool {
		found = t.Get("function.name").Str == name.Str
		return !found
	})
	if !found {
		return bad("tool_choice.function.name", "%q is not one of the request's tools", name.Str)
	}
	return nil
}

func responseFormat(p string, v gjson.Result) *apierr.Error {
	if err := object(p, v); err != nil {
		return err
	}
	t := v.Get("type")
	if !t.Exists() {
		return bad(p+".type", "required: one of text, json_object, json_schema, grammar, python")
	}
	if err := oneOf("text", "json_object", "json_schema", "grammar", "python")(p+".type", t); err != nil {
		return err
	}
	switch t.Str {
	case "json_schema":
		return fields(false, map[string]check{
			"name":   nonEmptyStr,
			"schema": object,
			"strict": nullableBool,
		}, "name", "schema")(p+".json_schema", v.Get("json_schema"))
	case "grammar":
		return str(p+".grammar", v.Get("grammar"))
	}
	return nil
}

func stopCondition(p string, v gjson.Result) *apierr.Error {
	if err := object(p, v); err != nil {
		return err
	}
	t := v.Get("type")
	if t.Type != gjson.String || t.Str == "" {
		return bad(p+".type", "required")
	}
	switch t.Str {
	case "step_count_is":
		return positiveInt(p+".step_count", v.Get("step_count"))
	case "max_cost":
		mc := v.Get("max_cost_in_dollars")
		if mc.Type != gjson.Number || mc.Float() <= 0 {
			return bad(p+".max_cost_in_dollars", "must be a number greater than 0, got %s", clip(mc.Raw))
		}
	}
	return nil // further condition types are accepted as they are (forward compatible)
}
