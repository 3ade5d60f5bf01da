package config

import (
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/ratelimit"
)

func TestDefaultCatalog(t *testing.T) {
	c, err := Parse(Default())
	if err != nil {
		t.Fatal(err)
	}
	if time.Duration(c.Timeouts.Attempt) != 60*time.Second || c.MaxBodyBytes != 10<<20 {
		t.Fatalf("defaults %+v", c)
	}
	// Offline: only the demo provider, and only models it serves.
	cat, err := c.Catalog("http://127.0.0.1:1/v1", func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if len(cat.Providers) != 1 || cat.Providers["demo"] == nil || !cat.Providers["demo"].Demo {
		t.Fatalf("providers %v", cat.Providers)
	}
	if cat.Model("demo/echo") == nil || cat.Model("demo/embed") == nil || cat.Model("openai/gpt-4o") != nil {
		t.Fatalf("models %v", cat.Models)
	}
	// A key switches a real provider on; the key is kept, never logged.
	cat, _ = c.Catalog("", func(k string) string {
		if k == "ANTHROPIC_API_KEY" {
			return "sk-ant"
		}
		return ""
	})
	m := cat.Model("anthropic/claude-sonnet-4")
	if m == nil || m.Endpoints[0].Provider.APIKey != "sk-ant" || m.Endpoints[0].Provider.Adapter != "anthropic" || cat.Providers["demo"] != nil {
		t.Fatalf("catalog with an Anthropic key: %+v", cat.Providers)
	}
	if !m.Endpoints[0].Supported["top_k"] || m.Endpoints[0].Supported["logprobs"] {
		t.Fatalf("supported parameters %v", m.Endpoints[0].Supported)
	}
}

func TestSettleMode(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"listen: x\n", SettleJournal},
		{"settle: memory\n", SettleMemory},
		{"settle: commit\n", SettleCommit},
		{"settle: journal-fsync\n", SettleJournalFsync},
		{"durable_settle: true\n", SettleCommit},
		{"durable_settle: false\n", SettleJournal},
	} {
		c, err := Parse([]byte(tc.yaml))
		if err != nil {
			t.Fatal(err)
		}
		if got := c.SettleMode(); got != tc.want {
			t.Errorf("%q: settle mode %s, want %s", tc.yaml, got, tc.want)
		}
	}
}

func TestParseRejects(t *testing.T) {
	cases := []struct{ name, yaml, want string }{
		{"unknown field", "listen: x\nlisten_addr: y\n", "listen_addr"},
		{"bad duration", "timeouts: {attempt: soon}\n", "soon"},
		{"secret name", "secrets: {exa_key: x}\n", "exa_key"},
		{"tenant secret name", "modules: {tenant_secrets: [\"a b\"]}\n", "tenant_secrets"},
		{"private host with scheme", "modules: {private_hosts: [\"http://intranet.local\"]}\n", "private_hosts"},
		{"negative budget", "modules: {http: {calls_per_request: -1}}\n", "negative"},
		{"unknown kv field", "modules: {kv: {max_values: 3}}\n", "max_values"},
		{"gc_percent below off", "gc_percent: -2\n", "gc_percent"},
		{"negative commit window", "settle_commit_window: -1ms\n", "settle_commit_window"},
		{"commit window over a second", "settle_commit_window: 2s\n", "at most 1s"},
		{"unknown settle mode", "settle: fsync\n", "want journal"},
		{"journal sync under a millisecond", "settle_journal_sync: 500us\n", "from 1ms to 1s"},
		{"journal sync over a second", "settle_journal_sync: 2s\n", "from 1ms to 1s"},
		{"journal sync without the journal's period", "settle: journal-fsync\nsettle_journal_sync: 10ms\n", "applies to settle: journal"},
		{"journal sync with settle: commit", "durable_settle: true\nsettle_journal_sync: 10ms\n", "not settle: commit"},
		{"durable_settle contradicting settle", "durable_settle: true\nsettle: memory\n", "contradicts"},
	}
	for _, tc := range cases {
		if _, err := Parse([]byte(tc.yaml)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	bad := []struct{ name, yaml, want string }{
		{"model id", "providers: [{slug: p, adapter: openai, base_url: http://x}]\nmodels: [{id: nomodel, endpoints: [{provider: p}]}]\n", "<vendor>/<model_name>"},
		{"two slashes", "providers: [{slug: p, adapter: openai, base_url: http://x}]\nmodels: [{id: a/b/c, endpoints: [{provider: p}]}]\n", "one slash"},
		{"kind", "providers: [{slug: p, adapter: openai, base_url: http://x}]\nmodels: [{id: a/b, kind: image, endpoints: [{provider: p}]}]\n", "kind"},
		{"duplicate provider", "providers: [{slug: p, adapter: openai, base_url: http://x}, {slug: p, adapter: openai, base_url: http://y}]\n", "twice"},
		{"no base url", "providers: [{slug: p, adapter: openai}]\n", "base_url"},
	}
	for _, tc := range bad {
		c, err := Parse([]byte(tc.yaml))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Catalog("", func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

func TestEnvOverrides(t *testing.T) {
	t.Setenv("SWITCHYARD_LISTEN", "127.0.0.1:9999")
	t.Setenv("SWITCHYARD_DEMO", "0")
	c, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:9999" || c.Demo {
		t.Fatalf("%+v", c)
	}
}

func TestAliases(t *testing.T) {
	const base = `
providers:
  - {slug: p, adapter: openai, base_url: "http://x"}
  - {slug: g, adapter: gemini, base_url: "http://y"}
  - {slug: k, adapter: gemini, base_url: "http://z", api_key_env: K, embedding_token_ids: true}
  - {slug: t, adapter: openai, base_url: "http://t", embedding_token_ids: false}
models:
  - {id: v/a, aliases: [a], endpoints: [{provider: p}]}
  - {id: v/b, endpoints: [{provider: g}]}
  - {id: v/off, endpoints: [{provider: k}]}
`
	for _, tc := range []struct {
		name, extra, err string
		want             map[string]string
	}{
		{"model list and top-level map", "aliases: {bee: v/b, off: v/off}\n", "", map[string]string{"a": "v/a", "bee": "v/b"}},
		{"alias is a model id", "aliases: {v/a: v/b}\n", `alias "v/a" is a model id itself`, nil},
		{"unknown target", "aliases: {x: v/zzz}\n", `names model "v/zzz", which is not defined`, nil},
		{"two targets", "aliases: {a: v/b}\n", `alias "a" names both "v/a" and "v/b"`, nil},
		{"space", "aliases: {\"a b\": v/b}\n", "without spaces", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(base + tc.extra))
			if err != nil {
				t.Fatal(err)
			}
			cat, err := c.Catalog("", func(string) string { return "" })
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(cat.Aliases) != len(tc.want) {
				t.Errorf("aliases %v, want %v", cat.Aliases, tc.want)
			}
			for a, to := range tc.want {
				if got := cat.Resolve(a); got != to {
					t.Errorf("Resolve(%q) = %q, want %q", a, got, to)
				}
			}
			if got := cat.Resolve("off"); got != "" {
				t.Errorf("an alias of a switched-off model resolves to %q", got)
			}
			// Unset, the adapter's manifest decides at each request
			// (dispatch); set, the configuration wins.
			if ids := cat.Providers["p"].EmbeddingTokenIDs; ids != nil {
				t.Errorf("embedding token ids unset in the configuration: %v, want nil (the adapter's manifest decides)", *ids)
			}
			if ids := cat.Providers["t"].EmbeddingTokenIDs; ids == nil || *ids {
				t.Errorf("embedding_token_ids: false gave %v", ids)
			}
		})
	}
}

func TestDefaultAliases(t *testing.T) {
	c, err := Parse(Default())
	if err != nil {
		t.Fatal(err)
	}
	cat, err := c.Catalog("", func(string) string { return "key" })
	if err != nil {
		t.Fatal(err)
	}
	for a, to := range map[string]string{"gpt-4o-mini": "openai/gpt-4o-mini", "text-embedding-3-small": "openai/text-embedding-3-small", "claude-sonnet-4": "anthropic/claude-sonnet-4"} {
		if got := cat.Resolve(a); got != to {
			t.Errorf("Resolve(%q) = %q, want %q", a, got, to)
		}
	}
	if got := cat.Suggest("gpt-4o-mni", 3); len(got) == 0 || got[0] != "openai/gpt-4o-mini" {
		t.Errorf("Suggest(gpt-4o-mni) = %v, want openai/gpt-4o-mini first", got)
	}
	if got := cat.Suggest("claude", 3); len(got) == 0 || !strings.HasPrefix(got[0], "anthropic/claude") {
		t.Errorf("Suggest(claude) = %v, want a Claude model first", got)
	}
	if got := cat.Suggest("zzzzzzzz", 3); len(got) != 0 {
		t.Errorf("Suggest(zzzzzzzz) = %v, want nothing", got)
	}
}

// TestDefaultOpenAISupported: OpenAI keeps every default parameter and
// takes custom tools, which the defaults leave out.
func TestDefaultOpenAISupported(t *testing.T) {
	c, _ := Parse(Default())
	cat, err := c.Catalog("", func(k string) string { return "key" })
	if err != nil {
		t.Fatal(err)
	}
	sup := cat.Model("openai/gpt-4o").Endpoints[0].Supported
	for _, p := range append([]string{"custom_tools"}, DefaultSupported...) {
		if !sup[p] {
			t.Errorf("openai does not support %s", p)
		}
	}
}

func TestRateLimits(t *testing.T) {
	c, err := Parse(Default())
	if err != nil {
		t.Fatal(err)
	}
	if c.RateLimits != (ratelimit.Limits{}) {
		t.Fatalf("default rate limits %+v, want unset (the built-in defaults)", c.RateLimits)
	}
	cases := []struct {
		yaml    string
		want    ratelimit.Limits
		wantErr string
	}{
		{"rate_limits: {requests_per_minute: 60, tokens_per_minute: 100000, concurrent: 4}", ratelimit.Limits{RequestsPerMinute: 60, TokensPerMinute: 100000, Concurrent: 4}, ""},
		{"rate_limits: {requests_per_minute: -1}", ratelimit.Limits{RequestsPerMinute: -1}, ""},
		{"rate_limits: {requests_per_minute: -2}", ratelimit.Limits{}, "-1 (unlimited)"},
		{"key_rate_limits: {concurrent: -3}", ratelimit.Limits{}, "key_rate_limits"},
		{"rate_limits: {requests_per_hour: 5}", ratelimit.Limits{}, "requests_per_hour"},
	}
	for _, tc := range cases {
		c, err := Parse([]byte(tc.yaml))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("%s: err %v, want %q", tc.yaml, err, tc.wantErr)
			}
			continue
		}
		if err != nil || c.RateLimits != tc.want {
			t.Fatalf("%s: %+v %v", tc.yaml, c.RateLimits, err)
		}
	}
}

func TestDefaultModuleSettings(t *testing.T) {
	c, err := Parse(Default())
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.ModuleSettingsJSON()
	if err != nil {
		t.Fatal(err)
	}
	if string(s["web"]) != `{"engine":"demo"}` {
		t.Fatalf("the default web engine must be the offline demo engine: %s", s["web"])
	}
	if _, err := Parse([]byte("module_settings:\n  web: {engine: exa, engines: {exa: {fee: \"0.01\"}}}\n")); err != nil {
		t.Fatal(err)
	}
}

// TestModulesAndSecrets: the default file parses with the documented
// module settings, and SWITCHYARD_SECRET_<NAME> sets or overrides a secret.
func TestModulesAndSecrets(t *testing.T) {
	c, err := Parse(Default())
	if err != nil {
		t.Fatal(err)
	}
	m := c.Modules
	if m.HTTP.CallsPerRequest != 16 || m.HTTP.MaxResponseBytes != 4<<20 || m.HTTP.Timeout != Duration(10*time.Second) ||
		m.KV.MaxKeys != 1000 || m.KV.MaxTTL != Duration(720*time.Hour) || m.ChatCallsPerRequest != 8 || len(m.PrivateHosts) != 0 || len(m.TenantSecrets) != 0 {
		t.Errorf("default modules settings: %+v", m)
	}
	c, err = Parse([]byte("secrets: {EXA_API_KEY: from-file, BRAVE_KEY: file}\nmodules: {private_hosts: [\"127.0.0.1:39999\", intranet.local]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := c.ResolveSecrets([]string{"SWITCHYARD_SECRET_BRAVE_KEY=from-env", "SWITCHYARD_SECRET_TAVILY=t", "SWITCHYARD_SECRET_bad=x", "OTHER=y", "SWITCHYARD_SECRET_EMPTY="})
	want := map[string]string{"EXA_API_KEY": "from-file", "BRAVE_KEY": "from-env", "TAVILY": "t"}
	if len(got) != len(want) {
		t.Errorf("secrets %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("secret %s = %q, want %q", k, got[k], v)
		}
	}
	if len(c.Modules.PrivateHosts) != 2 {
		t.Errorf("private hosts %v", c.Modules.PrivateHosts)
	}
}

func TestRequiresModeration(t *testing.T) {
	c, err := Parse([]byte(`
providers:
  - {slug: a, adapter: openai, base_url: "http://a/v1", requires_moderation: true}
  - {slug: b, adapter: openai, base_url: "http://b/v1"}
`))
	if err != nil {
		t.Fatal(err)
	}
	cat, err := c.Catalog("", func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if !cat.Providers["a"].RequiresModeration || cat.Providers["b"].RequiresModeration {
		t.Fatalf("requires_moderation: a %v, b %v", cat.Providers["a"].RequiresModeration, cat.Providers["b"].RequiresModeration)
	}
}

func TestMaxToolCallsPerTurn(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		want int
		err  string
	}{
		{"demo: true", DefaultMaxToolCallsPerTurn, ""},
		{"limits: {max_tool_calls_per_turn: 0}", DefaultMaxToolCallsPerTurn, ""},
		{"limits: {max_tool_calls_per_turn: 16}", 16, ""},
		{"limits: {max_tool_calls_per_turn: -1}", 0, "limits.max_tool_calls_per_turn"},
	} {
		c, err := Parse([]byte(tc.yaml))
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: error %v, want one naming %s", tc.yaml, err, tc.err)
		case tc.err == "" && (err != nil || c.Limits.MaxToolCallsPerTurn != tc.want):
			t.Errorf("%q: %v, want %d", tc.yaml, err, tc.want)
		}
	}
}

func TestParseCreated(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		bad  bool
	}{
		{in: "", want: 0},
		{in: "2024-07-18", want: 1721260800},
		{in: "2024-07-18T12:00:00Z", want: 1721304000},
		{in: "1721260800", want: 1721260800},
		{in: "July 2024", bad: true},
		{in: "-5", bad: true},
	} {
		got, err := parseCreated(tc.in)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("parseCreated(%q) = %d, %v; want %d (error: %t)", tc.in, got, err, tc.want, tc.bad)
		}
	}
}

func TestJournalSync(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		want time.Duration
	}{
		{"listen: x\n", 5 * time.Millisecond},
		{"settle_journal_sync: 100ms\n", 100 * time.Millisecond},
		{"settle: journal\nsettle_journal_sync: 1s\n", time.Second},
	} {
		c, err := Parse([]byte(tc.yaml))
		if err != nil {
			t.Fatal(err)
		}
		if got := c.JournalSync(); got != tc.want {
			t.Errorf("%q: journal sync %s, want %s", tc.yaml, got, tc.want)
		}
	}
}
