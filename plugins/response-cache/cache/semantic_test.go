//go:build !wasip1

package cache_test

import (
	"strings"
	"testing"

	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/catalog"
	"github.com/switchyard/switchyard/host/config"
	"github.com/switchyard/switchyard/host/keys"
	"github.com/switchyard/switchyard/host/ratelimit"
)

// addEmbedProvider adds provider "emb" (the embeddings fake at url) and
// its model test/sem-embed to the test gateway's configuration.
func addEmbedProvider(c *config.Config, url string) {
	c.Providers = append(c.Providers, config.Provider{Slug: "emb", Name: "emb", BaseURL: url, Adapter: "openai", DataCollection: "deny", Region: "us"})
	c.Models = append(c.Models, config.Model{ID: "test/sem-embed", Kind: "embedding", ContextLength: 8192,
		Endpoints: []config.Endpoint{{Provider: "emb", UpstreamModel: "text-embedding-3-small", Price: catalog.Price{Prompt: 0.1}}}})
}

const semItem = `{"id":"response-cache","mode":"semantic","embedding_model":"test/sem-embed"}`

// semantic is a chat request asking q with the semantic cache.
func semantic(q string, extra ...string) string {
	item := semItem
	for _, e := range extra {
		item = strings.Replace(item, `{"id":"response-cache",`, `{"id":"response-cache",`+e+`,`, 1)
	}
	return `{"model":"test/chat","temperature":0,"messages":[{"role":"system","content":"Answer briefly."},{"role":"user","content":` +
		quote(q) + `}],"plugins":[` + item + `]}`
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }

const (
	asked      = "What is the capital of France?"
	paraphrase = "Could you tell me the capital of France, please?"
	different  = "What is the capital of Italy?"
)

func TestSemanticHitOnParaphrase(t *testing.T) {
	g := startGateway(t)
	acct, key := newAccount(t, g, "semantic")
	up := g.Upstreams["alpha"]
	before := g.Ledger.Balance(acct).Available
	embeds := shared.embed.calls.Load()

	first := ask(t, g, key, semantic(asked))
	if first.status != 200 || first.xcache != "MISS" || first.body.Get("service_metadata.cache.mode").Str != "semantic" {
		t.Fatalf("first: %d %q %s", first.status, first.xcache, first.body.Raw)
	}
	if shared.embed.calls.Load() != embeds+1 {
		t.Fatalf("embeddings upstream called %d times, want 1: %s", shared.embed.calls.Load()-embeds, first.body.Get("service_metadata.pipeline").Raw)
	}
	// The embedding is a sub-request of the chat request: its own
	// generation record, charged to the caller's account.
	emb := generation(t, g, key, first.genID+"-sub1")
	embCharged, _ := billing.ParseUSD(emb.Get("total_cost").Raw)
	if embCharged <= 0 || emb.Get("provider_name").Str != "emb" || emb.Get("model").Str != "test/sem-embed" {
		t.Fatalf("embed record: %s", emb.Raw)
	}
	orig := generation(t, g, key, first.genID)
	origCharged, _ := billing.ParseUSD(orig.Get("total_cost").Raw)

	calls := up.Count()
	hit := ask(t, g, key, semantic(paraphrase))
	meta := hit.body.Get("service_metadata.cache")
	if hit.status != 200 || hit.xcache != "HIT" || up.Count() != calls {
		t.Fatalf("paraphrase: %d %q upstream %d -> %d: %s", hit.status, hit.xcache, calls, up.Count(), hit.body.Raw)
	}
	if sim := meta.Get("similarity").Float(); meta.Get("status").Str != "hit" || meta.Get("mode").Str != "semantic" ||
		sim < 0.95 || sim >= 1 || !meta.Get("age_seconds").Exists() || meta.Get("original_generation").Str != first.genID {
		t.Fatalf("service_metadata.cache %s", meta.Raw)
	}
	if got, want := hit.body.Get("choices.0.message.content").Str, first.body.Get("choices.0.message.content").Str; got != want {
		t.Fatalf("hit answer %q, want the stored %q", got, want)
	}
	// The hit's embedding is charged too; the hit itself its fee.
	hitEmb := generation(t, g, key, hit.genID+"-sub1")
	hitEmbCharged, _ := billing.ParseUSD(hitEmb.Get("total_cost").Raw)
	hitRec := generation(t, g, key, hit.genID)
	hitCharged, _ := billing.ParseUSD(hitRec.Get("total_cost").Raw)
	if hitRec.Get("cache_hit_of").Str != first.genID || hitEmbCharged <= 0 {
		t.Fatalf("hit record %s, embed %s", hitRec.Raw, hitEmb.Raw)
	}
	if spent := before - g.Ledger.Balance(acct).Available; spent != origCharged+embCharged+hitCharged+hitEmbCharged {
		t.Fatalf("balance moved by %d, records say %d + %d + %d + %d", spent, origCharged, embCharged, hitCharged, hitEmbCharged)
	}

	// A different question on the same topic scores 0.5: a miss.
	if a := ask(t, g, key, semantic(different)); a.xcache != "MISS" || up.Count() != calls+1 {
		t.Fatalf("different question: %q %s", a.xcache, a.body.Get("service_metadata.cache").Raw)
	}
	// The rest of the key must match: the paraphrase with another
	// max_tokens (a different answer may come) misses.
	other := strings.Replace(semantic(paraphrase), `"temperature":0,`, `"temperature":0,"max_tokens":50,`, 1)
	if a := ask(t, g, key, other); a.xcache != "MISS" {
		t.Fatalf("paraphrase with another max_tokens: %q %s", a.xcache, a.body.Get("service_metadata.cache").Raw)
	}
	// A threshold above the paraphrase's similarity misses.
	if a := ask(t, g, key, semantic(paraphrase, `"threshold":0.999`, `"no_store":true`)); a.xcache != "MISS" {
		t.Fatalf("threshold 0.999: %q %s", a.xcache, a.body.Get("service_metadata.cache").Raw)
	}
}

// Semantic entries never cross accounts, nor keys with scope key.
func TestSemanticNoHitAcrossAccountsOrKeys(t *testing.T) {
	g := startGateway(t)
	acctA, keyA := newAccount(t, g, "sem-tenant-a")
	_, keyB := newAccount(t, g, "sem-tenant-b")
	if a := ask(t, g, keyA, semantic(asked)); a.xcache != "MISS" {
		t.Fatalf("first %q", a.xcache)
	}
	if a := ask(t, g, keyB, semantic(paraphrase)); a.status != 200 || a.xcache != "MISS" {
		t.Fatalf("other account: %d %q %s", a.status, a.xcache, a.body.Get("service_metadata.cache").Raw)
	}
	if a := ask(t, g, keyA, semantic(paraphrase)); a.xcache != "HIT" {
		t.Fatalf("own account: %q %s", a.xcache, a.body.Get("service_metadata.cache").Raw)
	}
	second, _, err := g.Keys.CreateKey(acctA, "second", "", false)
	if err != nil {
		t.Fatal(err)
	}
	perKey := func(q string) string { return semantic(q, `"scope":"key"`) }
	q := "What is the population of Germany?"
	if a := ask(t, g, keyA, perKey(q)); a.xcache != "MISS" {
		t.Fatalf("scope key, first: %q", a.xcache)
	}
	if a := ask(t, g, second, perKey("Could you tell me the population of Germany, please?")); a.xcache != "MISS" {
		t.Fatalf("second key read the first key's entry: %s", a.body.Get("service_metadata.cache").Raw)
	}
	if a := ask(t, g, keyA, perKey("Tell me the population of Germany, please")); a.xcache != "HIT" {
		t.Fatalf("first key, paraphrase: %q %s", a.xcache, a.body.Get("service_metadata.cache").Raw)
	}
}

// The embedding is a request of the caller's for the rate limits: a key
// allowed one request a minute gets its chat request through, but not
// the embedding the cache would make for it (a 429, so a miss looked up
// exactly only), and the limiter does not count it twice.
func TestSemanticEmbedCountsAgainstRateLimits(t *testing.T) {
	g := startGateway(t)
	acct, _ := newAccount(t, g, "sem-rate")
	secret, _, err := g.Keys.Create(acct, keys.Options{Name: "one-a-minute", RateLimits: ratelimit.Limits{RequestsPerMinute: 1}})
	if err != nil {
		t.Fatal(err)
	}
	embeds := shared.embed.calls.Load()
	a := ask(t, g, secret, semantic("What is the weather in France?"))
	if a.status != 200 || a.xcache != "MISS" {
		t.Fatalf("%d %q %s", a.status, a.xcache, a.body.Raw)
	}
	summary := a.body.Get(`service_metadata.pipeline.#(hook=="pre_request").summary`).Str
	if !strings.Contains(summary, "embed: status 429") || shared.embed.calls.Load() != embeds {
		t.Fatalf("stage %q; embeddings upstream called %d times", summary, shared.embed.calls.Load()-embeds)
	}
}
