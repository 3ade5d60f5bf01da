package responses

import (
	"testing"

	"github.com/switchyard/switchyard/host/apierr"
	"github.com/tidwall/gjson"
)

// The error object is OpenAI's ({"error":{"message","type","param","code"}},
// https://platform.openai.com/docs/guides/error-codes and the Responses
// API reference): code a string or null, as the openai SDKs and Codex CLI
// read it.
func TestEnvelope(t *testing.T) {
	overflow := apierr.BadRequest("messages", "the prompt does not fit")
	overflow.Metadata = map[string]any{"context_length": 8192}
	cases := []struct {
		name             string
		err              *apierr.Error
		typ, param, code string // "" param/code: null
	}{
		{"bad field", apierr.BadRequest("input[0].role", "unknown role"), "invalid_request_error", "input[0].role", "invalid_prompt"},
		{"chat's field", apierr.BadRequest("max_tokens", "must be positive"), "invalid_request_error", "max_output_tokens", "invalid_prompt"},
		{"chat's nested field", apierr.BadRequest("messages[2].content", "empty"), "invalid_request_error", "input[2].content", "invalid_prompt"},
		{"context overflow", overflow, "invalid_request_error", "input", "context_length_exceeded"},
		{"no key", apierr.New(401, "Invalid API key"), "authentication_error", "", "invalid_api_key"},
		{"no credits", apierr.New(402, "Insufficient credits"), "insufficient_quota", "", "insufficient_quota"},
		{"flagged", apierr.New(403, "flagged"), "permission_error", "", ""},
		{"not found", apierr.New(404, "response not found"), "not_found_error", "", ""},
		{"rate limited", apierr.New(429, "slow down"), "rate_limit_error", "", "rate_limit_exceeded"},
		{"upstream down", apierr.New(502, "upstream failed"), "server_error", "", "server_error"},
		{"timeout", apierr.New(408, "timed out"), "server_error", "", "server_error"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := gjson.GetBytes(Envelope(tc.err, nil), "error")
			if e.Get("message").Str != tc.err.Message || e.Get("type").Str != tc.typ {
				t.Fatalf("%s", e.Raw)
			}
			for name, want := range map[string]string{"param": tc.param, "code": tc.code} {
				v := e.Get(name)
				if !v.Exists() || (want == "" && v.Type != gjson.Null) || (want != "" && v.Str != want) {
					t.Fatalf("%s: %s, want %q", name, e.Raw, want)
				}
			}
		})
	}
}
