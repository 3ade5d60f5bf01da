package main

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/switchyard/switchyard/host/gatewaytest"
)

// anthKey is the fake Anthropic upstream's key.
const anthKey = "sk-ant-loadbench"

// startFrontDoors starts a gateway with test/large on the OpenAI-format
// fake "bench" and test/claude on the Anthropic-format fake "anth".
func startFrontDoors() *gatewaytest.Gateway {
	yml := gatewaytest.DefaultYAML([]string{"bench"}) +
		"  - id: test/large\n    kind: chat\n    context_length: 128000\n    endpoints:\n" +
		"      - {provider: bench, upstream_model: echo, max_output: 1024, price: {prompt: 1, completion: 2}}\n" +
		"  - id: test/claude\n    kind: chat\n    context_length: 200000\n    endpoints:\n" +
		"      - {provider: anth, upstream_model: claude-test-1, max_output: 8192, price: {prompt: 3, completion: 15}}\n"
	yml = strings.Replace(yml, "models:\n",
		"  - {slug: anth, name: Anthropic, adapter: anthropic, base_url: \"{{url:anth}}\", api_key_env: ANTH_KEY, data_collection: deny, region: us}\nmodels:\n", 1)
	g, err := gatewaytest.Start(gatewaytest.Options{Providers: []string{"bench"}, Anthropic: []string{"anth"},
		ConfigYAML: yml, Env: map[string]string{"ANTH_KEY": anthKey}, Quiet: true})
	must(err)
	return g
}

// frontDoorScenarios measures what each front door costs the gateway for
// the same conversation (issue 33: the Messages row within 1.2× of chat):
// chat completions; Anthropic Messages translated to a chat upstream;
// Messages passed through to an Anthropic-format upstream (native mode);
// OpenAI Responses translated to a chat upstream. Gateway CPU per request
// = process CPU per request through the gateway − process CPU per request
// of the same upstream call made directly (the load generator and the fake
// upstream cost the same in both), as in clusterScenarios. Only the
// scenarios whose name contains only run ("" runs all).
func frontDoorScenarios(client *http.Client, only string, n, conc int, dur time.Duration) {
	g := startFrontDoors()
	defer g.Close()
	chatUp, anthUp := g.UpstreamURL["bench"]+"/chat/completions", g.UpstreamURL["anth"]+"/messages"

	fmt.Printf("\nfront doors: the same 1 KB conversation on each (gateway CPU = through the gateway − direct, %d clients)\n", conc)
	fmt.Printf("%-34s %10s %10s %14s %10s %12s %12s\n", "scenario", "added p50", "added p99", "gw CPU µs/req", "÷ chat", "gw allocs", "gw KB")
	for _, stream := range []bool{false, true} {
		pad := strings.Repeat("lorem ipsum ", 80)
		chatBody := func(model string) []byte {
			return fmt.Appendf(nil, `{"model":%q,"stream":%t,"max_tokens":256,"messages":[{"role":"system","content":%q},{"role":"user","content":"Say hello."}]}`, model, stream, pad)
		}
		msgBody := func(model string) []byte {
			return fmt.Appendf(nil, `{"model":%q,"stream":%t,"max_tokens":256,"system":%q,"messages":[{"role":"user","content":"Say hello."}]}`, model, stream, pad)
		}
		respBody := fmt.Appendf(nil, `{"model":"test/large","stream":%t,"max_output_tokens":256,"store":false,"instructions":%q,"input":"Say hello."}`, stream, pad)
		anthHeaders := map[string]string{"x-api-key": anthKey, "anthropic-version": "2023-06-01"}
		kind := map[bool]string{false: "json", true: "stream"}[stream]
		chatCPU := 0.0
		for _, sc := range []struct {
			name            string
			direct, through func() error
		}{
			{"chat " + kind,
				func() error { return do(client, chatUp, "", chatBody("echo")) },
				func() error { return do(client, g.URL+"/chat/completions", g.Key, chatBody("test/large")) }},
			{"messages " + kind + " (translated)",
				func() error { return do(client, chatUp, "", chatBody("echo")) },
				func() error { return doHeaders(client, g.URL+"/messages", g.Key, msgBody("test/large"), nil) }},
			{"messages " + kind + " (native)",
				func() error { return doHeaders(client, anthUp, "", msgBody("claude-test-1"), anthHeaders) },
				func() error { return doHeaders(client, g.URL+"/messages", g.Key, msgBody("test/claude"), nil) }},
			{"responses " + kind + " (translated)",
				func() error { return do(client, chatUp, "", chatBody("echo")) },
				func() error { return do(client, g.URL+"/responses", g.Key, respBody) }},
		} {
			if !strings.Contains(sc.name, only) {
				continue
			}
			for i := 0; i < 200; i++ {
				must(sc.direct())
				must(sc.through())
			}
			dl, wl := latencies(n, sc.direct), latencies(n, sc.through)
			directCPU, _ := cpuPerRequest(conc, dur, sc.direct)
			cpu, _ := cpuPerRequest(conc, dur, sc.through)
			cpu -= directCPU
			da, db := allocsPerRequest(n, sc.direct)
			wa, wb := allocsPerRequest(n, sc.through)
			if chatCPU == 0 {
				chatCPU = cpu
			}
			fmt.Printf("%-34s %10s %10s %14.1f %9.2f× %12.0f %12.1f\n", sc.name, fmtDur(pct(wl, 50)-pct(dl, 50)), fmtDur(pct(wl, 99)-pct(dl, 99)), cpu, cpu/chatCPU, wa-da, (wb-db)/1024)
		}
	}
}
