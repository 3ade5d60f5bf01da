package server_test

import (
	"strings"
	"testing"

	"github.com/switchyard/switchyard/host/config"
	"github.com/switchyard/switchyard/host/demo"
	"github.com/switchyard/switchyard/host/gatewaytest"
)

// An upstream that echoes the provider key partly masked, as OpenAI's
// "Incorrect API key provided" does, must not hand its unmasked ends to
// the client or to the generation record.
func TestMaskedProviderKeyEchoIsRedacted(t *testing.T) {
	const secret = "sk-proj-Q7fK2mZpL9xW4vB8nR1tY6uH3jC5dE0a"
	g := start(t, gatewaytest.Options{
		Env:    map[string]string{"ALPHA_KEY": secret},
		Mutate: func(c *config.Config) { c.Providers[0].APIKeyEnv = "ALPHA_KEY" },
	})
	for _, echo := range []string{
		"sk-proj-Q7fK****************************dE0a",
		"sk-proj-Q7fK2mZp...",
		"sk-proj-********************************dE0a",
	} {
		g.Upstreams["alpha"].SetFaults(demo.Faults{Status: 400, ErrorBody: `{"error":{"message":"Incorrect API key provided: ` + echo + `. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","code":"invalid_api_key"}}`})
		resp, body := post(t, g, "/chat/completions", hello)
		if resp.StatusCode < 400 || !strings.Contains(body.Get("error.message").Str, "[redacted]") {
			t.Fatalf("%s: %d %s", echo, resp.StatusCode, body.Raw)
		}
		for _, part := range []string{secret[:12], "Q7fK", "dE0a"} {
			if strings.Contains(body.Raw, part) {
				t.Fatalf("%s: the response keeps %q of the provider key: %s", echo, part, body.Raw)
			}
		}
	}
}
