package wire

import (
	"testing"

	"github.com/switchyard/switchyard/host/usage"
)

// Usage no request can produce is treated as missing, so the gateway counts
// the tokens itself instead of charging what a broken upstream says.
func TestParseUsageRefusesImplausibleCounts(t *testing.T) {
	for _, tc := range []struct {
		body string
		ok   bool
		want usage.Usage
	}{
		{`{"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`, true, usage.Usage{PromptTokens: 10, CompletionTokens: 5, Requests: 1}},
		{`{"usage":{"prompt_tokens":10,"total_tokens":10}}`, true, usage.Usage{PromptTokens: 10, Requests: 1}},
		{`{"usage":{"prompt_tokens":10,"completion_tokens":null}}`, true, usage.Usage{PromptTokens: 10, Requests: 1}},
		{`{"usage":{"prompt_tokens":-5,"completion_tokens":5}}`, false, usage.Usage{}},
		{`{"usage":{"prompt_tokens":10,"completion_tokens":-1}}`, false, usage.Usage{}},
		{`{"usage":{"prompt_tokens":10,"completion_tokens":1e12}}`, false, usage.Usage{}},
		{`{"usage":{"prompt_tokens":10,"completion_tokens":2.5}}`, false, usage.Usage{}},
		{`{"usage":{"prompt_tokens":"10","completion_tokens":5}}`, false, usage.Usage{}},
		{`{"usage":{"prompt_tokens":10,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":-3}}}`, false, usage.Usage{}},
		{`{"usage":{"prompt_tokens":10,"completion_tokens":5,"completion_tokens_details":{"reasoning_tokens":200000000}}}`, false, usage.Usage{}},
		{`{"usage":{}}`, false, usage.Usage{}},
		{`{}`, false, usage.Usage{}},
	} {
		u, ok := ParseUsage([]byte(tc.body))
		if ok != tc.ok || u != tc.want {
			t.Errorf("%s: got %+v %v, want %+v %v", tc.body, u, ok, tc.want, tc.ok)
		}
	}
}
