package manifest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/abi"
)

const good = `{"name":"openai","version":"1.0.0","abi":1,"kind":"adapter","hooks":["chat_request","error"],"passthrough":["error"],"grants":{"host_functions":["log"]},"limits":{"memory_pages":128,"timeout_ms":50,"pool_size":4}}`

func TestParse(t *testing.T) {
	m, err := Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if m.Runtime != RuntimeNative || m.Limits.PoolSize != 4 || !m.GrantsHostFunction("log") {
		t.Fatalf("parsed %+v", m)
	}
	d, err := Parse([]byte(`{"name":"x","version":"0.1.0","abi":1,"kind":"plugin","hooks":["pre_request"],"grants":{},"limits":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	if d.Limits.MemoryPages != DefaultMemoryPages || d.Limits.PoolSize != DefaultPoolSize || d.Limits.TimeoutMS != 0 {
		t.Fatalf("defaults not applied: %+v", d.Limits)
	}
	n, err := Parse([]byte(strings.Replace(good, `"passthrough"`, `"native":{"chat_request":"openai-chat/1"},"passthrough"`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if n.Native["chat_request"] != "openai-chat/1" {
		t.Fatalf("native: %v", n.Native)
	}
}

// TestGrantsHostFunction: each import name maps to its grant; result comes
// with any of the functions whose results it copies.
func TestGrantsHostFunction(t *testing.T) {
	cases := []struct {
		grants string
		yes    []string
		no     []string
	}{
		{`["kv"]`, []string{"kv", "kv_get", "kv_put", "result"}, []string{"chat", "count_tokens", "http_request", "log"}},
		{`["chat"]`, []string{"chat", "result"}, []string{"kv_get", "count_tokens"}},
		{`["count_tokens"]`, []string{"count_tokens", "result"}, []string{"chat", "kv_put"}},
		{`["http","log"]`, []string{"http_request", "http_response", "log"}, []string{"result", "chat", "kv_get"}},
		{`[]`, nil, []string{"result", "log", "http_request", "chat", "count_tokens", "kv_get", "kv_put"}},
	}
	for _, tc := range cases {
		m, err := Parse([]byte(strings.Replace(good, `["log"]`, tc.grants, 1)))
		if err != nil {
			t.Fatalf("%s: %v", tc.grants, err)
		}
		for _, f := range tc.yes {
			if !m.GrantsHostFunction(f) {
				t.Errorf("grants %s: %s should be granted", tc.grants, f)
			}
		}
		for _, f := range tc.no {
			if m.GrantsHostFunction(f) {
				t.Errorf("grants %s: %s should not be granted", tc.grants, f)
			}
		}
	}
	m, err := Parse([]byte(strings.Replace(good, `["log"]`, `["http"],"secrets":["EXA_API_KEY"]`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if !m.GrantsSecret("EXA_API_KEY") || m.GrantsSecret("BRAVE_KEY") {
		t.Errorf("GrantsSecret: got %v/%v", m.GrantsSecret("EXA_API_KEY"), m.GrantsSecret("BRAVE_KEY"))
	}
}

func TestParseRejects(t *testing.T) {
	cases := []struct{ name, edit, want string }{
		{"not json", `{`, "manifest"},
		{"unknown field", strings.Replace(good, `"abi":1`, `"abi":1,"grant":{}`, 1), "unknown field"},
		{"abi version", strings.Replace(good, `"abi":1`, `"abi":2`, 1), "ABI version 2 is not supported"},
		{"bad name", strings.Replace(good, `"openai"`, `"Open AI"`, 1), "name"},
		{"bad version", strings.Replace(good, `"1.0.0"`, `"v1"`, 1), "semantic"},
		{"bad kind", strings.Replace(good, `"adapter"`, `"filter"`, 1), "kind"},
		{"bad runtime", strings.Replace(good, `"kind"`, `"runtime":"wasmer","kind"`, 1), "runtime"},
		{"no hooks", strings.Replace(good, `["chat_request","error"]`, `[]`, 1), "at least one hook"},
		{"unknown hook", strings.Replace(good, `"chat_request",`, `"chat_requests",`, 1), "unknown hook"},
		{"duplicate hook", strings.Replace(good, `"chat_request","error"`, `"error","error"`, 1), "twice"},
		{"passthrough not declared", strings.Replace(good, `"passthrough":["error"]`, `"passthrough":["chat_response"]`, 1), "passthrough"},
		{"native hook not declared", strings.Replace(good, `"passthrough"`, `"native":{"embed_request":"openai-embed/1"},"passthrough"`, 1), "native"},
		{"native hook is passthrough", strings.Replace(good, `"passthrough"`, `"native":{"error":"openai-error/1"},"passthrough"`, 1), "passthrough, so the host never calls it"},
		{"native name", strings.Replace(good, `"passthrough"`, `"native":{"chat_request":"OpenAI Chat"},"passthrough"`, 1), "native"},
		{"plugin hook on an adapter", strings.Replace(good, `"chat_request",`, `"pre_request",`, 1), "not a hook of kind adapter"},
		{"unknown grant", strings.Replace(good, `["log"]`, `["fs"]`, 1), "unknown host function"},
		{"metrics without the grant", withMetrics(`["log"]`, `[{"name":"a_total","type":"counter","help":"A."}]`), "grant host function \"metrics\""},
		{"metrics grant without metrics", withMetrics(`["metrics"]`, `[]`), "declare the metrics"},
		{"metric name", withMetrics(`["metrics"]`, `[{"name":"A-total","type":"counter","help":"A."}]`), "name"},
		{"metric twice", withMetrics(`["metrics"]`, `[{"name":"a_total","type":"counter","help":"A."},{"name":"a_total","type":"counter","help":"B."}]`), "twice"},
		{"metric help", withMetrics(`["metrics"]`, `[{"name":"a_total","type":"counter","help":""}]`), "help"},
		{"counter name", withMetrics(`["metrics"]`, `[{"name":"a","type":"counter","help":"A."}]`), "_total"},
		{"counter buckets", withMetrics(`["metrics"]`, `[{"name":"a_total","type":"counter","help":"A.","buckets":[1]}]`), "no buckets"},
		{"histogram buckets", withMetrics(`["metrics"]`, `[{"name":"a_seconds","type":"histogram","help":"A.","buckets":[2,1]}]`), "increasing"},
		{"histogram no buckets", withMetrics(`["metrics"]`, `[{"name":"a_seconds","type":"histogram","help":"A."}]`), "buckets"},
		{"histogram name", withMetrics(`["metrics"]`, `[{"name":"a_count","type":"histogram","help":"A.","buckets":[1]}]`), "must not end"},
		{"metric type", withMetrics(`["metrics"]`, `[{"name":"a_total","type":"gauge","help":"A."}]`), "counter or histogram"},
		{"kv_get is not a grant name", strings.Replace(good, `["log"]`, `["kv_get"]`, 1), "unknown host function"},
		{"secret name lower case", strings.Replace(good, `["log"]`, `["log","http"],"secrets":["exa_key"]`, 1), "grants.secrets"},
		{"secret name with a brace", strings.Replace(good, `["log"]`, `["log","http"],"secrets":["EXA}"]`, 1), "grants.secrets"},
		{"secret without http", strings.Replace(good, `["log"]`, `["log"],"secrets":["EXA_API_KEY"]`, 1), "grant host function \"http\""},
		{"memory too big", strings.Replace(good, `"memory_pages":128`, `"memory_pages":70000`, 1), "memory_pages"},
		{"timeout negative", strings.Replace(good, `"timeout_ms":50`, `"timeout_ms":-1`, 1), "timeout_ms"},
		{"pool negative", strings.Replace(good, `"pool_size":4`, `"pool_size":-4`, 1), "pool_size"},
		{"trailing data", good + `{}`, "trailing"},
		{"bad schema", strings.Replace(good, `"limits"`, `"config_schema":"x","limits"`, 1), ""},
		{"unknown capability", strings.Replace(good, `"limits"`, `"capabilities":["file_input","messages_nativ"],"limits"`, 1), "unknown capability \"messages_nativ\""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.edit))
			if err == nil {
				if tc.want == "" {
					return // a JSON string is valid JSON for a schema slot
				}
				t.Fatalf("accepted %s", tc.edit)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}

const toolModule = `{"name":"datetime","version":"1.0.0","abi":1,"kind":"plugin","hooks":["tool_call"],"tools":[{"type":"service:datetime","name":"datetime","description":"Current time","parameters":{"type":"object"}}]}`

func TestTools(t *testing.T) {
	m, err := Parse([]byte(toolModule))
	if err != nil {
		t.Fatal(err)
	}
	if tl := m.Tool("service:datetime"); tl == nil || tl.Name != "datetime" || m.Tool("service:web_search") != nil {
		t.Fatalf("Tool lookup: %+v", m.Tools)
	}
	cases := []struct{ name, edit, want string }{
		{"tools without the hook", strings.Replace(toolModule, `"tool_call"`, `"pre_request"`, 1), `must list the "tool_call" hook`},
		{"hook without tools", strings.Replace(toolModule, `,"tools":[{"type":"service:datetime","name":"datetime","description":"Current time","parameters":{"type":"object"}}]`, ``, 1), "needs at least one entry in tools"},
		{"type without prefix", strings.Replace(toolModule, `"service:datetime"`, `"datetime"`, 1), "tools[0].type"},
		{"bad name", strings.Replace(toolModule, `"name":"datetime","desc`, `"name":"date time","desc`, 1), "tools[0].name"},
		{"no description", strings.Replace(toolModule, `"Current time"`, `" "`, 1), "tools[0].description"},
		{"parameters not an object", strings.Replace(toolModule, `{"type":"object"}`, `[]`, 1), "tools[0].parameters"},
		{"parameters missing", strings.Replace(toolModule, `,"parameters":{"type":"object"}`, ``, 1), "tools[0].parameters"},
		{"parameters not a schema", strings.Replace(toolModule, `{"type":"object"}`, `{"type":"objekt"}`, 1), "tools[0].parameters: not a valid JSON Schema"},
		{"parameters with a remote $ref", strings.Replace(toolModule, `{"type":"object"}`, `{"$ref":"https://example.com/s.json"}`, 1), "tools[0].parameters: not a valid JSON Schema"},
		{"negative max_fee", strings.Replace(toolModule, `"description":"Current time"`, `"max_fee":-1,"description":"Current time"`, 1), "tools[0].max_fee"},
		{"declared twice", strings.Replace(toolModule, `}]}`, `},{"type":"service:datetime","name":"clock","description":"x","parameters":{}}]}`, 1), "declared twice"},
		{"negative plugin max_fee", strings.Replace(toolModule, `"kind":"plugin"`, `"kind":"plugin","max_fee":-0.5`, 1), "max_fee: -0.5"},
		{"max_fee on an adapter", `{"name":"a","version":"1.0.0","abi":1,"kind":"adapter","max_fee":0,"hooks":["chat_request"]}`, "on a plugin"},
		{"tool_call on an adapter", strings.Replace(toolModule, `"plugin"`, `"adapter"`, 1), "not a hook of kind adapter"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.edit))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse(%s) = %v, want an error mentioning %q", tc.edit, err, tc.want)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(good))
	f.Add([]byte(`{"name":"a","version":"1.0.0","abi":1,"kind":"plugin","hooks":["post_chunk"]}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse(data)
		if err != nil {
			return
		}
		// Whatever is accepted is fully valid and defaulted.
		if m.ABI != 1 || len(m.Hooks) == 0 || m.Limits.PoolSize < 1 || m.Limits.MemoryPages < 1 || m.Runtime == "" {
			t.Fatalf("accepted an invalid manifest: %+v", m)
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("revalidation failed: %v", err)
		}
	})
}

func TestGrantsDomain(t *testing.T) {
	cases := []struct {
		grants []string
		host   string
		want   bool
	}{
		{[]string{"api.example.com"}, "api.example.com", true},
		{[]string{"api.example.com"}, "example.com", false},
		{[]string{"*.example.com"}, "a.example.com", true},
		{[]string{"*.example.com"}, "example.com", false},
		{[]string{"*"}, "anything.org", true},
		{nil, "anything.org", false},
	}
	for _, tc := range cases {
		m := &Manifest{Grants: Grants{HTTPDomains: tc.grants}}
		if got := m.GrantsDomain(tc.host); got != tc.want {
			t.Errorf("grants %v, host %s: got %v, want %v", tc.grants, tc.host, got, tc.want)
		}
	}
	for _, d := range []string{"*", "*.example.com", "example.com"} {
		if _, err := Parse([]byte(strings.Replace(good, `"grants":{"host_functions":["log"]}`, `"grants":{"http_domains":["`+d+`"]}`, 1))); err != nil {
			t.Errorf("http_domains %q refused: %v", d, err)
		}
	}
	if _, err := Parse([]byte(strings.Replace(good, `"grants":{"host_functions":["log"]}`, `"grants":{"host_functions":["http"],"http_domains":["*"],"secrets":["EXA_API_KEY"]}`, 1))); err == nil || !strings.Contains(err.Error(), "secrets") {
		t.Errorf("every domain with a secret accepted: %v", err)
	}
	for _, d := range []string{"**", "*example.com", "a.*.com"} {
		if _, err := Parse([]byte(strings.Replace(good, `"grants":{"host_functions":["log"]}`, `"grants":{"http_domains":["`+d+`"]}`, 1))); err == nil {
			t.Errorf("http_domains %q accepted", d)
		}
	}
}

// An adapter may declare both capabilities.
func TestCapabilities(t *testing.T) {
	m, err := Parse([]byte(strings.Replace(good, `"limits"`, `"capabilities":["file_input","messages_native"],"limits"`, 1)))
	if err != nil || len(m.Capabilities) != 2 || m.Capabilities[1] != CapabilityMessagesNative {
		t.Fatalf("%v %v", m, err)
	}
}

// An adapter lists the API forms it speaks; a provider with one gets
// even its passthrough hooks called.
func TestAPIs(t *testing.T) {
	m, err := Parse([]byte(strings.Replace(good, `"limits"`, `"apis":["deepseek","vertex"],"limits"`, 1)))
	if err != nil || !m.SpeaksAPI("deepseek") || m.SpeaksAPI("mistral") {
		t.Fatalf("%v %v", m, err)
	}
	if !m.PassthroughFor(abi.HookError, "") || m.PassthroughFor(abi.HookError, "deepseek") || m.PassthroughFor(abi.HookChatRequest, "") {
		t.Error("PassthroughFor")
	}
	for _, bad := range []string{`"apis":["Deep Seek"]`, `"apis":[""]`} {
		if _, err := Parse([]byte(strings.Replace(good, `"limits"`, bad+`,"limits"`, 1))); err == nil || !strings.Contains(err.Error(), "apis") {
			t.Errorf("%s accepted", bad)
		}
	}
}

// A plugin declares the roles it plays in the request flow; an unknown
// role, or a role on an adapter, is refused.
func TestRoles(t *testing.T) {
	plugin := `{"name":"my-cache","version":"1.0.0","abi":1,"kind":"plugin","hooks":["pre_request"],"grants":{},"limits":{}%s}`
	m, err := Parse([]byte(fmt.Sprintf(plugin, `,"roles":["cache","compression"]`)))
	if err != nil || !m.HasRole(RoleCache) || !m.HasRole(RoleCompression) || m.HasRole(RoleModeration) {
		t.Fatalf("%v %v", m, err)
	}
	for _, bad := range []string{
		fmt.Sprintf(plugin, `,"roles":["janitor"]`),
		strings.Replace(good, `"limits"`, `"roles":["cache"],"limits"`, 1),
	} {
		if _, err := Parse([]byte(bad)); err == nil || !strings.Contains(err.Error(), "roles") {
			t.Errorf("%s accepted: %v", bad, err)
		}
	}
}

// withMetrics is good with host functions fns and metrics declared.
func withMetrics(fns, metrics string) string {
	return strings.Replace(good, `"grants":{"host_functions":["log"]}`, `"grants":{"host_functions":`+fns+`},"metrics":`+metrics, 1)
}

// A declared metric parses and is found by name; the grant lets the
// module import metric and result.
func TestMetrics(t *testing.T) {
	m, err := Parse([]byte(withMetrics(`["metrics"]`, `[{"name":"a_total","type":"counter","help":"A."},{"name":"b_seconds","type":"histogram","help":"B.","buckets":[0.1,1]}]`)))
	if err != nil {
		t.Fatal(err)
	}
	if d := m.MetricNamed("b_seconds"); d == nil || d.Type != MetricHistogram || len(d.Buckets) != 2 {
		t.Fatalf("b_seconds: %+v", d)
	}
	if m.MetricNamed("c_total") != nil {
		t.Fatal("an undeclared metric was found")
	}
	if !m.GrantsHostFunction("metric") || !m.GrantsHostFunction("result") || m.GrantsHostFunction("kv_get") {
		t.Fatal("the metrics grant grants metric and result only")
	}
}

// An adapter caps the inputs one upstream embeddings call takes, by a
// part of the model id; the cap must be at least 1, on an adapter with an
// embed_request hook.
func TestEmbedInputs(t *testing.T) {
	embedder := strings.Replace(good, `"hooks":["chat_request","error"]`, `"hooks":["chat_request","embed_request","error"]`, 1)
	m, err := Parse([]byte(strings.Replace(embedder, `"limits"`, `"embed_inputs":{"titan-embed":1,"embed":8},"limits"`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	for model, want := range map[string]int{"amazon.titan-embed-text-v2:0": 1, "cohere.embed-english-v3": 8, "anthropic.claude": 0} {
		if got := m.MaxEmbedInputs(model); got != want {
			t.Errorf("MaxEmbedInputs(%s) = %d, want %d", model, got, want)
		}
	}
	for name, doc := range map[string]string{
		"zero":             strings.Replace(embedder, `"limits"`, `"embed_inputs":{"titan-embed":0},"limits"`, 1),
		"empty key":        strings.Replace(embedder, `"limits"`, `"embed_inputs":{"":1},"limits"`, 1),
		"no embed_request": strings.Replace(good, `"limits"`, `"embed_inputs":{"titan-embed":1},"limits"`, 1),
	} {
		if _, err := Parse([]byte(doc)); err == nil || !strings.Contains(err.Error(), "embed_inputs") {
			t.Errorf("%s: accepted (%v)", name, err)
		}
	}
}
