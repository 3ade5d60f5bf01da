package validate

import (
	"strings"

	"github.com/switchyard/switchyard/abi/chatparams"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/jsonwalk"
	"github.com/switchyard/switchyard/host/route"
	"github.com/switchyard/switchyard/host/tokenize"
	"github.com/tidwall/gjson"
)

// ChatRequest is a validated chat body, read in the same walk that checked
// it: everything downstream (pipeline, router, billing, dispatcher) takes
// its fields from here instead of reading the body again.
type ChatRequest struct {
	// Body is the request as sent; adapters translate it.
	Body []byte
	// Models are model then models, primary first, without duplicates.
	Models []string
	Stream bool
	// SessionID is session_id, or the X-Session-Id header (SessionHeader).
	SessionID string
	// Params are the optional routing parameters present with a non-null
	// value (chatparams.Routed), for require_parameters and ctx.drop, and
	// chatparams.CustomTools when tools holds a custom tool.
	Params []string
	// MaxOutput is the larger of max_completion_tokens and max_tokens; 0
	// when neither is set.
	MaxOutput int
	// N is the number of choices asked for (1 when absent).
	N int
	// Prefs are provider and route, parsed.
	Prefs route.Preferences
	// Plugins is the plugins array (or absent).
	Plugins gjson.Result
	// PromptTokens is a size-based estimate of the messages, for routing
	// before any tokenizer has run.
	PromptTokens int
	// PromptBound and Images bound the prompt for the billing hold
	// (tokenize.EstimatePrompt).
	PromptBound, Images int64
	// EchoUpstream is debug.echo_upstream_body.
	EchoUpstream bool
	// ServerTools reports a server tool ({"type": "service:…"}) in tools:
	// the request runs the server-tool loop (host/tools, docs/server-tools.md).
	ServerTools bool
	// MaxToolCalls is max_tool_calls (0 when absent); StopWhen is
	// stop_server_tools_when (absent when not given).
	MaxToolCalls int
	StopWhen     gjson.Result
	// Nulls reports a member the host's compatibility pass removes (a
	// null top-level field of ChatNullable, a message's null name or
	// function_call, perhaps a null member of a tool's function, or
	// stream_options.include_obfuscation); Legacy an assistant
	// function_call or a role "function" message it maps to tool calls.
	// Read in the one validation walk, so a body that needs neither is not
	// walked again (issue 29).
	Nulls, Legacy bool

	// Messages is how many messages there are (the validation walk counts
	// them); parts says one had content parts, for the prompt's bound
	// (finish).
	Messages int
	parts    bool

	provider, route gjson.Result
}

// ChatNullable are the top-level fields of a chat request whose null the
// host removes (host/server/compat.go), since some providers reject them.
var ChatNullable = []string{"stream", "stream_options", "metadata", "modalities", "response_format", "tools", "tool_choice", "user"}

// Model is the primary model.
func (r *ChatRequest) Model() string { return r.Models[0] }

// SessionHeader takes the session from the X-Session-Id header when the
// body has none; the header has the body field's limit.
func (r *ChatRequest) SessionHeader(h string) *apierr.Error {
	if r.SessionID != "" || h == "" {
		return nil
	}
	if len([]rune(h)) > maxSessionID {
		return apierr.BadRequest("x-session-id", "at most %d characters", maxSessionID)
	}
	r.SessionID = strings.Clone(h) // kept by the sticky-session map
	return nil
}

// EstimateTokens is a size-based estimate used for routing and reservations
// before a tokenizer has run; four bytes a token is the usual rule of thumb
// for English text in JSON.
func EstimateTokens(n int) int { return (n + 3) / 4 }

// collect reads member k of a chat body into r. It runs inside the
// validating walk (d), before the member's rules; what it keeps is only
// used once the whole body passed.
func (r *ChatRequest) collect(d *jsonwalk.Doc, k string, x gjson.Result) {
	switch {
	case k == "model":
		r.addModel(text(x))
	case k == "models":
		x.ForEach(func(_, m gjson.Result) bool {
			r.addModel(m.Str)
			return true
		})
	case k == "stream":
		r.Stream = x.Type == gjson.True
	case k == "session_id":
		if x.Type == gjson.String {
			r.SessionID = strings.Clone(text(x))
		}
	case k == "n":
		if x.Type == gjson.Number {
			r.N = int(x.Int())
		}
	case k == "debug":
		r.EchoUpstream = x.Get("echo_upstream_body").Type == gjson.True
	case k == "provider":
		r.provider = x
	case k == "route":
		r.route = x
	case k == "plugins":
		r.Plugins = x
	case k == "messages":
		r.PromptTokens = EstimateTokens(len(x.Raw))
	case k == "max_tool_calls":
		if x.Type == gjson.Number {
			r.MaxToolCalls = int(x.Int())
		}
	case k == "stop_server_tools_when":
		r.StopWhen = x
	}
	if (k == "max_completion_tokens" || k == "max_tokens") && x.Type == gjson.Number {
		r.MaxOutput = max(r.MaxOutput, int(x.Int()))
	}
	if x.Type != gjson.Null && k != chatparams.CustomTools && chatparams.Has(k, chatparams.Routed) {
		r.Params = append(r.Params, k)
	}
	if k == "tools" && x.IsArray() {
		r.tools(d, x)
	}
}

// tools notes a custom tool ({"type": "custom"}) and a server tool among
// tools, reading each tool's type by the walk's index: gjson's Get read
// every byte of each tool's parameter schema, twice.
func (r *ChatRequest) tools(d *jsonwalk.Doc, tools gjson.Result) {
	custom := false
	d.Elements(tools, func(_ int, t gjson.Result) bool {
		typ := jsonwalk.Text(d.Get(t, "type"))
		if typ == "custom" && !custom {
			custom = true
			r.Params = append(r.Params, chatparams.CustomTools)
		}
		if !r.ServerTools {
			_, r.ServerTools = CanonicalServerTool(typ)
		}
		return true
	})
}

func (r *ChatRequest) addModel(m string) {
	if m == "" {
		return
	}
	for _, have := range r.Models {
		if have == m {
			return
		}
	}
	r.Models = append(r.Models, strings.Clone(m))
}

// finish parses what the walk collected once every rule passed.
func (r *ChatRequest) finish() *apierr.Error {
	if r.N == 0 {
		r.N = 1
	}
	prefs, err := route.ParsePreferences(r.provider, r.route)
	if err != nil {
		return err
	}
	r.Prefs = prefs
	r.provider, r.route = gjson.Result{}, gjson.Result{}
	if r.parts {
		r.PromptBound, r.Images = tokenize.EstimatePrompt(r.Body) // walks for the images
	} else {
		// No content parts, so no image: the bound is the body's size and
		// the framing, without searching the body again.
		r.PromptBound = tokenize.ChatTextBound(len(r.Body), r.Messages)
	}
	return nil
}

// EmbeddingsRequest is a validated embeddings body.
type EmbeddingsRequest struct {
	Body  []byte
	Model string
	// Input is the input member; Inputs is how many embeddings it asks
	// for (1 for a single string).
	Input  gjson.Result
	Inputs int
	// Base64 is encoding_format=base64.
	Base64 bool
	// HasImage reports an image part in a multimodal input.
	HasImage     bool
	Prefs        route.Preferences
	PromptTokens int
	// LongestInput is the estimate of the batch's longest input: what one
	// context must hold (the provider embeds each input on its own).
	LongestInput int
	// PromptBound and Images bound the input for the billing hold.
	PromptBound, Images int64
}

func (r *EmbeddingsRequest) collect(k string, x gjson.Result) {
	switch k {
	case "model":
		r.Model = strings.Clone(text(x))
	case "input":
		r.Input = x
		r.PromptTokens = EstimateTokens(len(x.Raw))
		r.LongestInput = r.PromptTokens
		r.Inputs = 1
		// An array of token ids ([1,2,3]) is one input; an array of
		// strings, items or token-id arrays is one input per item.
		if x.IsArray() && x.Get("0").Type != gjson.Number {
			r.Inputs, r.LongestInput = 0, 0
			x.ForEach(func(_, it gjson.Result) bool {
				r.Inputs++
				r.LongestInput = max(r.LongestInput, EstimateTokens(len(it.Raw)))
				it.Get("content").ForEach(func(_, p gjson.Result) bool {
					r.HasImage = r.HasImage || p.Get("type").Str == "image_url"
					return !r.HasImage
				})
				return true
			})
		}
	case "encoding_format":
		r.Base64 = x.Type == gjson.String && text(x) == "base64"
	}
}
