package server_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/gjson"
)

// TestZeroCompletionInsurance: an upstream that answers 200 with no
// completion tokens and no finish reason (an empty completion, as
// providers sometimes return) costs the client nothing: usage.cost is 0,
// the generation record says what was insured, the key's usage does not
// move and the audit stays clean. The same answer with finish_reason
// "stop" is charged its prompt (insurance covers failures, not an empty
// answer the model chose). The upstream speaks OpenAI's chat completion
// object (platform.openai.com/docs/api-reference/chat/object), which
// allows a null finish_reason only while a choice is unfinished.
func TestZeroCompletionInsurance(t *testing.T) {
	finish := make(chan string, 1)
	empty := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"chatcmpl-empty","object":"chat.completion","created":1741570283,"model":"empty-1",`+
			`"choices":[{"index":0,"message":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":`+<-finish+`}],`+
			`"usage":{"prompt_tokens":120,"completion_tokens":0,"total_tokens":120}}`)
	}))
	defer empty.Close()
	yaml := `demo: false
timeouts: {attempt: 5s, request: 30s}
providers:
  - {slug: empty, adapter: openai, base_url: "` + empty.URL + `", data_collection: allow, region: us}
models:
  - id: test/empty
    context_length: 8192
    endpoints:
      - {provider: empty, upstream_model: empty-1, max_output: 1024, price: {prompt: 2, completion: 8}}
`
	g := rtStart(t, gatewaytest.Options{ConfigYAML: yaml})
	keyUsage := func() float64 {
		_, kb, _ := g.Request("GET", "/key", "")
		return gjson.GetBytes(kb, "data.usage").Float()
	}
	for _, tc := range []struct {
		finish  string
		insured bool
	}{{"null", true}, {`"stop"`, false}} {
		t.Run(tc.finish, func(t *testing.T) {
			before := keyUsage()
			finish <- tc.finish
			resp, b := post(t, g, "/chat/completions", `{"model":"test/empty","messages":[{"role":"user","content":"say nothing"}]}`)
			if resp.StatusCode != 200 {
				t.Fatalf("%d %s", resp.StatusCode, b.Raw)
			}
			gen := generation(t, g, g.Key, b.Get("id").Str)
			charged, insured := gen.Get("total_cost").Float(), gen.Get("insured").Float()
			const prompt = 120 * 2e-6 // 120 tokens at $2 per million
			if tc.insured {
				if b.Get("usage.cost").Float() != 0 || charged != 0 || insured != prompt || keyUsage() != before {
					t.Fatalf("insured answer: usage.cost %v, record charged %v insured %v, key usage %v → %v (%s)",
						b.Get("usage.cost").Float(), charged, insured, before, keyUsage(), gen.Raw)
				}
			} else if charged != prompt || gen.Get("insured").Exists() || b.Get("usage.cost").Float() != prompt {
				t.Fatalf("finished answer: charged %v, want %v and no insurance (%s)", charged, prompt, gen.Raw)
			}
			if problems, err := g.Ledger.Audit(); err != nil || len(problems) > 0 {
				t.Fatalf("audit: %v %v", problems, err)
			}
		})
	}
}
