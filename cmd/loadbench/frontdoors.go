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
func frontDoorScenarios(client *http.Client, only string, rounds, n, conc int, dur time.Duration) {
	g := startFrontDoors()
	defer g.Close()
	chatUp, anthUp := g.UpstreamURL["bench"]+"/chat/completions", g.UpstreamURL["anth"]+"/messages"

	type scenario struct {
		name            string
		direct, through func() error
	}
	var scs []scenario
	for _, stream := range []bool{false, true} {
		pad := strings.Repeat("lorem ipsum ", 80)
		chatBody := func(model string) []byte {
			return fmt.Appendf(nil, `{"model":%q,"stream":%t,"max_tokens":256,"messages":[{"role":"system","content":%q},{"role":"user","content":"Say hello."}]}`, model, stream, pad)
		}
		msgBody := func(model string) []byte {
			return fmt.Appendf(nil, `{"model":%q,"stream":%t,"max_tokens":256,"system":%q,"messages":[{"role":"user","content":"Say hello."}]}`, model, stream, pad)
		}
		chatUpBody, chatGwBody := chatBody("echo"), chatBody("test/large")
		msgGwBody, msgNativeGwBody, msgUpBody := msgBody("test/large"), msgBody("test/claude"), msgBody("claude-test-1")
		respBody := fmt.Appendf(nil, `{"model":"test/large","stream":%t,"max_output_tokens":256,"store":false,"instructions":%q,"input":"Say hello."}`, stream, pad)
		anthHeaders := map[string]string{"x-api-key": anthKey, "anthropic-version": "2023-06-01"}
		kind := map[bool]string{false: "json", true: "stream"}[stream]
		directChat := func() error { return do(client, chatUp, "", chatUpBody) }
		// The chat row of each kind comes first: the others are divided by it.
		scs = append(scs,
			scenario{"chat " + kind, directChat,
				func() error { return do(client, g.URL+"/chat/completions", g.Key, chatGwBody) }},
			scenario{"messages " + kind + " (translated)", directChat,
				func() error { return doHeaders(client, g.URL+"/messages", g.Key, msgGwBody, nil) }},
			scenario{"messages " + kind + " (native)",
				func() error { return doHeaders(client, anthUp, "", msgUpBody, anthHeaders) },
				func() error { return doHeaders(client, g.URL+"/messages", g.Key, msgNativeGwBody, nil) }},
			scenario{"responses " + kind + " (translated)", directChat,
				func() error { return do(client, g.URL+"/responses", g.Key, respBody) }})
	}
	type row struct {
		a50, a99          []float64
		cpu1, cpuN        []float64 // gateway CPU µs/request with 1 and conc clients
		ratio1, ratioN    []float64 // ÷ the chat row of the same kind, in the same round
		allocs, kilobytes float64
		selected          bool
	}
	rows := make([]row, len(scs))
	for i, sc := range scs {
		// The chat rows always run: the others are read against them.
		rows[i].selected = strings.HasPrefix(sc.name, "chat ") || strings.Contains(sc.name, only)
		if !rows[i].selected {
			continue
		}
		for j := 0; j < 200; j++ {
			must(sc.direct())
			must(sc.through())
		}
		da, db := allocsPerRequest(n, sc.direct)
		wa, wb := allocsPerRequest(n, sc.through)
		rows[i].allocs, rows[i].kilobytes = wa-da, (wb-db)/1024
	}
	// Rounds interleave the scenarios: a minute of heavier load on the
	// machine (2 cores shared with other work) lands on every row, and
	// each ratio is taken within its round.
	for r := 0; r < rounds; r++ {
		for i, sc := range scs {
			if !rows[i].selected {
				continue
			}
			dl, wl := latencies(n, sc.direct), latencies(n, sc.through)
			d1, _ := cpuPerRequest(1, dur, sc.direct)
			w1, _ := cpuPerRequest(1, dur, sc.through)
			dN, _ := cpuPerRequest(conc, dur, sc.direct)
			wN, _ := cpuPerRequest(conc, dur, sc.through)
			rw := &rows[i]
			rw.a50 = append(rw.a50, float64(pct(wl, 50)-pct(dl, 50)))
			rw.a99 = append(rw.a99, float64(pct(wl, 99)-pct(dl, 99)))
			rw.cpu1, rw.cpuN = append(rw.cpu1, w1-d1), append(rw.cpuN, wN-dN)
			chat := &rows[i/4*4]
			rw.ratio1 = append(rw.ratio1, rw.cpu1[r]/chat.cpu1[r])
			rw.ratioN = append(rw.ratioN, rw.cpuN[r]/chat.cpuN[r])
		}
	}
	fmt.Printf("\nfront doors: the same 1 KB conversation on each; gateway CPU = through the gateway − direct; median of %d rounds\n", rounds)
	fmt.Printf("%-34s %10s %10s %12s %8s %12s %8s %10s %8s\n", "scenario", "added p50", "added p99",
		"CPU µs c=1", "÷ chat", fmt.Sprintf("CPU µs c=%d", conc), "÷ chat", "gw allocs", "gw KB")
	for i, sc := range scs {
		rw := rows[i]
		if !rw.selected {
			continue
		}
		fmt.Printf("%-34s %10s %10s %12.1f %7.2f× %12.1f %7.2f× %10.0f %8.1f\n", sc.name,
			fmtDur(time.Duration(median(rw.a50))), fmtDur(time.Duration(median(rw.a99))),
			median(rw.cpu1), median(rw.ratio1), median(rw.cpuN), median(rw.ratioN), rw.allocs, rw.kilobytes)
	}
}
