package messages

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/switchyard/switchyard/host/apierr"
	"github.com/tidwall/gjson"
)

// Message is Anthropic's answer object.
type Message struct {
	ID           string  `json:"id"`
	Type         string  `json:"type"`
	Role         string  `json:"role"`
	Model        string  `json:"model"`
	Content      []Block `json:"content"`
	StopReason   *string `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
	Usage        Usage   `json:"usage"`
}

// Block is a text or tool_use content block.
type Block struct {
	Type  string          `json:"type"`
	Text  *string         `json:"text,omitempty"`
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
}

// Usage is Anthropic's usage. input_tokens excludes the prompt tokens
// read from or written to the provider's cache, which are counted apart.
type Usage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
}

// usageOf reads a chat usage object.
func usageOf(u gjson.Result) Usage {
	read := u.Get("prompt_tokens_details.cached_tokens").Int()
	write := u.Get("prompt_tokens_details.cache_write_tokens").Int()
	in := u.Get("prompt_tokens").Int() - read - write
	if in < 0 {
		in = 0
	}
	return Usage{InputTokens: in, OutputTokens: u.Get("completion_tokens").Int(),
		CacheCreationInputTokens: write, CacheReadInputTokens: read}
}

// MessageID is the message id of generation genID: Anthropic's ids start
// with msg_; the generation id itself is in X-Generation-Id.
func MessageID(genID string) string {
	return "msg_" + strings.TrimPrefix(genID, "gen-")
}

// StopReason maps a chat finish_reason. A chat answer does not say which
// stop sequence ended it, so "stop" is always end_turn.
func StopReason(finish string) string {
	switch finish {
	case "length":
		return "max_tokens"
	case "tool_calls", "function_call":
		return "tool_use"
	case "content_filter":
		return "refusal"
	}
	return "end_turn"
}

// FromChat translates a chat completion into a Message; model is the
// model the client asked for, answered when the completion names none
// (it names the one that answered, a fallback's among them). The reasoning a completion may carry is
// dropped: Anthropic's thinking blocks need a signature the gateway
// cannot make.
func FromChat(completion []byte, model string) ([]byte, *apierr.Error) {
	c := gjson.ParseBytes(completion)
	choice := c.Get("choices.0")
	if !choice.Exists() {
		return nil, apierr.New(http.StatusBadGateway, "the provider's answer has no choice")
	}
	msg := choice.Get("message")
	if m := c.Get("model").Str; m != "" {
		model = m
	}
	m := Message{ID: MessageID(c.Get("id").Str), Type: "message", Role: "assistant", Model: model,
		Content: []Block{}, Usage: usageOf(c.Get("usage"))}
	if t := msg.Get("content"); t.Type == gjson.String && t.Str != "" {
		s := t.Str
		m.Content = append(m.Content, Block{Type: "text", Text: &s})
	} else if t.IsArray() {
		t.ForEach(func(_, p gjson.Result) bool {
			if p.Get("type").Str == "text" && p.Get("text").Str != "" {
				s := p.Get("text").Str
				m.Content = append(m.Content, Block{Type: "text", Text: &s})
			}
			return true
		})
	}
	msg.Get("tool_calls").ForEach(func(_, tc gjson.Result) bool {
		m.Content = append(m.Content, Block{Type: "tool_use", ID: tc.Get("id").Str,
			Name: tc.Get("function.name").Str, Input: toolInput(tc.Get("function.arguments").Str)})
		return true
	})
	stop := StopReason(choice.Get("finish_reason").Str)
	m.StopReason = &stop
	b, err := json.Marshal(m)
	if err != nil {
		return nil, apierr.Wrap(http.StatusInternalServerError, err, "translating the answer")
	}
	return b, nil
}

// toolInput is a tool call's arguments as the input object Anthropic's
// tool_use requires; arguments that are not a JSON object (a model's
// malformed call) are kept as a string under "arguments" rather than lost.
func toolInput(args string) json.RawMessage {
	if strings.TrimSpace(args) == "" {
		return json.RawMessage(`{}`)
	}
	if r := gjson.Parse(args); gjson.Valid(args) && r.IsObject() {
		return json.RawMessage(args)
	}
	b, _ := json.Marshal(map[string]string{"arguments": args})
	return b
}

// ErrorType is the Anthropic error type of an HTTP status
// (https://docs.claude.com/en/api/errors): other 4xx are
// invalid_request_error, other 5xx api_error.
func ErrorType(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusPaymentRequired:
		return "billing_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusServiceUnavailable, apierr.StatusOverloaded:
		return "overloaded_error"
	case http.StatusGatewayTimeout, apierr.StatusEdgeTimeout:
		return "timeout_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

// ErrorObject is the error member of Anthropic's envelope.
type ErrorObject struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

type envelope struct {
	Type  string      `json:"type"`
	Error ErrorObject `json:"error"`
}

// Envelope is e as Anthropic's error body (also the data of a stream's
// error event): {"type":"error","error":{"type","message"}}.
func Envelope(e *apierr.Error) []byte {
	b, _ := json.Marshal(envelope{Type: "error", Error: ErrorObject{Type: ErrorType(e.Status), Message: e.Message}})
	return b
}
