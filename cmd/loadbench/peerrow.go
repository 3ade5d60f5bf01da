package main

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"
)

// peerRows prints the Messages row of peerbench's headline table
// (../shared/peerbench/summarize.py: added p50 and p99 with one client,
// gateway CPU µs per request with conc clients, each the median over
// rounds) beside the chat row, both on the same Anthropic-format fake
// upstream: chat is translated to Messages by the anthropic adapter,
// Messages goes through natively. The direct baseline of both rows is the
// same Messages request sent to the fake itself, so the rows differ only
// by what the gateway does. It is here and not in peerbench because
// peerbench's load generator speaks chat only and checks every answer's
// OpenAI "choices" (docs/performance.md).
func peerRows(client *http.Client, rounds, n, conc int, dur time.Duration) {
	g := startFrontDoors()
	defer g.Close()
	anthUp := g.UpstreamURL["anth"] + "/messages"
	anthHeaders := map[string]string{"x-api-key": anthKey, "anthropic-version": "2023-06-01"}
	pad := strings.Repeat("lorem ipsum ", 80)

	type row struct {
		a50, a99, cpu []float64
		ratio         []float64 // cpu ÷ the chat row of the same kind, in the same round
		allocs        float64   // heap allocations per request, gateway − direct
	}
	type scenario struct {
		name            string
		direct, through func() error
	}
	var scs []scenario
	for _, stream := range []bool{false, true} {
		chat := fmt.Appendf(nil, `{"model":"test/claude","stream":%t,"max_tokens":256,"messages":[{"role":"system","content":%q},{"role":"user","content":"Say hello."}]}`, stream, pad)
		msg := func(model string) []byte {
			return fmt.Appendf(nil, `{"model":%q,"stream":%t,"max_tokens":256,"system":%q,"messages":[{"role":"user","content":"Say hello."}]}`, model, stream, pad)
		}
		up, gw := msg("claude-test-1"), msg("test/claude")
		direct := func() error { return doHeaders(client, anthUp, "", up, anthHeaders) }
		kind := map[bool]string{false: "json", true: "stream"}[stream]
		scs = append(scs,
			scenario{"chat " + kind, direct, func() error { return do(client, g.URL+"/chat/completions", g.Key, chat) }},
			scenario{"messages " + kind, direct, func() error { return do(client, g.URL+"/messages", g.Key, gw) }})
	}
	rows := make([]row, len(scs))
	for i, sc := range scs {
		for j := 0; j < 200; j++ {
			must(sc.direct())
			must(sc.through())
		}
		da, _ := allocsPerRequest(n, sc.direct)
		wa, _ := allocsPerRequest(n, sc.through)
		rows[i].allocs = wa - da
	}
	// Rounds interleave the scenarios, as peerbench's rounds interleave the
	// gateways: a minute of heavier load on the machine lands on every row.
	for r := 0; r < rounds; r++ {
		for i, sc := range scs {
			dl, wl := latencies(n, sc.direct), latencies(n, sc.through)
			dcpu, _ := cpuPerRequest(conc, dur, sc.direct)
			wcpu, _ := cpuPerRequest(conc, dur, sc.through)
			rows[i].a50 = append(rows[i].a50, float64(pct(wl, 50)-pct(dl, 50)))
			rows[i].a99 = append(rows[i].a99, float64(pct(wl, 99)-pct(dl, 99)))
			rows[i].cpu = append(rows[i].cpu, wcpu-dcpu)
			rows[i].ratio = append(rows[i].ratio, rows[i].cpu[r]/rows[i&^1].cpu[r]) // chat, then messages
		}
	}
	fmt.Printf("\npeerbench headline rows on the Anthropic-format fake (median of %d rounds; %d requests at c=1, %d clients × %s for CPU)\n", rounds, n, conc, dur)
	fmt.Printf("| gateway | scenario | added p50, c=1 (ms) | added p99, c=1 (ms) | gateway CPU µs/req (c=%d) | ÷ chat | gateway allocs/req |\n", conc)
	fmt.Println("|---|---|---|---|---|---|---|")
	for i, sc := range scs {
		fmt.Printf("| switchyard | %s | %.2f | %.2f | %.0f | %.2f× | %.0f |\n", sc.name,
			median(rows[i].a50)/1e6, median(rows[i].a99)/1e6, median(rows[i].cpu), median(rows[i].ratio), rows[i].allocs)
	}
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
