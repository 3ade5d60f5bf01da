package validate

import (
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/switchyard/switchyard/host/apierr"
	"github.com/tidwall/gjson"
)

var (
	roles           = []string{"system", "user", "developer", "assistant", "tool", "function"}
	efforts         = []string{"max", "xhigh", "high", "medium", "low", "minimal", "none"}
	summaries       = []string{"auto", "concise", "detailed"}
	modalities      = []string{"text", "image", "audio"}
	serviceTiers    = []string{"auto", "default", "flex", "priority", "scale"}
	routes          = []string{"fallback", "sort"}
	formatTypes     = []string{"text", "json_object", "json_schema", "grammar", "python"}
	toolChoices     = []string{"none", "auto", "required"}
	functionType    = []string{"function"}
	toolTypes       = []string{"function", "custom"}
	customFormats   = []string{"text", "grammar"}
	grammarSyntaxes = []string{"lark", "regex"}
	cacheTypes      = []string{"ephemeral"}
	cacheTTLs       = []string{"5m", "1h"}
	encodings       = []string{"float", "base64"}
)

// Limits of spec section 8.
const (
	maxStops         = 4
	maxMetadataPairs = 16
	maxMetadataKey   = 64
	maxMetadataValue = 512
	maxSessionID     = 256
	maxFunctionName  = 64
	maxTopLogprobs   = 20
	// MaxToolCalls is the most server-tool calls one request may make
	// (max_tool_calls' maximum and the cap whatever the stop conditions);
	// DefaultMaxToolCalls applies when the request gives neither
	// max_tool_calls nor stop_server_tools_when (docs/server-tools.md).
	MaxToolCalls        = 30
	DefaultMaxToolCalls = 8
)

// ServerToolPrefix starts the type of a server tool ({"type": "service:web_search"}).
const ServerToolPrefix = "service:"

// OpenRouterToolPrefix starts OpenRouter's name of a server tool
// ("openrouter:web_search", what its SDKs send): an alias of
// ServerToolPrefix (issue 32).
const OpenRouterToolPrefix = "openrouter:"

// CanonicalServerTool is typ with OpenRouter's prefix replaced by ours, and
// whether it is a server tool type at all.
func CanonicalServerTool(typ string) (string, bool) {
	if strings.HasPrefix(typ, ServerToolPrefix) {
		return typ, true
	}
	if name, ok := strings.CutPrefix(typ, OpenRouterToolPrefix); ok {
		return ServerToolPrefix + name, true
	}
	return typ, false
}

// serverToolAliases are OpenAI's names for web search in tool_choice,
// accepted for service:web_search.
var serverToolAliases = map[string]string{"web_search": "service:web_search", "web_search_preview": "service:web_search"}

// chatState carries what cross-field rules need from the one walk over the
// body.
type chatState struct {
	messages, model           bool
	models                    int
	tools                     gjson.Result // the tools array
	choice                    gjson.Result // tool_choice.function.name
	serverChoice              string       // tool_choice's server tool type
	effort, reasoningEffort   string       // "" when absent or null
	hasEffort, hasShortEffort bool
}

// Chat validates the body of POST /chat/completions against spec 2.1–2.4
// and section 8, and returns it as a typed request read in the same walk.
// Its error is a 400 whose message starts with the JSON path of the
// offending field. The request aliases body, which must not change after.
func Chat(body []byte) (*ChatRequest, *apierr.Error) {
	req := &ChatRequest{Body: body}
	if err := checkChat(body, req); err != nil {
		return nil, err
	}
	if err := req.finish(); err != nil {
		return nil, err
	}
	return req, nil
}

func checkChat(body []byte, req *ChatRequest) *apierr.Error {
	root, v, err := parse(body)
	if err != nil {
		return err
	}
	defer v.done()
	var st chatState
	if err := v.each(root, func(k string, x gjson.Result) *apierr.Error {
		req.collect(&v.Doc, k, x)
		if x.Type == gjson.Null && slices.Contains(ChatNullable, k) {
			v.nulls = true
		}
		return v.chatField(&st, k, x)
	}); err != nil {
		return err
	}
	req.Nulls, req.Legacy = v.nulls, v.legacy
	req.Messages, req.parts = v.messages, v.parts
	if !st.messages {
		return apierr.BadRequest("messages", "required: the conversation to complete, an array of at least 1 message")
	}
	if !st.model && st.models == 0 {
		return apierr.BadRequest("model", "required (or give models): a model id such as openai/gpt-4o")
	}
	// reasoning_effort is shorthand for reasoning.effort; both must agree.
	if st.hasEffort && st.hasShortEffort && st.effort != st.reasoningEffort {
		return apierr.BadRequest("reasoning_effort", "%q differs from reasoning.effort %q; send one of them, or the same value in both", st.reasoningEffort, st.effort)
	}
	if err := v.checkChoiceNamed(st.tools, st.choice); err != nil {
		return err
	}
	return v.checkChoiceServer(st.tools, st.serverChoice)
}

// chatField checks one top-level member; the path is already k. The
// sampling and output parameters are left to samplingField.
func (v *validator) chatField(st *chatState, k string, x gjson.Result) *apierr.Error {
	switch k {
	case "messages":
		st.messages = true
		return v.items(x, 1, -1, func(_ int, m gjson.Result) *apierr.Error { return v.message(m) })
	case "model":
		st.model = true
		return v.requestModel(x)
	case "models":
		err := v.items(x, 0, -1, func(_ int, m gjson.Result) *apierr.Error { return v.requestModel(m) })
		if err == nil && st.models == 0 {
			st.models = v.Count(x)
		}
		return err
	case "stream":
		return v.nullBool(x)
	case "stream_options":
		return v.streamOptions(x)
	case "tools":
		return v.tools(st, x)
	case "tool_choice":
		if isNull(x) {
			return nil
		}
		return v.toolChoice(st, x)
	case "reasoning":
		return v.reasoning(st, x)
	case "reasoning_effort":
		if x.Type == gjson.String && !st.hasShortEffort {
			st.hasShortEffort, st.reasoningEffort = true, text(x)
		}
		return v.nullEnum(x, efforts)
	case "modalities":
		if isNull(x) {
			return nil
		}
		return v.items(x, 0, -1, func(_ int, m gjson.Result) *apierr.Error { return v.enum(m, modalities) })
	case "image_config":
		return v.imageConfig(x)
	case "metadata":
		if isNull(x) {
			return nil
		}
		return v.metadata(x)
	case "user":
		if isNull(x) {
			return nil
		}
		return v.str(x)
	case "session_id":
		return v.maxChars(x, maxSessionID)
	case "service_tier":
		return v.nullEnum(x, serviceTiers)
	case "provider":
		return v.provider(x)
	case "plugins":
		return v.items(x, 0, -1, func(_ int, p gjson.Result) *apierr.Error { return v.plugin(p) })
	case "route":
		return v.nullEnum(x, routes)
	case "cache_control":
		return v.cacheControl(x)
	case "debug":
		return v.debug(x)
	case "trace":
		return v.object(x) // its fields are not specified
	case "stop_server_tools_when":
		return v.items(x, 1, -1, func(_ int, c gjson.Result) *apierr.Error { return v.stopCondition(c) })
	case "max_tool_calls":
		return v.maxToolCalls(x)
	}
	return v.samplingField(k, x)
}

// samplingField checks one top-level sampling or output parameter
// (temperature, the penalties, token limits, stop, response_format); the
// path is already k.
func (v *validator) samplingField(k string, x gjson.Result) *apierr.Error {
	switch k {
	case "temperature":
		return v.nullNumber(x, 0, 2)
	case "top_p", "min_p", "top_a":
		return v.nullNumber(x, 0, 1)
	case "frequency_penalty", "presence_penalty":
		return v.nullNumber(x, -2, 2)
	case "repetition_penalty":
		if isNull(x) {
			return nil
		}
		if x.Type != gjson.Number || !(x.Num > 0 && x.Num <= 2) {
			return v.fail("must be a number greater than 0 and at most 2 (1 means no penalty), got %s", shown(x))
		}
		return nil
	case "top_k":
		return v.nullInteger(x, 0, math.MaxInt64)
	case "top_logprobs":
		return v.nullInteger(x, 0, maxTopLogprobs)
	case "max_completion_tokens", "max_tokens":
		return v.nullInteger(x, 1, math.MaxInt64)
	case "seed":
		return v.nullInteger(x, math.MinInt64, math.MaxInt64)
	case "logprobs", "parallel_tool_calls":
		return v.nullBool(x)
	case "logit_bias":
		if isNull(x) {
			return nil
		}
		return v.logitBias(x)
	case "stop":
		return v.stop(x)
	case "response_format":
		if isNull(x) {
			return nil
		}
		return v.responseFormat(x)
	}
	return nil // unknown top-level fields are accepted: see the package comment
}

// streamOptions checks stream_options.
func (v *validator) streamOptions(x gjson.Result) *apierr.Error {
	if isNull(x) {
		return nil
	}
	return v.strict(x, func(k string, y gjson.Result) *apierr.Error {
		switch k {
		case "include_usage":
			return v.boolean(y)
		case "include_obfuscation":
			// OpenAI's stream padding; the gateway's chunks carry none,
			// so it has no effect here (and the host removes it).
			v.nulls = true
			return v.nullBool(y)
		}
		return v.unknown()
	})
}

// tools checks tools, and keeps the first in st for the tool_choice checks
// that follow the walk.
func (v *validator) tools(st *chatState, x gjson.Result) *apierr.Error {
	if isNull(x) {
		return nil
	}
	if !st.tools.Exists() {
		st.tools = x
	}
	// A null in a tool's function may be one the host removes; the
	// byte search is cheaper than knowing (a schema's "default": null
	// costs one needless compatibility walk).
	v.nulls = v.nulls || strings.Contains(x.Raw, "null")
	return v.items(x, 0, -1, func(_ int, t gjson.Result) *apierr.Error { return v.tool(t) })
}

// debug checks debug, whose one field is echo_upstream_body.
func (v *validator) debug(x gjson.Result) *apierr.Error {
	return v.strict(x, func(k string, y gjson.Result) *apierr.Error {
		if k == "echo_upstream_body" {
			return v.boolean(y)
		}
		return v.unknown()
	})
}

// maxToolCalls checks max_tool_calls, the bound on server-tool calls.
func (v *validator) maxToolCalls(x gjson.Result) *apierr.Error {
	if isNull(x) {
		return nil
	}
	if x.Type != gjson.Number || x.Num != float64(int64(x.Num)) || x.Num < 1 || x.Num > MaxToolCalls {
		return v.fail("must be an integer from 1 to %d (server-tool calls per request; default %d), got %s", MaxToolCalls, DefaultMaxToolCalls, shown(x))
	}
	return nil
}

// strict checks an object whose every member fn knows; fn returns
// v.unknown() for the others. The path is already the member's.
func (v *validator) strict(x gjson.Result, fn func(k string, y gjson.Result) *apierr.Error) *apierr.Error {
	if err := v.object(x); err != nil {
		return err
	}
	return v.each(x, fn)
}

func (v *validator) unknown() *apierr.Error { return v.fail("unknown field") }

// message checks one item of messages. Its members are read in one walk,
// then checked in a fixed order so the first error is the most useful.
func (v *validator) message(m gjson.Result) *apierr.Error {
	if err := v.object(m); err != nil {
		return err
	}
	var f [6]gjson.Result
	if dup := v.Pick(m, messageKeys, f[:]); dup != "" {
		return v.failAt(dup, "duplicate field; send it once")
	}
	role, content, toolCalls, toolCallID, name, functionCall := f[0], f[1], f[2], f[3], f[4], f[5]
	if !role.Exists() {
		return v.failAt("role", "required: one of system, user, developer, assistant, tool, function")
	}
	if err := v.field("role", role, func(x gjson.Result) *apierr.Error { return v.enum(x, roles) }); err != nil {
		return err
	}
	r := text(role)
	v.messages++
	// An absent member reads as null too (gjson's zero Result): Exists first.
	v.nulls = v.nulls || (name.Exists() && isNull(name)) || (functionCall.Exists() && isNull(functionCall))
	if r == "function" {
		v.legacy = true
		return v.functionMessage(name, content)
	}
	if name.Exists() && !isNull(name) {
		if err := v.field("name", name, v.str); err != nil {
			return err
		}
	}
	hasToolCalls := false // tool_calls are only read in an assistant message
	if r == "assistant" && toolCalls.Exists() && !isNull(toolCalls) {
		if err := v.field("tool_calls", toolCalls, func(x gjson.Result) *apierr.Error {
			return v.items(x, 0, -1, func(_ int, c gjson.Result) *apierr.Error { return v.toolCall(c) })
		}); err != nil {
			return err
		}
		hasToolCalls = v.Count(toolCalls) > 0
	}
	if r == "assistant" && functionCall.Exists() && !isNull(functionCall) {
		// The legacy single call that tool_calls replaced; the host maps it
		// to a tool call before routing.
		if err := v.field("function_call", functionCall, v.function); err != nil {
			return err
		}
		hasToolCalls, v.legacy = true, true
	}
	v.in("content")
	err := v.content(r, content, hasToolCalls)
	v.out()
	if err != nil {
		return err
	}
	if r == "tool" {
		switch {
		case !toolCallID.Exists():
			return v.failAt("tool_call_id", "required in a tool message: the id of the tool call it answers")
		case toolCallID.Type != gjson.String || toolCallID.Raw == `""`:
			return v.failAt("tool_call_id", "must be a non-empty string, the id of the tool call it answers, got %s", shown(toolCallID))
		}
	}
	return nil
}

// content checks a message's content (the path is already …content): a
// string, null (assistant only), or an array of content parts. It is
// required except in an assistant message with tool_calls.
func (v *validator) content(role string, c gjson.Result, hasToolCalls bool) *apierr.Error {
	switch {
	case !c.Exists() && hasToolCalls, c.Type == gjson.String:
		return nil
	case !c.Exists() && role == "assistant":
		return v.fail("required in an assistant message without tool_calls")
	case !c.Exists():
		return v.fail("required: a string or an array of content parts")
	case isNull(c) && role == "assistant":
		return nil
	case isNull(c):
		return v.fail("may be null only in an assistant message; send a string or an array of content parts")
	case c.IsArray():
		v.parts = true
		return v.items(c, 0, -1, func(_ int, p gjson.Result) *apierr.Error { return v.contentPart(p) })
	}
	return v.fail("must be a string or an array of content parts, got %s", describe(c))
}

// contentPart checks one part of a multi-part content: an object with a
// string type; text parts need a string text, image_url parts an image_url
// object with a url. Other types (input_audio, file, …) are provider-specific
// and only need to be objects with a type.
func (v *validator) contentPart(p gjson.Result) *apierr.Error {
	if err := v.object(p); err != nil {
		return err
	}
	var f [3]gjson.Result // type, text, image_url
	if dup := v.Pick(p, partKeys, f[:]); dup != "" {
		return v.failAt(dup, "duplicate field; send it once")
	}
	t := f[0]
	if t.Type != gjson.String || t.Raw == `""` {
		return v.failAt("type", "required: a string such as text or image_url, got %s", describe(t))
	}
	switch text(t) {
	case "text":
		return v.field("text", f[1], v.str)
	case "image_url":
		return v.imageURL(f[2])
	}
	return nil
}

var (
	messageKeys  = []string{"role", "content", "tool_calls", "tool_call_id", "name", "function_call"}
	partKeys     = []string{"type", "text", "image_url"}
	toolCallKeys = []string{"id", "type", "function"}
	functionKeys = []string{"name", "arguments"}
)

// imageURL checks an {"url": …} object at member image_url.
func (v *validator) imageURL(x gjson.Result) *apierr.Error {
	v.in("image_url")
	defer v.out()
	if err := v.object(x); err != nil {
		return err
	}
	return v.field("url", v.Get(x, "url"), v.nonEmpty)
}

// toolCall checks one assistant tool call:
// {"id": string, "type": "function", "function": {"name": string, "arguments": string}}.
func (v *validator) toolCall(c gjson.Result) *apierr.Error {
	if err := v.object(c); err != nil {
		return err
	}
	var f [3]gjson.Result // id, type, function
	if dup := v.Pick(c, toolCallKeys, f[:]); dup != "" {
		return v.failAt(dup, "duplicate field; send it once")
	}
	if err := v.field("id", f[0], v.str); err != nil {
		return err
	}
	if err := v.field("type", f[1], func(x gjson.Result) *apierr.Error { return v.enum(x, functionType) }); err != nil {
		return err
	}
	v.in("function")
	defer v.out()
	return v.function(f[2])
}

// function checks {"name": string, "arguments": string}: the function of a
// tool call, or a legacy assistant function_call (the path is already its).
func (v *validator) function(x gjson.Result) *apierr.Error {
	if err := v.object(x); err != nil {
		return err
	}
	var fn [2]gjson.Result // name, arguments
	if dup := v.Pick(x, functionKeys, fn[:]); dup != "" {
		return v.failAt(dup, "duplicate field; send it once")
	}
	if err := v.field("name", fn[0], v.str); err != nil {
		return err
	}
	return v.field("arguments", fn[1], func(x gjson.Result) *apierr.Error {
		if x.Type != gjson.String {
			return v.fail("must be a string (the arguments as JSON text), got %s", describe(x))
		}
		return nil
	})
}

// tool checks one item of tools: a function tool
// {"type": "function", "function": {"name", "description"?, "parameters"?, "strict"?}, "cache_control"?}
// or an OpenAI custom tool {"type": "custom", "custom": {"name", "description"?, "format"?}}.
// A null description or parameters counts as absent.
func (v *validator) tool(t gjson.Result) *apierr.Error {
	if err := v.object(t); err != nil {
		return err
	}
	typ := v.Get(t, "type")
	if _, server := CanonicalServerTool(text(typ)); typ.Type == gjson.String && server {
		return v.serverTool(t, typ)
	}
	if err := v.field("type", typ, func(x gjson.Result) *apierr.Error { return v.enum(x, toolTypes) }); err != nil {
		return err
	}
	if cc := v.Get(t, "cache_control"); cc.Exists() {
		if err := v.field("cache_control", cc, v.object); err != nil {
			return err
		}
	}
	kind := text(typ) // "function" or "custom": the member holding the definition
	v.in(kind)
	defer v.out()
	f := v.Get(t, kind)
	if err := v.object(f); err != nil {
		return err
	}
	name := v.Get(f, "name")
	if !name.Exists() {
		return v.failAt("name", "required: 1 to 64 letters, digits, underscores or dashes")
	}
	if err := v.field("name", name, v.functionName); err != nil {
		return err
	}
	return v.each(f, func(k string, x gjson.Result) *apierr.Error {
		if isNull(x) {
			return nil
		}
		switch {
		case k == "description":
			return v.str(x)
		case k == "parameters" && kind == "function":
			return v.object(x)
		case k == "strict" && kind == "function":
			return v.boolean(x)
		case k == "format" && kind == "custom":
			return v.customFormat(x)
		}
		return nil
	})
}

// serverTool checks a server tool {"type": "service:<name>", "parameters"?: {…}}.
// Whether a module implements the type is decided when the request is
// routed (host/tools), with the modules of the caller's account; its
// parameters are the module's business.
func (v *validator) serverTool(t, typ gjson.Result) *apierr.Error {
	canon, _ := CanonicalServerTool(text(typ))
	name := strings.TrimPrefix(canon, ServerToolPrefix)
	ok := name != "" && len(name) <= 64
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		ok = c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_'
	}
	if !ok {
		return v.failAt("type", "a server tool type is service: followed by lowercase letters, digits or underscores (such as service:web_search), got %s", shown(typ))
	}
	return v.each(t, func(k string, x gjson.Result) *apierr.Error {
		switch k {
		case "type":
			return nil
		case "parameters":
			if isNull(x) {
				return nil
			}
			return v.object(x)
		case "cache_control":
			return v.object(x)
		}
		return v.fail(`unknown field of a server tool; give its options in "parameters"`)
	})
}

// customFormat checks a custom tool's input format: {"type": "text"} or
// {"type": "grammar", "grammar": {"definition": string, "syntax": "lark" | "regex"}}.
func (v *validator) customFormat(x gjson.Result) *apierr.Error {
	if err := v.object(x); err != nil {
		return err
	}
	t := v.Get(x, "type")
	if err := v.field("type", t, func(y gjson.Result) *apierr.Error { return v.enum(y, customFormats) }); err != nil {
		return err
	}
	if text(t) != "grammar" {
		return nil
	}
	v.in("grammar")
	defer v.out()
	g := v.Get(x, "grammar")
	if err := v.object(g); err != nil {
		return err
	}
	if err := v.field("definition", v.Get(g, "definition"), v.nonEmpty); err != nil {
		return err
	}
	return v.field("syntax", v.Get(g, "syntax"), func(y gjson.Result) *apierr.Error { return v.enum(y, grammarSyntaxes) })
}

// functionMessage checks a legacy {"role": "function", "name", "content"}
// message, the result of an assistant function_call. The host maps it to a
// tool message before routing.
func (v *validator) functionMessage(name, content gjson.Result) *apierr.Error {
	if !name.Exists() {
		return v.failAt("name", "required in a function message: the name of the function whose result it carries")
	}
	if err := v.field("name", name, v.nonEmpty); err != nil {
		return err
	}
	v.in("content")
	defer v.out()
	switch {
	case !content.Exists():
		return v.fail("required: the function's result as a string")
	case content.Type == gjson.String, isNull(content):
		return nil
	}
	return v.fail("must be a string or null in a function message, got %s", describe(content))
}

// functionName checks ^[A-Za-z0-9_-]{1,64}$.
func (v *validator) functionName(x gjson.Result) *apierr.Error {
	if x.Type != gjson.String {
		return v.fail("must be a string of 1 to 64 letters, digits, underscores or dashes, got %s", describe(x))
	}
	s := text(x)
	ok := len(s) >= 1 && len(s) <= maxFunctionName
	for i := 0; ok && i < len(s); i++ {
		c := s[i]
		ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
	}
	if !ok {
		return v.fail("must be 1 to 64 letters, digits, underscores or dashes, got %s", shown(x))
	}
	return nil
}

// toolChoice accepts these shapes:
//   - "none", "auto" or "required";
//   - a named-tool choice {"type": "function", "function": {"name": "<tool>"}}:
//     when the request has tools, the name must be one of theirs;
//   - a server-tool choice: an object whose type is any other non-empty
//     string, e.g. {"type": "web_search"}; its other fields are the server
//     tool's and are not checked here.
func (v *validator) toolChoice(st *chatState, x gjson.Result) *apierr.Error {
	if x.Type == gjson.String {
		return v.enum(x, toolChoices)
	}
	if !x.IsObject() {
		return v.fail("must be none, auto, required or a tool choice object, got %s", describe(x))
	}
	t := v.Get(x, "type")
	if t.Type != gjson.String || t.Raw == `""` {
		return v.failAt("type", `required: "function" for a named tool, or a server tool's type, got %s`, describe(t))
	}
	if typ, server := CanonicalServerTool(text(t)); server {
		st.serverChoice = typ
	} else if alias := serverToolAliases[typ]; alias != "" && st.serverChoice == "" {
		st.serverChoice = "?" + alias // only checked when tools has it
	}
	if text(t) != "function" {
		return nil
	}
	v.in("function")
	defer v.out()
	f := v.Get(x, "function")
	if err := v.object(f); err != nil {
		return err
	}
	name := v.Get(f, "name")
	if err := v.field("name", name, v.nonEmpty); err != nil {
		return err
	}
	if !st.choice.Exists() {
		st.choice = name
	}
	return nil
}

// checkChoiceNamed checks a named tool choice against the request's tools.
func (v *validator) checkChoiceNamed(tools, name gjson.Result) *apierr.Error {
	if !name.Exists() || !tools.IsArray() {
		return nil
	}
	want := text(name)
	found := false
	v.Elements(tools, func(_ int, t gjson.Result) bool {
		n := v.Get(v.Get(t, "function"), "name")
		found = n.Type == gjson.String && text(n) == want
		return !found
	})
	if !found {
		return apierr.BadRequest("tool_choice.function.name", "%q is not the name of one of the request's tools", clip(want, 64))
	}
	return nil
}

// checkChoiceServer checks a server-tool choice against the request's
// tools: the model can only be made to call a tool it is offered.
func (v *validator) checkChoiceServer(tools gjson.Result, typ string) *apierr.Error {
	if typ == "" {
		return nil
	}
	alias := strings.HasPrefix(typ, "?")
	typ = strings.TrimPrefix(typ, "?")
	found := false
	if tools.IsArray() {
		v.Elements(tools, func(_ int, t gjson.Result) bool {
			canon, _ := CanonicalServerTool(v.Get(t, "type").Str)
			found = canon == typ
			return !found
		})
	}
	if !found && !alias {
		return apierr.BadRequest("tool_choice.type", "%q is not one of the request's tools: add {\"type\": %q} to tools", clip(typ, 64), clip(typ, 64))
	}
	return nil
}

// responseFormat checks {"type": …} and the member its type requires.
func (v *validator) responseFormat(x gjson.Result) *apierr.Error {
	if err := v.object(x); err != nil {
		return err
	}
	t := v.Get(x, "type")
	if !t.Exists() {
		return v.failAt("type", "required: one of text, json_object, json_schema, grammar, python")
	}
	if err := v.field("type", t, func(y gjson.Result) *apierr.Error { return v.enum(y, formatTypes) }); err != nil {
		return err
	}
	switch text(t) {
	case "json_schema":
		v.in("json_schema")
		defer v.out()
		s := v.Get(x, "json_schema")
		if !s.Exists() {
			return v.fail(`required when type is json_schema: {"name": …, "schema": {…}}`)
		}
		if err := v.object(s); err != nil {
			return err
		}
		if err := v.field("name", v.Get(s, "name"), v.nonEmpty); err != nil {
			return err
		}
		schema := v.Get(s, "schema")
		if !schema.Exists() {
			return v.failAt("schema", "required: a JSON Schema object")
		}
		return v.each(s, func(k string, y gjson.Result) *apierr.Error {
			switch k {
			case "schema":
				return v.object(y)
			case "description":
				return v.str(y)
			case "strict":
				return v.nullBool(y)
			}
			return nil
		})
	case "grammar":
		g := v.Get(x, "grammar")
		if !g.Exists() {
			return v.failAt("grammar", "required when type is grammar: the grammar as a string")
		}
		return v.field("grammar", g, v.str)
	}
	return nil
}

// reasoning checks {"effort", "summary", "max_tokens", "exclude", "enabled"}.
func (v *validator) reasoning(st *chatState, x gjson.Result) *apierr.Error {
	return v.strict(x, func(k string, y gjson.Result) *apierr.Error {
		switch k {
		case "effort":
			if y.Type == gjson.String && !st.hasEffort {
				st.hasEffort, st.effort = true, text(y)
			}
			return v.nullEnum(y, efforts)
		case "summary":
			return v.nullEnum(y, summaries)
		case "max_tokens":
			return v.nullInteger(y, 1, math.MaxInt64)
		case "exclude", "enabled":
			return v.nullBool(y)
		}
		return v.unknown()
	})
}

// logitBias checks a map of token id (a non-negative integer, as a string)
// to a bias in -100..100.
func (v *validator) logitBias(x gjson.Result) *apierr.Error {
	if err := v.object(x); err != nil {
		return err
	}
	return v.each(x, func(k string, b gjson.Result) *apierr.Error {
		if !isTokenID(k) {
			return v.fail("keys must be token ids (non-negative integers as strings), got %q", clip(k, 64))
		}
		return v.number(b, -100, 100)
	})
}

func isTokenID(s string) bool {
	if s == "" || len(s) > 10 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// stop checks a string, an array of at most 4 strings, or null.
func (v *validator) stop(x gjson.Result) *apierr.Error {
	switch {
	case isNull(x), x.Type == gjson.String:
		return nil
	case !x.IsArray():
		return v.fail("must be a string, an array of at most 4 strings, or null, got %s", describe(x))
	}
	if n := v.Count(x); n > maxStops {
		return v.fail("at most %d stop sequences, got %d", maxStops, n)
	}
	return v.strArray(x)
}

// metadata checks a string-to-string map of at most 16 pairs, keys of 1 to
// 64 characters and values of at most 512 (Unicode code points).
func (v *validator) metadata(x gjson.Result) *apierr.Error {
	if err := v.object(x); err != nil {
		return err
	}
	n, emptyKey := 0, false
	v.Members(x, func(k string, _ gjson.Result) bool {
		n++
		emptyKey = emptyKey || k == ""
		return true
	})
	if n > maxMetadataPairs {
		return v.fail("at most %d pairs, got %d", maxMetadataPairs, n)
	}
	if emptyKey {
		return v.fail("keys must not be empty")
	}
	return v.each(x, func(k string, val gjson.Result) *apierr.Error {
		if c := utf8.RuneCountInString(k); c > maxMetadataKey {
			return v.fail("keys are at most %d characters, got %d", maxMetadataKey, c)
		}
		if val.Type != gjson.String {
			return v.fail("values must be strings, got %s", describe(val))
		}
		if len(val.Raw)-2 > maxMetadataValue {
			if c := utf8.RuneCountInString(text(val)); c > maxMetadataValue {
				return v.fail("values are at most %d characters, got %d", maxMetadataValue, c)
			}
		}
		return nil
	})
}

// imageConfig checks an object whose values are strings, numbers or arrays.
func (v *validator) imageConfig(x gjson.Result) *apierr.Error {
	if err := v.object(x); err != nil {
		return err
	}
	return v.each(x, func(_ string, y gjson.Result) *apierr.Error {
		if y.Type != gjson.String && y.Type != gjson.Number && !y.IsArray() {
			return v.fail("must be a string, a number or an array, got %s", describe(y))
		}
		return nil
	})
}

// cacheControl checks {"type": "ephemeral", "ttl"?: "5m" | "1h"}.
func (v *validator) cacheControl(x gjson.Result) *apierr.Error {
	if err := v.strict(x, func(k string, y gjson.Result) *apierr.Error {
		switch k {
		case "type":
			return v.enum(y, cacheTypes)
		case "ttl":
			return v.enum(y, cacheTTLs)
		}
		return v.unknown()
	}); err != nil {
		return err
	}
	if !v.Get(x, "type").Exists() {
		return v.failAt("type", `required: "ephemeral"`)
	}
	return nil
}

// stopCondition checks one condition of stop_server_tools_when:
// step_count_is {step_count: integer >= 1}, max_cost {max_cost_in_dollars:
// number > 0}, has_tool_call {tool_name: string}, max_tokens_used
// {max_tokens: integer >= 1}, finish_reason_is {reason: string}. Other
// types are accepted as objects with a string type, so a client that knows
// a newer type is not refused; the loop ignores them (docs/server-tools.md).
func (v *validator) stopCondition(c gjson.Result) *apierr.Error {
	if err := v.object(c); err != nil {
		return err
	}
	t := v.Get(c, "type")
	if t.Type != gjson.String || t.Raw == `""` {
		return v.failAt("type", "required: a string such as step_count_is or max_cost, got %s", describe(t))
	}
	switch text(t) {
	case "step_count_is":
		return v.field("step_count", v.Get(c, "step_count"), func(x gjson.Result) *apierr.Error {
			return v.integer(x, 1, math.MaxInt64)
		})
	case "max_cost":
		return v.field("max_cost_in_dollars", v.Get(c, "max_cost_in_dollars"), func(x gjson.Result) *apierr.Error {
			return v.atLeast(x, 0, true)
		})
	case "max_tokens_used":
		return v.field("max_tokens", v.Get(c, "max_tokens"), func(x gjson.Result) *apierr.Error {
			return v.integer(x, 1, math.MaxInt64)
		})
	case "has_tool_call":
		return v.field("tool_name", v.Get(c, "tool_name"), v.nonEmpty)
	case "finish_reason_is":
		return v.field("reason", v.Get(c, "reason"), v.nonEmpty)
	}
	return nil
}
