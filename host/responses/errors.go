package responses

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/switchyard/switchyard/host/apierr"
)

// The Responses API's errors are OpenAI's, not the chat envelope: a body
// {"error":{"message","type","param","code"}} whose code is a string or
// null (the openai SDKs read error.type, error.param and error.code from
// it), and in a stream an `error` event and `response.failed`, whose
// response.error is {code, message}. Codex CLI reads the code:
// context_length_exceeded and insufficient_quota end its turn with a
// message of their own, rate_limit_exceeded is retried. OpenRouter's
// Responses API beta answers with string codes too (invalid_prompt,
// rate_limit_exceeded, server_error), so no client of either reads a
// numeric code here. The chat envelope's metadata is kept under error
// (an extra member the SDKs ignore) for what the gateway adds (the
// models and context length of an overflow, a moderation's flags).

// Error type names by status, as OpenAI's API names them.
const (
	TypeInvalidRequest = "invalid_request_error"
	TypeAuthentication = "authentication_error"
	TypePermission     = "permission_error"
	TypeNotFound       = "not_found_error"
	TypeRateLimit      = "rate_limit_error"
	TypeQuota          = "insufficient_quota"
	TypeServer         = "server_error"
)

// ErrorType is the error type of an HTTP status.
func ErrorType(status int) string {
	switch {
	case status == http.StatusUnauthorized:
		return TypeAuthentication
	case status == http.StatusPaymentRequired:
		return TypeQuota
	case status == http.StatusForbidden:
		return TypePermission
	case status == http.StatusNotFound:
		return TypeNotFound
	case status == http.StatusTooManyRequests:
		return TypeRateLimit
	case status >= 400 && status < 500 && status != http.StatusRequestTimeout && status != 499:
		return TypeInvalidRequest
	}
	return TypeServer
}

// ErrorCode is the error code of a failure with this status; overflow
// says the prompt did not fit the context (the router's refusal carries
// its context_length). "" stands for null.
func ErrorCode(status int, overflow bool) string {
	switch {
	case overflow:
		return "context_length_exceeded"
	case status == http.StatusUnauthorized:
		return "invalid_api_key"
	case status == http.StatusPaymentRequired:
		return "insufficient_quota"
	case status == http.StatusTooManyRequests:
		return "rate_limit_exceeded"
	case status == http.StatusForbidden || status == http.StatusNotFound || status == http.StatusConflict:
		return ""
	case status >= 400 && status < 500 && status != http.StatusRequestTimeout && status != 499:
		return "invalid_prompt"
	}
	return "server_error"
}

// overflowed reports the context-overflow refusal (host/route: its
// metadata names the context length that was exceeded).
func overflowed(status int, metadata map[string]any) bool {
	_, ok := metadata["context_length"]
	return status == http.StatusBadRequest && ok
}

// chatParams are the chat request's field names that a Responses request
// names otherwise (the front door translated it, so a validator's field is
// chat's).
var chatParams = map[string]string{
	"messages":              "input",
	"max_tokens":            "max_output_tokens",
	"max_completion_tokens": "max_output_tokens",
	"response_format":       "text.format",
	"reasoning_effort":      "reasoning.effort",
}

// Param is the Responses request's name of a field an error names.
func Param(field string) string {
	head, rest := field, ""
	if i := strings.IndexAny(field, ".["); i >= 0 {
		head, rest = field[:i], field[i:]
	}
	if p, ok := chatParams[head]; ok {
		return p + rest
	}
	return field
}

type errorBody struct {
	Message  string         `json:"message"`
	Type     string         `json:"type"`
	Param    *string        `json:"param"`
	Code     *string        `json:"code"`
	Metadata map[string]any `json:"metadata,omitempty"`
}

func orNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Envelope is the body of an error answer of the Responses front door,
// with the routing metadata (a JSON object) when the caller asked for it.
func Envelope(e *apierr.Error, serviceMetadata json.RawMessage) []byte {
	b, _ := json.Marshal(struct {
		Error           errorBody       `json:"error"`
		ServiceMetadata json.RawMessage `json:"service_metadata,omitempty"`
	}{errorBody{
		Message: e.Message, Type: ErrorType(e.Status), Param: orNull(Param(e.Param)),
		Code: orNull(ErrorCode(e.Status, overflowed(e.Status, e.Metadata))), Metadata: e.Metadata,
	}, serviceMetadata})
	return b
}
