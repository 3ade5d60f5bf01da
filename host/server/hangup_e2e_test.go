package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/config"
	"github.com/switchyard/switchyard/host/demo"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/gjson"
)

// TestAbandonedJSONRequestCancelsUpstream: a non-streaming request whose
// client hangs up while the upstream is still working has its upstream call
// cancelled, and its generation is settled as cancelled, charging the
// prompt the provider received (docs/billing.md) — not a success, and not
// the whole hold. The ledger stays consistent and no hold is left open.
func TestAbandonedJSONRequestCancelsUpstream(t *testing.T) {
	cases := []struct {
		name, path, body string
	}{
		{"chat", "/chat/completions", `{"model":"test/chat","messages":[{"role":"user","content":"a long question nobody waits for"}]}`},
		{"embeddings", "/embeddings", `{"model":"test/embed","input":"a text nobody waits for"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Only the client's hang-up can end the upstream call here: the
			// attempt and request limits are far away.
			g := start(t, gatewaytest.Options{Mutate: func(c *config.Config) {
				c.Timeouts.Attempt, c.Timeouts.Request = config.Duration(10*time.Minute), config.Duration(10*time.Minute)
			}})
			up := g.Upstreams["alpha"]
			// The upstream would answer in 30 s; the test ends long before.
			up.SetFaults(demo.Faults{Delay: 30 * time.Second})
			ctx, cancel := context.WithCancel(context.Background())
			req, _ := http.NewRequestWithContext(ctx, "POST", g.URL+tc.path, strings.NewReader(tc.body))
			req.Header.Set("Authorization", "Bearer "+g.Key)
			req.Header.Set("Content-Type", "application/json")
			errc := make(chan error, 1)
			go func() {
				resp, err := http.DefaultClient.Do(req)
				if err == nil {
					resp.Body.Close()
				}
				errc <- err
			}()
			waitFor(t, "the upstream to receive the request", func() bool { return up.Count() == 1 })
			cancel()
			if err := <-errc; err == nil {
				t.Fatal("the request completed although the client cancelled it")
			}
			waitFor(t, "the gateway to cancel its upstream call", func() bool { return up.Abandoned() == 1 })
			if n := up.Count(); n != 1 {
				t.Fatalf("%d upstream requests: an abandoned request is not retried elsewhere", n)
			}

			var gen *billing.Generation
			waitFor(t, "the generation to be settled", func() bool {
				_ = g.Ledger.Generations(g.AccountID, func(x *billing.Generation) bool { gen = x; return false })
				return gen != nil
			})
			if gen.Status != billing.StatusCancelled {
				t.Fatalf("generation status %q, want cancelled: %+v", gen.Status, gen)
			}
			if gen.Usage.PromptTokens <= 0 || gen.Usage.CompletionTokens != 0 || gen.Charged <= 0 || gen.Charged >= gen.Held {
				t.Fatalf("an abandoned request is charged its prompt only: usage %+v, charged %d of a %d hold", gen.Usage, gen.Charged, gen.Held)
			}
			_, kb, _ := g.Request("GET", "/key", "", "Authorization", "Bearer "+g.Key)
			if used := gjson.GetBytes(kb, "data.usage").Float(); used <= 0 {
				t.Fatalf("key usage %v after a charged cancelled request", used)
			}
			if problems, err := g.Ledger.Audit(); err != nil || len(problems) > 0 {
				t.Fatalf("audit: %v %v", problems, err)
			}
			if n := g.Ledger.OpenHolds(); n != 0 {
				t.Fatalf("%d holds left open", n)
			}
		})
	}
}
