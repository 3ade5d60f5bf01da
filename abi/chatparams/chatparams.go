// Package chatparams is the one list of chat request parameters the gateway
// knows: which are optional parameters that route on endpoint support, which
// an OpenAI-compatible endpoint supports when its configuration does not
// say, and which the OpenAI adapter forwards upstream. The host and the
// adapters (built for wasip1) both read it, so it has no dependencies.
package chatparams

// Use says what a parameter is to the gateway.
type Use uint8

const (
	// Routed parameters count for provider.require_parameters and are
	// dropped (ctx.drop) for endpoints that do not support them.
	Routed Use = 1 << iota
	// Default parameters are supported by an OpenAI-compatible endpoint
	// whose configuration lists no supported_parameters.
	Default
	// Forwarded parameters are sent upstream by the OpenAI-compatible
	// adapter; everything else (gateway-only fields such as provider,
	// plugins, models, session_id, debug) stays in the gateway.
	Forwarded
)

const all = Routed | Default | Forwarded

// List is every chat parameter with its uses.
var List = []struct {
	Name string
	Use  Use
}{
	{"messages", Forwarded},
	{"stream", Forwarded},
	{"temperature", all},
	{"top_p", all},
	{"top_k", Routed | Forwarded},
	{"min_p", Routed | Forwarded},
	{"top_a", Routed},
	{"frequency_penalty", all},
	{"presence_penalty", all},
	{"repetition_penalty", Routed | Forwarded},
	{"logit_bias", all},
	{"logprobs", all},
	{"top_logprobs", all},
	{"max_completion_tokens", all},
	{"max_tokens", all},
	{"seed", all},
	{"stop", all},
	{"response_format", all},
	{"tools", all},
	{"tool_choice", all},
	{"parallel_tool_calls", all},
	{"reasoning", Routed | Default},
	{"reasoning_effort", all},
	{"modalities", all},
	{"service_tier", all},
	{"user", Default | Forwarded},
	{"metadata", Default | Forwarded},
	{"n", Forwarded},
	{"audio", Forwarded},
	{"prediction", Forwarded},
	{"web_search_options", Forwarded},
	{"verbosity", Forwarded},
	{"prompt_cache_key", Forwarded},
	{"safety_identifier", Forwarded},
	{"functions", Forwarded},
	{"function_call", Forwarded},
	{"store", Forwarded},
	// custom_tools is not a body member: a request carries it when tools
	// holds an OpenAI custom tool ({"type": "custom"}), and an endpoint
	// lists it in supported_parameters when it takes them. Endpoints
	// without it get the request without its custom tools (the host removes
	// them per attempt), or are not eligible with require_parameters.
	{CustomTools, Routed},
}

// CustomTools is the routing parameter of a request with custom tools.
const CustomTools = "custom_tools"

// Has reports whether name has use u.
func Has(name string, u Use) bool {
	for _, p := range List {
		if p.Name == name {
			return p.Use&u != 0
		}
	}
	return false
}

// Names lists the parameters with use u, in List order.
func Names(u Use) []string {
	var out []string
	for _, p := range List {
		if p.Use&u != 0 {
			out = append(out, p.Name)
		}
	}
	return out
}
