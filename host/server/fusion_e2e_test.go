package server_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/demo"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/gjson"
)

// The fusion plugin (plugins/fusion) over loopback: a panel on fake
// upstreams in the three wire formats, each model with its own answer and
// price, a judge on a fourth, and the ledger.

const fusionYAML = `demo: false
timeouts: {attempt: 5s, request: 30s}
keep_alive: 50ms
providers:
  - {slug: oa, name: OpenAI, adapter: openai, base_url: "{{url:oa}}", data_collection: deny, region: us}
  - {slug: jd, name: Judge, adapter: openai, base_url: "{{url:jd}}", data_collection: deny, region: us}
  - {slug: bad, name: Bad, adapter: openai, base_url: "{{url:bad}}", data_collection: deny, region: us}
  - {slug: anth, name: Anthropic, adapter: anthropic, base_url: "{{url:anth}}", api_key_env: ANTH_KEY, data_collection: deny, region: us,
     supported_parameters: [temperature, top_p, top_k, max_tokens, max_completion_tokens, stop, tools, tool_choice, parallel_tool_calls, reasoning, reasoning_effort, user]}
  - {slug: gem, name: Google, adapter: gemini, base_url: "{{url:gem}}", api_key_env: GEM_KEY, data_collection: deny, region: us,
     supported_parameters: [temperature, top_p, top_k, max_tokens, max_completion_tokens, stop, seed, tools, tool_choice, response_format, reasoning, reasoning_effort]}
models:
  - id: test/sage
    kind: chat
    context_length: 32768
    endpoints: [{provider: oa, upstream_model: echo-sage, max_output: 2048, price: {prompt: 1, completion: 2}}]
  - id: test/claude
    kind: chat
    context_length: 32768
    endpoints: [{provider: anth, upstream_model: claude-test-1, max_output: 2048, price: {prompt: 3, completion: 15}}]
  - id: test/gemini
    kind: chat
    context_length: 32768
    endpoints: [{provider: gem, upstream_model: gemini-test, max_output: 2048, price: {prompt: 0.3, completion: 2.5}}]
  - id: test/judge
    kind: chat
    context_length: 32768
    endpoints: [{provider: jd, upstream_model: echo-judge, max_output: 2048, price: {prompt: 0.5, completion: 1}}]
  - id: test/badjudge
    kind: chat
    context_length: 32768
    endpoints: [{provider: bad, upstream_model: echo-bad, max_output: 2048, price: {prompt: 0.5, completion: 1}}]
module_settings:
  fusion:
    panel: [test/sage, test/claude, test/gemini]
    judge: test/judge
    presets:
      general-fast: {analysis_models: [test/gemini, test/sage], model: test/sage}
    max_tokens: 512
    judge_max_tokens: 512
    final_max_tokens: 512
`

func startFusion(t *testing.T, credits float64) *gatewaytest.Gateway {
	t.Helper()
	return start(t, gatewaytest.Options{ConfigYAML: fusionYAML, Providers: []string{"oa", "jd", "bad"},
		Anthropic: []string{"anth"}, Gemini: []string{"gem"}, Credits: credits,
		Env: map[string]string{"ANTH_KEY": "sk-ant-test-0123456789", "GEM_KEY": "AIza-test-key-0123456789"}})
}

func fusionBody(user, plugin, extra string) string {
	if plugin == "" {
		plugin = `{"id":"fusion"}`
	}
	return `{"model":"test/sage","messages":[{"role":"user","content":` + strconv.Quote(user) + `}],"plugins":[` + plugin + `]` + extra + `}`
}

// fusionStage is the fusion plugin's entry of service_metadata.pipeline.
func fusionStage(t *testing.T, meta gjson.Result) gjson.Result {
	t.Helper()
	for _, s := range meta.Get("pipeline").Array() {
		if s.Get("name").Str == "fusion" {
			return s
		}
	}
	t.Fatalf("no fusion stage in %s", meta.Raw)
	return gjson.Result{}
}

// upstreamCount is every request the fake upstreams received.
func upstreamCount(g *gatewaytest.Gateway) int64 {
	n := g.Anthropics["anth"].Count() + g.Geminis["gem"].Count()
	for _, u := range g.Upstreams {
		n += u.Count()
	}
	return n
}

// subRecords reads the generation records of a request's sub-requests
// (<id>-sub1…), the turns of a member's server-tool loop included
// (<id>-subN-2…): their charge and tokens summed.
func subRecords(t *testing.T, g *gatewaytest.Gateway, id string) (recs []gjson.Result, cost billing.Nanos, prompt, completion int64) {
	t.Helper()
	for i := 1; ; i++ {
		sid := id + "-sub" + strconv.Itoa(i)
		if _, err := g.Ledger.Generation(sid); err != nil {
			break
		}
		for turn := 1; ; turn++ {
			tid := sid
			if turn > 1 {
				tid += "-" + strconv.Itoa(turn)
			}
			if _, err := g.Ledger.Generation(tid); err != nil {
				break
			}
			rec := generation(t, g, g.Key, tid)
			recs = append(recs, rec)
			cost += usd(t, rec.Get("total_cost"))
			prompt += rec.Get("tokens.prompt_tokens").Int()
			completion += rec.Get("tokens.completion_tokens").Int()
		}
	}
	return recs, cost, prompt, completion
}

// wantFusionSums checks that the answer's usage is every call's, that the
// ledger's records say the same, and that the account was charged that.
func wantFusionSums(t *testing.T, g *gatewaytest.Gateway, id string, usage gjson.Result, before billing.Balance, wantRecords int) {
	t.Helper()
	if err := g.Ledger.Sync(); err != nil {
		t.Fatal(err)
	}
	recs, cost, prompt, completion := subRecords(t, g, id)
	if len(recs) != wantRecords {
		t.Fatalf("%d generation records, want %d", len(recs), wantRecords)
	}
	if got := usd(t, usage.Get("cost")); got != cost || cost <= 0 {
		t.Fatalf("usage.cost %s, records sum %s", got, cost)
	}
	if usage.Get("prompt_tokens").Int() != prompt || usage.Get("completion_tokens").Int() != completion {
		t.Fatalf("usage %s, records: prompt %d completion %d", usage.Raw, prompt, completion)
	}
	after := g.Ledger.Balance(g.AccountID)
	if after.Usage-before.Usage != cost || after.Held != 0 {
		t.Fatalf("credits consumed %s, usage.cost %s (held %s)", after.Usage-before.Usage, cost, after.Held)
	}
}

func TestFusionJSON(t *testing.T) {
	g := startFusion(t, 0)
	before := g.Ledger.Balance(g.AccountID)
	resp, body := post(t, g, "/chat/completions", fusionBody("Is Pluto a planet?", "", ""), "X-Service-Metadata", "enabled")
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body.Raw)
	}
	// The final answer is the judge model's (the demo's echo-judge).
	if got := body.Get("choices.0.message.content").Str; !strings.Contains(got, "answering as echo-judge") || !strings.Contains(got, "You said: Is Pluto a planet?") {
		t.Fatalf("final answer %q", got)
	}
	st := fusionStage(t, body.Get("service_metadata"))
	if st.Get("data.strategy").Str != "fusion" || st.Get("type").Str != "router" || st.Get("action").Str != "respond" {
		t.Fatalf("stage %s", st.Raw)
	}
	// Each member answered in its own words through its own wire format,
	// at its own price.
	panel := st.Get("data.panel").Array()
	if len(panel) != 3 {
		t.Fatalf("panel %s", st.Raw)
	}
	costs := map[string]billing.Nanos{}
	for _, p := range panel {
		if p.Get("status").Str != "ok" || p.Get("completion_tokens").Int() == 0 || p.Get("id").Str == "" {
			t.Fatalf("member %s", p.Raw)
		}
		rec := generation(t, g, g.Key, p.Get("id").Str)
		if rec.Get("model").Str != p.Get("model").Str || usd(t, rec.Get("total_cost")) != usd(t, p.Get("cost")) {
			t.Fatalf("member %s, record %s", p.Raw, rec.Raw)
		}
		costs[p.Get("model").Str] = usd(t, p.Get("cost"))
	}
	if len(costs) != 3 || costs["test/claude"] <= costs["test/gemini"] {
		t.Fatalf("costs %v", costs)
	}
	for up, want := range map[string]string{"anth": "demo of Anthropic", "gem": "demo of Gemini"} {
		if n := map[string]int64{"anth": g.Anthropics["anth"].Count(), "gem": g.Geminis["gem"].Count()}[up]; n != 1 {
			t.Fatalf("%s received %d requests (%s)", up, n, want)
		}
	}
	// The judge's analysis, validated against the schema.
	a := st.Get("data.analysis")
	for _, f := range []string{"consensus", "contradictions", "unique_points", "gaps"} {
		if !a.Get(f).IsArray() {
			t.Fatalf("analysis %s", a.Raw)
		}
	}
	if st.Get("data.judge.model").Str != "test/judge" || st.Get("data.final.model").Str != "test/judge" || usd(t, st.Get("data.held")) <= 0 {
		t.Fatalf("stage %s", st.Raw)
	}
	// The final call saw the analysis; the judge's own request asked for
	// the schema (the demo answers a json_schema with an instance of it).
	if last := string(g.Upstreams["jd"].Last().Body); !strings.Contains(last, "Analysis (JSON)") || !strings.Contains(last, "consensus") {
		t.Fatalf("final request %s", last)
	}
	// 3 members + judge + final.
	wantFusionSums(t, g, body.Get("id").Str, body.Get("usage"), before, 5)
	if body.Get("usage.cost_details.sub_requests").Raw != body.Get("usage.cost").Raw {
		t.Fatalf("usage %s", body.Get("usage").Raw)
	}
}

func TestFusionPresetAndExplicitFields(t *testing.T) {
	g := startFusion(t, 0)
	cases := []struct {
		name, plugin string
		panel        []string
		judge        string
	}{
		{"preset", `{"id":"fusion","preset":"general-fast","tools":[]}`, []string{"test/gemini", "test/sage"}, "test/sage"},
		{"explicit wins", `{"id":"fusion","preset":"general-fast","analysis_models":["test/claude"],"model":"test/judge","tools":[]}`, []string{"test/claude"}, "test/judge"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, body := post(t, g, "/chat/completions", fusionBody("hi", c.plugin, ""), "X-Service-Metadata", "enabled")
			if resp.StatusCode != 200 {
				t.Fatalf("%d %s", resp.StatusCode, body.Raw)
			}
			st := fusionStage(t, body.Get("service_metadata"))
			var got []string
			for _, p := range st.Get("data.panel").Array() {
				got = append(got, p.Get("model").Str)
			}
			if strings.Join(got, ",") != strings.Join(c.panel, ",") || st.Get("data.judge.model").Str != c.judge {
				t.Fatalf("panel %v judge %s", got, st.Get("data.judge.model").Str)
			}
		})
	}
}

// A member may use the server tools: the demo model searches when asked,
// through the host's server-tool loop, and the turns are charged.
func TestFusionPanelTools(t *testing.T) {
	g := startFusion(t, 0)
	before := g.Ledger.Balance(g.AccountID)
	resp, body := post(t, g, "/chat/completions", fusionBody("please search the docs for fusion",
		`{"id":"fusion","analysis_models":["test/sage","test/claude"],"tools":[{"type":"service:web_search"}],"max_tool_calls":2}`, ""), "X-Service-Metadata", "enabled")
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body.Raw)
	}
	st := fusionStage(t, body.Get("service_metadata"))
	for _, p := range st.Get("data.panel").Array() {
		if p.Get("status").Str != "ok" || p.Get("tool_calls").Int() < 1 {
			t.Fatalf("member did not search: %s", p.Raw)
		}
	}
	// 2 members × 2 turns (search, answer) + judge + final.
	wantFusionSums(t, g, body.Get("id").Str, body.Get("usage"), before, 6)
}

// A fusion's tools entry that is no installed server tool, or one listed
// twice, is a 400 naming the entry before anything is called; before,
// every panel member failed on it and the fusion answered 502
// all_panels_failed (a list of 8 entries, the spec's maximum, always did:
// fewer server tools are installed).
func TestFusionToolsChecked(t *testing.T) {
	g := startFusion(t, 0)
	eight := `{"type":"service:web_search"},{"type":"service:web_fetch"}`
	for _, n := range []string{"a", "b", "c", "d", "e", "f"} {
		eight += `,{"type":"service:lookup_` + n + `"}`
	}
	cases := []struct{ name, tools, field, msg string }{
		{"not installed", `[{"type":"service:web_search"},{"type":"service:no_such_tool"}]`, "plugins[0].tools[1].type", `server tool "service:no_such_tool" is not installed`},
		{"listed twice", `[{"type":"service:web_search"},{"type":"openrouter:web_search"}]`, "plugins[0].tools[1].type", `server tool "service:web_search" is listed twice`},
		{"not a server tool", `[{"type":"function"}]`, "plugins[0].tools[0].type", `"function" is not a server tool`},
		{"eight entries", "[" + eight + "]", "plugins[0].tools[2].type", `server tool "service:lookup_a" is not installed`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := upstreamCount(g)
			resp, body := post(t, g, "/chat/completions", fusionBody("Is Pluto a planet?", `{"id":"fusion","tools":`+c.tools+`}`, ""))
			wantError(t, resp, body, 400, c.field+": "+c.msg)
			if n := upstreamCount(g) - before; n != 0 {
				t.Fatalf("%d upstream requests for a refused fusion", n)
			}
		})
	}
	// The installed tools, once each, still run.
	resp, body := post(t, g, "/chat/completions", fusionBody("Is Pluto a planet?", `{"id":"fusion","tools":[{"type":"service:web_search"},{"type":"service:web_fetch"}],"max_tool_calls":1}`, ""))
	if resp.StatusCode != 200 {
		t.Fatalf("installed tools: %d %s", resp.StatusCode, body.Raw)
	}
}

func TestFusionMemberFails(t *testing.T) {
	g := startFusion(t, 0)
	g.Geminis["gem"].SetFaults(demo.Faults{Status: 500})
	before := g.Ledger.Balance(g.AccountID)
	resp, body := post(t, g, "/chat/completions", fusionBody("Is Pluto a planet?", `{"id":"fusion","tools":[]}`, ""), "X-Service-Metadata", "enabled")
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body.Raw)
	}
	st := fusionStage(t, body.Get("service_metadata"))
	var failed []string
	for _, p := range st.Get("data.panel").Array() {
		if p.Get("status").Str == "failed" {
			failed = append(failed, p.Get("model").Str)
			if p.Get("error").Str == "" || p.Get("http_status").Int() < 500 {
				t.Fatalf("member %s", p.Raw)
			}
		}
	}
	if strings.Join(failed, ",") != "test/gemini" || !strings.Contains(st.Get("summary").Str, "1 failed and dropped") {
		t.Fatalf("stage %s", st.Raw)
	}
	if judge := g.Upstreams["jd"].Count(); judge != 2 {
		t.Fatalf("judge upstream got %d requests", judge)
	}
	// The failed member's record is there, charged nothing.
	wantFusionSums(t, g, body.Get("id").Str, body.Get("usage"), before, 5)
}

func TestFusionFailures(t *testing.T) {
	cases := []struct {
		name, plugin string
		fault        func(g *gatewaytest.Gateway)
		status       int
		reason       string
	}{
		{"every member fails", `{"id":"fusion","tools":[]}`, func(g *gatewaytest.Gateway) {
			g.Upstreams["oa"].SetFaults(demo.Faults{Status: 500})
			g.Anthropics["anth"].SetFaults(demo.Faults{Status: 500})
			g.Geminis["gem"].SetFaults(demo.Faults{Status: 500})
		}, 502, "all_panels_failed"},
		{"judge not JSON", `{"id":"fusion","tools":[],"model":"test/badjudge"}`, func(g *gatewaytest.Gateway) {
			g.Upstreams["bad"].SetFaults(demo.Faults{Reply: "The answers broadly agree, I think."})
		}, 502, "judge_not_valid_json"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := startFusion(t, 0)
			c.fault(g)
			before := g.Ledger.Balance(g.AccountID)
			resp, body := post(t, g, "/chat/completions", fusionBody("Is Pluto a planet?", c.plugin, ""), "X-Service-Metadata", "enabled")
			wantError(t, resp, body, c.status, "fusion")
			md := body.Get("error.metadata")
			if md.Get("reason").Str != c.reason || md.Get("plugin").Str != "fusion" || len(md.Get("panel").Array()) != 3 {
				t.Fatalf("metadata %s", md.Raw)
			}
			st := fusionStage(t, body.Get("service_metadata"))
			if st.Get("data.reason").Str != c.reason {
				t.Fatalf("stage %s", st.Raw)
			}
			// What was called is charged, no more: the records' sum.
			if err := g.Ledger.Sync(); err != nil {
				t.Fatal(err)
			}
			_, cost, _, _ := subRecords(t, g, resp.Header.Get("X-Generation-Id"))
			after := g.Ledger.Balance(g.AccountID)
			if after.Usage-before.Usage != cost || after.Held != 0 {
				t.Fatalf("charged %s, records %s, held %s", after.Usage-before.Usage, cost, after.Held)
			}
			if c.reason == "all_panels_failed" && cost != 0 {
				t.Fatalf("failed members charged %s", cost)
			}
		})
	}
}

// A fusion the account cannot cover is refused before any call: 402,
// nothing charged, nothing sent upstream, nothing left held. The same
// account can afford one call to the same model.
func TestFusionInsufficientCredits(t *testing.T) {
	g := startFusion(t, 0.01)
	before := g.Ledger.Balance(g.AccountID)
	resp, body := post(t, g, "/chat/completions", fusionBody("Is Pluto a planet?", "", ""), "X-Service-Metadata", "enabled")
	wantError(t, resp, body, 402, "the whole fusion cannot be covered")
	if md := body.Get("error.metadata"); md.Get("reason").Str != "insufficient_credits" || usd(t, md.Get("required")) <= usd(t, md.Get("available")) {
		t.Fatalf("metadata %s", md.Raw)
	}
	if n := upstreamCount(g); n != 0 {
		t.Fatalf("%d upstream requests", n)
	}
	after := g.Ledger.Balance(g.AccountID)
	if after.Usage != before.Usage || after.Held != 0 {
		t.Fatalf("balance %+v, before %+v", after, before)
	}
	if err := g.Ledger.Sync(); err != nil {
		t.Fatal(err)
	}
	records := 0
	if err := g.Ledger.Generations(g.AccountID, func(*billing.Generation) bool { records++; return true }); err != nil || records != 0 {
		t.Fatalf("%d generation records (%v)", records, err)
	}
	resp, body = post(t, g, "/chat/completions", `{"model":"test/sage","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("a single call: %d %s", resp.StatusCode, body.Raw)
	}
}

// fusionStream posts a streaming request and returns the open response.
func fusionStream(t *testing.T, ctx context.Context, g *gatewaytest.Gateway, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, g.URL+"/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+g.Key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Service-Metadata", "enabled")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// A streamed fusion: keep-alive comments while the panel works, then the
// answer and a final chunk whose usage is every call's.
func TestFusionStream(t *testing.T) {
	g := startFusion(t, 0)
	before := g.Ledger.Balance(g.AccountID)
	resp := fusionStream(t, context.Background(), g, fusionBody("Is Pluto a planet?", `{"id":"fusion","tools":[]}`, `,"stream":true`))
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var lines []string
	for sc.Scan() {
		if sc.Text() != "" {
			lines = append(lines, sc.Text())
		}
	}
	if len(lines) < 4 || !strings.HasPrefix(lines[0], ":") || lines[len(lines)-1] != "data: [DONE]" {
		t.Fatalf("stream %q", lines)
	}
	var text strings.Builder
	var last gjson.Result
	pieces := 0
	for _, l := range lines {
		if !strings.HasPrefix(l, "data: {") {
			continue
		}
		ch := gjson.Parse(strings.TrimPrefix(l, "data: "))
		if ch.Get("error").Exists() {
			t.Fatalf("error chunk %s", l)
		}
		if c := ch.Get("choices.0.delta.content").Str; c != "" {
			text.WriteString(c)
			pieces++
		}
		last = ch
	}
	// The answer arrives in pieces cut from its complete text.
	if !strings.Contains(text.String(), "answering as echo-judge. You said: Is Pluto a planet?") || pieces < 2 {
		t.Fatalf("streamed answer %q in %d pieces", text.String(), pieces)
	}
	if fusionStage(t, last.Get("service_metadata")).Get("data.panel.#").Int() != 3 {
		t.Fatalf("final chunk %s", last.Raw)
	}
	wantFusionSums(t, g, resp.Header.Get("X-Generation-Id"), last.Get("usage"), before, 5)
}

// A client that leaves during the panel cancels the fusion: the members'
// upstream calls are abandoned, their records settled, nothing stays held.
func TestFusionCancelled(t *testing.T) {
	g := startFusion(t, 0)
	for _, u := range []*demo.Server{g.Upstreams["oa"]} {
		u.SetFaults(demo.Faults{Delay: 20 * time.Second})
	}
	g.Anthropics["anth"].SetFaults(demo.Faults{Delay: 20 * time.Second})
	g.Geminis["gem"].SetFaults(demo.Faults{Delay: 20 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	resp := fusionStream(t, ctx, g, fusionBody("Is Pluto a planet?", `{"id":"fusion","tools":[]}`, `,"stream":true`))
	id := resp.Header.Get("X-Generation-Id")
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, ":") {
		t.Fatalf("first line %q %v", line, err)
	}
	// The panel is under way (the stream opened when it started): once
	// every member's call reached its upstream, leave.
	deadline := time.Now().Add(15 * time.Second)
	for upstreamCount(g) < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("%d upstream calls", upstreamCount(g))
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	resp.Body.Close()
	deadline = time.Now().Add(15 * time.Second)
	for {
		b := g.Ledger.Balance(g.AccountID)
		abandoned := g.Upstreams["oa"].Abandoned() + g.Anthropics["anth"].Abandoned() + g.Geminis["gem"].Abandoned()
		if b.Held == 0 && abandoned == 3 && g.Ledger.OpenHolds() == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the client left: held %s, %d upstream calls abandoned, %d open holds", b.Held, abandoned, g.Ledger.OpenHolds())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := g.Ledger.Sync(); err != nil {
		t.Fatal(err)
	}
	recs, _, _, _ := subRecords(t, g, id)
	if len(recs) != 3 {
		t.Fatalf("%d records", len(recs))
	}
	for _, r := range recs {
		if r.Get("status").Str != "cancelled" {
			t.Fatalf("record %s", r.Raw)
		}
	}
	if g.Upstreams["jd"].Count() != 0 {
		t.Fatal("the judge was called after the client left")
	}
}

// No fusion inside a fusion: with fusion on by default for every request,
// the panel's, the judge's and the final call's sub-requests pass through
// it as they are, so a request makes exactly its five calls.
func TestFusionNotNested(t *testing.T) {
	g := startFusion(t, 0)
	if err := g.Modules.SetDefault("fusion", true); err != nil {
		t.Fatal(err)
	}
	before := g.Ledger.Balance(g.AccountID)
	resp, body := post(t, g, "/chat/completions", `{"model":"test/sage","messages":[{"role":"user","content":"hi"}],"plugins":[{"id":"fusion","tools":[]}]}`, "X-Service-Metadata", "enabled")
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body.Raw)
	}
	if n := fusionStage(t, body.Get("service_metadata")).Get("data.panel.#").Int(); n != 3 {
		t.Fatalf("panel of %d", n)
	}
	wantFusionSums(t, g, body.Get("id").Str, body.Get("usage"), before, 5)
	if n := upstreamCount(g); n != 5 {
		t.Fatalf("%d upstream calls, want 5", n)
	}
}

// A streamed fusion that fails after its stream opened ends with an error
// chunk carrying the reason.
func TestFusionStreamFailure(t *testing.T) {
	g := startFusion(t, 0)
	g.Upstreams["oa"].SetFaults(demo.Faults{Status: 500})
	g.Anthropics["anth"].SetFaults(demo.Faults{Status: 500})
	g.Geminis["gem"].SetFaults(demo.Faults{Status: 500})
	resp := fusionStream(t, context.Background(), g, fusionBody("Is Pluto a planet?", `{"id":"fusion","tools":[]}`, `,"stream":true`))
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var errChunk gjson.Result
	var last string
	for sc.Scan() {
		if l := sc.Text(); strings.HasPrefix(l, "data: ") {
			last = l
			if ch := gjson.Parse(strings.TrimPrefix(l, "data: ")); ch.Get("error").Exists() {
				errChunk = ch
			}
		}
	}
	e := errChunk.Get("error")
	if resp.StatusCode != 200 || e.Get("code").Int() != 502 || e.Get("metadata.reason").Str != "all_panels_failed" || last != "data: [DONE]" {
		t.Fatalf("status %d, error chunk %s, last %q", resp.StatusCode, errChunk.Raw, last)
	}
	if errChunk.Get("choices.0.finish_reason").Str != "error" {
		t.Fatalf("%s", errChunk.Raw)
	}
}

// The model id switchyard/fusion is a fusion with the configured panel and
// judge, JSON and streamed; service_metadata says strategy "fusion" and the
// model asked for, as for the plugin form.
func TestFusionModelID(t *testing.T) {
	g := startFusion(t, 0)
	body := `{"model":"switchyard/fusion","messages":[{"role":"user","content":"Is Pluto a planet?"}]}`
	resp, b := post(t, g, "/chat/completions", body, "X-Service-Metadata", "enabled")
	if resp.StatusCode != 200 || !strings.Contains(b.Get("choices.0.message.content").Str, "answering as echo-judge") {
		t.Fatalf("%d %s", resp.StatusCode, b.Raw)
	}
	m := b.Get("service_metadata")
	if m.Get("strategy").Str != "fusion" || m.Get("requested").Str != "switchyard/fusion" || b.Get("model").Str != "switchyard/fusion" {
		t.Fatalf("metadata %s", m.Raw)
	}
	if len(fusionStage(t, m).Get("data.panel").Array()) != 3 {
		t.Fatalf("stage %s", fusionStage(t, m).Raw)
	}
	// The plugin form names its strategy too.
	_, b = post(t, g, "/chat/completions", fusionBody("Is Pluto a planet?", "", ""), "X-Service-Metadata", "enabled")
	if b.Get("service_metadata.strategy").Str != "fusion" || b.Get("service_metadata.requested").Str != "test/sage" {
		t.Fatalf("plugin form metadata %s", b.Get("service_metadata").Raw)
	}
	// Streamed.
	sresp := fusionStream(t, context.Background(), g, `{"model":"switchyard/fusion","stream":true,"messages":[{"role":"user","content":"Is Pluto a planet?"}]}`)
	raw, _ := io.ReadAll(sresp.Body)
	sresp.Body.Close()
	if sresp.StatusCode != 200 || !strings.Contains(string(raw), "echo-judge") || !strings.HasSuffix(strings.TrimSpace(string(raw)), "data: [DONE]") {
		t.Fatalf("%d %s", sresp.StatusCode, raw)
	}
}
