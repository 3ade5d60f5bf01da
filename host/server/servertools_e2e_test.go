package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/config"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/gjson"
)

// The server-tool loop over loopback HTTP (docs/server-tools.md). The demo
// model calls tools when the user's message says "call:NAME" (see
// host/demo/agent.go); "again" makes it call them after every result, a
// model that never stops by itself.

func toolsBody(user, tools, extra string) string {
	u, _ := json.Marshal(user)
	if tools == "" {
		tools = `[{"type":"service:datetime"}]`
	}
	return `{"model":"test/chat","messages":[{"role":"user","content":` + string(u) + `}],"tools":` + tools + extra + `}`
}

func usd(t *testing.T, r gjson.Result) billing.Nanos {
	t.Helper()
	if !r.Exists() {
		return 0 // an omitted amount (omitempty) is none
	}
	n, err := billing.ParseUSD(r.Raw)
	if err != nil {
		t.Fatalf("not an amount: %q", r.Raw)
	}
	return n
}

// toolStage is the server_tools entry of service_metadata.pipeline.
func toolStage(t *testing.T, body gjson.Result) gjson.Result {
	t.Helper()
	for _, s := range body.Get("service_metadata.pipeline").Array() {
		if s.Get("type").Str == "server_tools" {
			return s
		}
	}
	t.Fatalf("no server_tools stage in %s", body.Get("service_metadata").Raw)
	return gjson.Result{}
}

// wantSums checks the accounting of a loop: usage.cost is the sum of the
// turns' generation records (gen, gen-2, …), their tool fees included, and
// is what the account was charged.
func wantSums(t *testing.T, g *gatewaytest.Gateway, body gjson.Result, before billing.Balance, wantFees billing.Nanos) {
	t.Helper()
	id, turns := body.Get("id").Str, int(body.Get("usage.server_tool_use_details.turns").Int())
	var sum, fees billing.Nanos
	var prompt, completion int64
	for i := 1; i <= turns; i++ {
		gid := id
		if i > 1 {
			gid = fmt.Sprintf("%s-%d", id, i)
		}
		rec := generation(t, g, g.Key, gid)
		if rec.Get("status").Str != "success" {
			t.Fatalf("turn %d: %s", i, rec.Raw)
		}
		sum += usd(t, rec.Get("total_cost"))
		fees += usd(t, rec.Get("tool_fees_cost"))
		prompt += rec.Get("tokens.prompt_tokens").Int()
		completion += rec.Get("tokens.completion_tokens").Int()
	}
	if _, err := g.Ledger.Generation(fmt.Sprintf("%s-%d", id, turns+1)); err == nil {
		t.Fatalf("a record beyond the %d turns reported", turns)
	}
	cost := usd(t, body.Get("usage.cost"))
	if cost != sum || fees != wantFees || usd(t, body.Get("usage.cost_details.tool_fees")) != wantFees {
		t.Fatalf("usage.cost %s, records sum %s; fees %s (usage says %s), want %s", cost, sum, fees, body.Get("usage.cost_details.tool_fees").Raw, wantFees)
	}
	if body.Get("usage.prompt_tokens").Int() != prompt || body.Get("usage.completion_tokens").Int() != completion {
		t.Fatalf("usage %s, records: prompt %d completion %d", body.Get("usage").Raw, prompt, completion)
	}
	if err := g.Ledger.Sync(); err != nil {
		t.Fatal(err)
	}
	after := g.Ledger.Balance(g.AccountID)
	if after.Usage-before.Usage != cost || after.Held != 0 {
		t.Fatalf("credits consumed %s, usage.cost %s (held %s)", after.Usage-before.Usage, cost, after.Held)
	}
}

func TestServerToolDatetime(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	before := g.Ledger.Balance(g.AccountID)
	resp, body := post(t, g, "/chat/completions", toolsBody("What time is it in Oslo? tz:Europe/Oslo", "", ""), "X-Service-Metadata", "enabled")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body.Raw)
	}
	content := body.Get("choices.0.message.content").Str
	if !strings.Contains(content, `"timezone":"Europe/Oslo"`) || body.Get("choices.0.finish_reason").Str != "stop" || body.Get("choices.0.message.tool_calls").Exists() {
		t.Fatalf("the answer does not quote the tool's result: %s", body.Raw)
	}
	if resp.Header.Get("X-Generation-Id") != body.Get("id").Str {
		t.Fatalf("X-Generation-Id %q, id %q", resp.Header.Get("X-Generation-Id"), body.Get("id").Str)
	}
	d := body.Get("usage.server_tool_use_details")
	if d.Get("tool_calls_requested").Int() != 1 || d.Get("tool_calls_executed").Int() != 1 || d.Get("turns").Int() != 2 {
		t.Fatalf("server_tool_use_details %s", d.Raw)
	}
	st := toolStage(t, body)
	call := st.Get("data.calls.0")
	if call.Get("tool").Str != "service:datetime" || call.Get("status").Str != "completed" || !strings.Contains(call.Get("arguments").Str, "Europe/Oslo") {
		t.Fatalf("server_tools stage %s", st.Raw)
	}
	wantSums(t, g, body, before, 0)
	// What the model was shown: a function tool with the module's schema,
	// and in the second turn the call and its result.
	sent := gjson.ParseBytes(g.Upstreams["alpha"].Last().Body)
	if sent.Get("tools.0.type").Str != "function" || sent.Get("tools.0.function.name").Str != "datetime" ||
		!sent.Get("tools.0.function.parameters.properties.timezone").Exists() || sent.Get("max_tool_calls").Exists() {
		t.Fatalf("tools sent upstream: %s", sent.Get("tools").Raw)
	}
	msgs := sent.Get("messages").Array()
	if len(msgs) != 3 || msgs[1].Get("tool_calls.0.function.name").Str != "datetime" || msgs[2].Get("role").Str != "tool" ||
		msgs[2].Get("tool_call_id").Str != msgs[1].Get("tool_calls.0.id").Str {
		t.Fatalf("second turn's messages: %s", sent.Get("messages").Raw)
	}
}

// Each budget ends a model that would call tools forever: the calls of the
// turn that fired still ran, then one last turn without tools answers in
// prose.
func TestServerToolBudgets(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	forever := "call:datetime again"
	for _, tc := range []struct {
		name, user, extra string
		executed, turns   int64
		stoppedBy         string
	}{
		{"default max_tool_calls", forever, ``, 8, 9, "max_tool_calls"},
		{"max_tool_calls", forever, `,"max_tool_calls":3`, 3, 4, "max_tool_calls"},
		{"step_count_is", forever, `,"stop_server_tools_when":[{"type":"step_count_is","step_count":2}]`, 2, 3, "step_count_is"},
		{"has_tool_call", forever, `,"stop_server_tools_when":[{"type":"has_tool_call","tool_name":"datetime"}]`, 1, 2, "has_tool_call"},
		{"max_tokens_used", forever, `,"stop_server_tools_when":[{"type":"max_tokens_used","max_tokens":1}]`, 1, 2, "max_tokens_used"},
		{"finish_reason_is", forever, `,"stop_server_tools_when":[{"type":"finish_reason_is","reason":"tool_calls"}]`, 1, 2, "finish_reason_is"},
		{"second condition of the OR", forever, `,"stop_server_tools_when":[{"type":"step_count_is","step_count":5},{"type":"has_tool_call","tool_name":"service:datetime"}]`, 1, 2, "has_tool_call"},
		{"stop conditions override the default", forever, `,"stop_server_tools_when":[{"type":"step_count_is","step_count":10}]`, 10, 11, "step_count_is"},
		{"max_tool_calls inside one turn", "call:datetime call:datetime call:datetime again", `,"max_tool_calls":2`, 2, 2, "max_tool_calls"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := g.Ledger.Balance(g.AccountID)
			resp, body := post(t, g, "/chat/completions", toolsBody(tc.user, "", tc.extra), "X-Service-Metadata", "enabled")
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%d %s", resp.StatusCode, body.Raw)
			}
			d := body.Get("usage.server_tool_use_details")
			st := toolStage(t, body)
			if d.Get("tool_calls_executed").Int() != tc.executed || d.Get("turns").Int() != tc.turns || st.Get("data.stopped_by").Str != tc.stoppedBy {
				t.Fatalf("executed %d turns %d stopped by %q; want %d %d %q\n%s", d.Get("tool_calls_executed").Int(), d.Get("turns").Int(),
					st.Get("data.stopped_by").Str, tc.executed, tc.turns, tc.stoppedBy, body.Raw)
			}
			// The last turn had tools disabled, and ended in prose.
			if sent := gjson.ParseBytes(g.Upstreams["alpha"].Last().Body); sent.Get("tool_choice").Str != "none" {
				t.Fatalf("last turn's tool_choice %s", sent.Get("tool_choice").Raw)
			}
			if body.Get("choices.0.finish_reason").Str != "stop" || !strings.Contains(body.Get("choices.0.message.content").Str, "Tool results:") {
				t.Fatalf("answer %s", body.Get("choices").Raw)
			}
			wantSums(t, g, body, before, 0)
		})
	}
}

// Several calls in one turn run (in parallel) and each gets its result; a
// call past max_tool_calls gets a result saying it was not run.
func TestServerToolParallelCalls(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	resp, body := post(t, g, "/chat/completions", toolsBody("call:datetime call:datetime call:datetime tz:Asia/Tokyo", "", `,"max_tool_calls":2`), "X-Service-Metadata", "enabled")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body.Raw)
	}
	content := body.Get("choices.0.message.content").Str
	if strings.Count(content, `"timezone":"Asia/Tokyo"`) != 2 || !strings.Contains(content, "max_tool_calls") {
		t.Fatalf("answer %q", content)
	}
	calls := toolStage(t, body).Get("data.calls").Array()
	if len(calls) != 3 || calls[0].Get("status").Str != "completed" || calls[1].Get("status").Str != "completed" || calls[2].Get("status").Str != "skipped" {
		t.Fatalf("calls %v", calls)
	}
	if d := body.Get("usage.server_tool_use_details"); d.Get("tool_calls_requested").Int() != 3 || d.Get("tool_calls_executed").Int() != 2 {
		t.Fatalf("%s", d.Raw)
	}
}

// A module's fee is charged on the turn's record and itemised there; a
// failing tool is a result the model reads, never a 5xx.
func TestServerToolFeesAndFailures(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	publishToolTest(t, g)
	toolsList := `[{"type":"service:tooltest","parameters":{"colour":"blue"}}]`
	before := g.Ledger.Balance(g.AccountID)
	resp, body := post(t, g, "/chat/completions", toolsBody("call:tooltest call:tooltest", toolsList, `,"plugins":[{"id":"tooltest","region":"eu"}]`), "X-Service-Metadata", "enabled")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body.Raw)
	}
	// The module got its parameters and its plugin config from the
	// request, and the request id.
	content := body.Get("choices.0.message.content").Str
	if !strings.Contains(content, `"parameters":{"colour":"blue"}`) || !strings.Contains(content, `"config":{"id":"tooltest","region":"eu"}`) || !strings.Contains(content, `"request_id":"`+body.Get("id").Str+`"`) {
		t.Fatalf("answer %q", content)
	}
	// Each call knows how many calls of its tool ran before it (ctx.calls),
	// parallel ones included.
	if !strings.Contains(content, `"calls":0}`) || !strings.Contains(content, `"calls":1}`) {
		t.Fatalf("ctx.calls: %q", content)
	}
	wantSums(t, g, body, before, 3_000_000) // two calls at $0.0015
	rec := generation(t, g, g.Key, body.Get("id").Str)
	if rec.Get("tool_fees.0.tool").Str != "service:tooltest" || rec.Get("tool_fees.0.calls").Int() != 2 {
		t.Fatalf("record's fees %s", rec.Get("tool_fees").Raw)
	}

	for _, tc := range []struct{ name, user, want string }{
		{"hook error", `call:tooltest args:{"fail":true}`, "tooltest was asked to fail"},
		{"invalid cost", `call:tooltest args:{"bad_cost":true}`, "invalid cost"},
		{"tool's own error", `call:datetime tz:Mars/Olympus_Mons`, "unknown time zone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := g.Ledger.Balance(g.AccountID)
			tl := `[{"type":"service:tooltest"},{"type":"service:datetime"}]`
			resp, body := post(t, g, "/chat/completions", toolsBody(tc.user, tl, ""), "X-Service-Metadata", "enabled")
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%d %s", resp.StatusCode, body.Raw)
			}
			if !strings.Contains(body.Get("choices.0.message.content").Str, tc.want) {
				t.Fatalf("the model did not see the failure: %s", body.Get("choices.0.message.content").Str)
			}
			call := toolStage(t, body).Get("data.calls.0")
			if call.Get("status").Str != "failed" || !strings.Contains(call.Get("error").Str, tc.want) {
				t.Fatalf("stage call %s", call.Raw)
			}
			wantSums(t, g, body, before, 0)
		})
	}
}

// A client function tool ends the loop: its call is returned as usual, and
// a server call beside it is not run.
func TestServerToolWithClientTool(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	tl := `[{"type":"service:datetime"},{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]`
	for _, tc := range []struct{ name, user string }{
		{"client call alone", "call:get_weather"},
		{"client call beside a server call", "call:datetime call:get_weather"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := post(t, g, "/chat/completions", toolsBody(tc.user, tl, ""), "X-Service-Metadata", "enabled")
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%d %s", resp.StatusCode, body.Raw)
			}
			calls := body.Get("choices.0.message.tool_calls").Array()
			if len(calls) != 1 || calls[0].Get("function.name").Str != "get_weather" || body.Get("choices.0.finish_reason").Str != "tool_calls" {
				t.Fatalf("%s", body.Get("choices").Raw)
			}
			if d := body.Get("usage.server_tool_use_details"); d.Get("tool_calls_executed").Int() != 0 || d.Get("turns").Int() != 1 {
				t.Fatalf("%s", d.Raw)
			}
		})
	}
	// The client answers its call; the model then uses the server tool.
	resp, body := post(t, g, "/chat/completions", `{"model":"test/chat","tools":`+tl+`,"messages":[
		{"role":"user","content":"what time is it"},
		{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"c1","content":"sunny"},
		{"role":"user","content":"and the time? call:datetime"}]}`)
	if resp.StatusCode != http.StatusOK || body.Get("usage.server_tool_use_details.tool_calls_executed").Int() != 1 {
		t.Fatalf("%d %s", resp.StatusCode, body.Raw)
	}
}

func TestServerToolRefusals(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	for _, tc := range []struct{ name, body, param, msg string }{
		{"not installed", toolsBody("hi", `[{"type":"service:teleport"}]`, ""), "tools[0].type", `server tool "service:teleport" is not installed`},
		{"listed twice", toolsBody("hi", `[{"type":"service:datetime"},{"type":"service:datetime"}]`, ""), "tools[1].type", "listed twice"},
		{"name clash", toolsBody("hi", `[{"type":"service:datetime"},{"type":"function","function":{"name":"datetime"}}]`, ""), "tools", "rename the function tool"},
		{"n above 1", toolsBody("hi", "", `,"n":2`), "n", "must be 1 with server tools"},
		{"max_tool_calls", toolsBody("hi", "", `,"max_tool_calls":31`), "max_tool_calls", "integer from 1 to 30"},
		{"choice not offered", toolsBody("hi", "", `,"tool_choice":{"type":"service:web_fetch"}`), "tool_choice.type", "is not one of the request's tools"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := post(t, g, "/chat/completions", tc.body)
			wantError(t, resp, body, http.StatusBadRequest, tc.param)
			wantError(t, resp, body, http.StatusBadRequest, tc.msg)
		})
	}
}

// A server-tool choice forces the first call only.
func TestServerToolChoice(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	resp, body := post(t, g, "/chat/completions", toolsBody("hello", "", `,"tool_choice":{"type":"service:datetime"}`))
	if resp.StatusCode != http.StatusOK || body.Get("usage.server_tool_use_details.tool_calls_executed").Int() != 1 ||
		!strings.Contains(body.Get("choices.0.message.content").Str, `"timezone":"UTC"`) {
		t.Fatalf("%d %s", resp.StatusCode, body.Raw)
	}
}

// streamEvents reads an SSE response: comments, data events, and whether
// it ended with [DONE].
func streamEvents(t *testing.T, g *gatewaytest.Gateway, body string) (comments int, events []gjson.Result, doneSeen bool) {
	t.Helper()
	raw := readStream(t, g, body)
	for _, line := range strings.Split(raw, "\n") {
		switch {
		case strings.HasPrefix(line, ":"):
			comments++
		case line == "data: [DONE]":
			doneSeen = true
		case strings.HasPrefix(line, "data: "):
			events = append(events, gjson.Parse(strings.TrimPrefix(line, "data: ")))
		}
	}
	return comments, events, doneSeen
}

func TestServerToolStream(t *testing.T) {
	t.Run("budget fired", func(t *testing.T) {
		g := start(t, gatewaytest.Options{})
		_, events, doneSeen := streamEvents(t, g, toolsBody("call:datetime again", "", `,"stream":true,"max_tool_calls":2`))
		final := events[len(events)-1]
		if !doneSeen || final.Get("usage.server_tool_use_details.tool_calls_executed").Int() != 2 || final.Get("usage.server_tool_use_details.turns").Int() != 3 {
			t.Fatalf("final %s", final.Raw)
		}
		if fr := events[len(events)-2].Get("choices.0.finish_reason").Str; fr != "stop" {
			t.Fatalf("finish %q", fr)
		}
	})
	t.Run("client tool call", func(t *testing.T) {
		g := start(t, gatewaytest.Options{})
		tl := `[{"type":"service:datetime"},{"type":"function","function":{"name":"get_weather"}}]`
		_, events, _ := streamEvents(t, g, toolsBody("call:datetime call:get_weather", tl, `,"stream":true`))
		var names []string
		for _, e := range events {
			e.Get("choices.0.delta.tool_calls").ForEach(func(_, tc gjson.Result) bool {
				names = append(names, tc.Get("function.name").Str)
				return true
			})
		}
		if len(names) != 1 || names[0] != "get_weather" || events[len(events)-2].Get("choices.0.finish_reason").Str != "tool_calls" {
			t.Fatalf("tool calls %v; %v", names, events)
		}
	})
	g := start(t, gatewaytest.Options{})
	before := g.Ledger.Balance(g.AccountID)
	comments, events, doneSeen := streamEvents(t, g, toolsBody("what is the date today?", "", `,"stream":true`))
	if comments == 0 || !doneSeen || len(events) < 2 {
		t.Fatalf("comments %d, done %v, events %v", comments, doneSeen, events)
	}
	var text strings.Builder
	deltas := 0
	for _, e := range events[:len(events)-1] {
		if c := e.Get("choices.0.delta.content").Str; c != "" {
			text.WriteString(c)
			deltas++
		}
		if e.Get("usage").Exists() {
			t.Fatalf("usage before the final chunk: %s", e.Raw)
		}
	}
	// The answer turn streamed from the upstream, as it came: word by word.
	if sent := gjson.ParseBytes(g.Upstreams["alpha"].Last().Body); !sent.Get("stream").Bool() || deltas < 5 {
		t.Fatalf("upstream stream %s, %d content deltas", sent.Get("stream").Raw, deltas)
	}
	final := events[len(events)-1]
	if !strings.Contains(text.String(), `"timezone":"UTC"`) || final.Get("usage.server_tool_use_details.tool_calls_executed").Int() != 1 {
		t.Fatalf("text %q final %s", text.String(), final.Raw)
	}
	if events[0].Get("object").Str != "chat.completion.chunk" || events[0].Get("id").Str != final.Get("id").Str {
		t.Fatalf("chunks %s / %s", events[0].Raw, final.Raw)
	}
	wantSums(t, g, final, before, 0)
}

// The loop runs through every adapter: the fakes call tools in the
// Anthropic and Gemini wire formats.
func TestServerToolAdapters(t *testing.T) {
	ga, _ := startAnthropic(t)
	gg, _ := startGemini(t)
	for _, tc := range []struct {
		name  string
		g     *gatewaytest.Gateway
		model string
	}{
		{"anthropic", ga, "test/claude"},
		{"gemini", gg, "test/gemini"},
	} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s stream=%v", tc.name, stream), func(t *testing.T) {
				before := tc.g.Ledger.Balance(tc.g.AccountID)
				body := strings.Replace(toolsBody("call:datetime call:datetime tz:Europe/Paris", "", fmt.Sprintf(`,"stream":%v`, stream)), "test/chat", tc.model, 1)
				var res gjson.Result
				if stream {
					_, events, doneSeen := streamEvents(t, tc.g, body)
					if !doneSeen || len(events) == 0 {
						t.Fatalf("stream %v", events)
					}
					res = events[len(events)-1]
					var text strings.Builder
					for _, e := range events {
						text.WriteString(e.Get("choices.0.delta.content").Str)
					}
					res = gjson.Parse(res.Raw)
					if strings.Count(text.String(), "Europe/Paris") != 2 {
						t.Fatalf("text %q", text.String())
					}
				} else {
					resp, b := post(t, tc.g, "/chat/completions", body)
					if resp.StatusCode != http.StatusOK || strings.Count(b.Get("choices.0.message.content").Str, "Europe/Paris") != 2 {
						t.Fatalf("%d %s", resp.StatusCode, b.Raw)
					}
					res = b
				}
				if d := res.Get("usage.server_tool_use_details"); d.Get("tool_calls_executed").Int() != 2 || d.Get("turns").Int() != 2 {
					t.Fatalf("%s", res.Raw)
				}
				wantSums(t, tc.g, res, before, 0)
			})
		}
	}
}

// CallEnv.Chat runs a sub-request charged to the caller's key under its
// own record, counted in the request's cost; it does not stream, use server
// tools, or nest.
func TestChatSubRequest(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	key, aerr := g.Keys.Authenticate(g.Key)
	if aerr != nil {
		t.Fatal(aerr)
	}
	chat, subCost := g.Server.SubChat(key, "gen-parent")
	before := g.Ledger.Balance(g.AccountID)
	status, resp, err := chat(context.Background(), []byte(hello))
	if err != nil || status != http.StatusOK {
		t.Fatalf("%d %v %s", status, err, resp)
	}
	body := gjson.ParseBytes(resp)
	if body.Get("id").Str != "gen-parent-sub1" || !strings.Contains(body.Get("choices.0.message.content").Str, "hello there") {
		t.Fatalf("%s", resp)
	}
	rec := generation(t, g, g.Key, "gen-parent-sub1")
	cost := usd(t, body.Get("usage.cost"))
	if usd(t, rec.Get("total_cost")) != cost || cost == 0 || subCost() != cost {
		t.Fatalf("cost %s, record %s, counted in the parent %s", cost, rec.Get("total_cost").Raw, subCost())
	}
	if err := g.Ledger.Sync(); err != nil {
		t.Fatal(err)
	}
	if used := g.Ledger.Balance(g.AccountID).Usage - before.Usage; used != cost {
		t.Fatalf("credits consumed %s, cost %s", used, cost)
	}
	for _, tc := range []struct{ name, body, want string }{
		{"stream", `{"model":"test/chat","stream":true,"messages":[{"role":"user","content":"x"}]}`, "cannot stream"},
		{"server tools", toolsBody("x", "", ""), "not available in a sub-request"},
		{"invalid", `{"model":"test/chat"}`, "messages"},
		{"unknown model", `{"model":"nobody/none","messages":[{"role":"user","content":"x"}]}`, "nobody/none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, resp, err := chat(context.Background(), []byte(tc.body))
			if err != nil || status < 400 || gjson.GetBytes(resp, "error.code").Int() != int64(status) || !strings.Contains(gjson.GetBytes(resp, "error.message").Str, tc.want) {
				t.Fatalf("%d %v %s", status, err, resp)
			}
		})
	}
}

// Credits that run out mid-loop end it before the turn that could not be
// held, with the answer so far (finish_reason "length",
// native_finish_reason "insufficient_credits"), not a 402 after the
// earlier turns were charged (issue 31 item 12); those turns stay charged.
func TestServerToolCreditsRunOut(t *testing.T) {
	// A fee ceiling of one nano-dollar: turn 1's hold for its call's fee
	// (TestToolFeeHeldBeforeCall) fits, the next turn's hold does not.
	g := start(t, gatewaytest.Options{Mutate: func(c *config.Config) { c.Limits.MaxToolFeePerCall = 1e-9 }})
	req := toolsBody("call:datetime", "", `,"max_tokens":50`)
	// What turn 1 holds (its fee hold included), from a run on the
	// unlimited key.
	_, probe := post(t, g, "/chat/completions", req)
	held := generation(t, g, g.Key, probe.Get("id").Str).Get("held")
	// A key whose limit is exactly turn 1's hold: turn 1 runs, and after
	// its charge turn 2's (larger) hold no longer fits.
	key := newLimitedKey(t, g, held.Raw)
	before := g.Ledger.Balance(g.AccountID)
	resp, body := post(t, g, "/chat/completions", req, "Authorization", "Bearer "+key, "X-Service-Metadata", "enabled")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body.Raw)
	}
	ch := body.Get("choices.0")
	if ch.Get("finish_reason").Str != "length" || ch.Get("native_finish_reason").Str != "insufficient_credits" ||
		body.Get("usage.server_tool_use_details.turns").Int() != 1 || toolStage(t, body).Get("data.stopped_by").Str != "insufficient_credits" {
		t.Fatalf("answer %s", body.Raw)
	}
	if err := g.Ledger.Sync(); err != nil {
		t.Fatal(err)
	}
	used := g.Ledger.Balance(g.AccountID).Usage - before.Usage
	if used == 0 || used != usd(t, body.Get("usage.cost")) {
		t.Fatalf("charged %s; usage.cost %s", used, body.Get("usage.cost").Raw)
	}
}

// BenchmarkServerToolLoop is one whole request over loopback whose model
// calls service:datetime once: two turns to the demo upstream, the tool
// call, both settlements. BenchmarkPlainChat is the same request without
// tools, for the difference (one loop turn and its tool call).
func BenchmarkServerToolLoop(b *testing.B) {
	benchChat(b, toolsBody("call:datetime", "", ""))
}

func BenchmarkPlainChat(b *testing.B) {
	benchChat(b, hello)
}

func benchChat(b *testing.B, body string) {
	g, err := gatewaytest.Start(gatewaytest.Options{Quiet: true})
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	b.ReportAllocs()
	for b.Loop() {
		resp, out, err := g.Request(http.MethodPost, "/chat/completions", body)
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("%v %s", err, out)
		}
	}
}

// A tool module's chat sub-request (the chat host function) is charged to
// the caller's key under its own record and counted in the request's
// usage.cost and service_metadata; a sub-request cannot use server tools
// (no recursion).
func TestServerToolChatSubRequest(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	publishToolTest(t, g)
	tl := `[{"type":"service:tooltest"}]`
	before := g.Ledger.Balance(g.AccountID)
	sub := `{"model":"test/chat","messages":[{"role":"user","content":"from-the-tool"}]}`
	resp, body := post(t, g, "/chat/completions", toolsBody("call:tooltest args:{\"chat\":"+sub+"}", tl, ""), "X-Service-Metadata", "enabled")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body.Raw)
	}
	if c := body.Get("choices.0.message.content").Str; !strings.Contains(c, `"chat_status":200`) || !strings.Contains(c, "You said: from-the-tool") {
		t.Fatalf("answer %q", c)
	}
	id := body.Get("id").Str
	subRec := generation(t, g, g.Key, id+"-sub1")
	subCost := usd(t, subRec.Get("total_cost"))
	turns := usd(t, generation(t, g, g.Key, id).Get("total_cost")) + usd(t, generation(t, g, g.Key, id+"-2").Get("total_cost"))
	cost := usd(t, body.Get("usage.cost"))
	if subCost == 0 || cost != turns+subCost || usd(t, body.Get("usage.cost_details.sub_requests")) != subCost {
		t.Fatalf("usage.cost %s, turns %s, sub-request %s (%s)", cost, turns, subCost, body.Get("usage.cost_details").Raw)
	}
	if err := g.Ledger.Sync(); err != nil {
		t.Fatal(err)
	}
	if used := g.Ledger.Balance(g.AccountID).Usage - before.Usage; used != cost {
		t.Fatalf("credits consumed %s, usage.cost %s", used, cost)
	}
	found := false
	for _, s := range body.Get("service_metadata.pipeline").Array() {
		found = found || (s.Get("type").Str == "sub_requests" && s.Get("data.requests.0.id").Str == id+"-sub1")
	}
	if !found {
		t.Fatalf("no sub_requests stage: %s", body.Get("service_metadata.pipeline").Raw)
	}

	// No recursion: the sub-request may not run server tools.
	nested := `{"model":"test/chat","messages":[{"role":"user","content":"x"}],"tools":[{"type":"service:tooltest"}]}`
	_, body = post(t, g, "/chat/completions", toolsBody("call:tooltest args:{\"chat\":"+nested+"}", tl, ""))
	if c := body.Get("choices.0.message.content").Str; !strings.Contains(c, `"chat_status":400`) || !strings.Contains(c, "not available in a sub-request") {
		t.Fatalf("answer %q", c)
	}
}

// A streamed server-tool request that cannot start (no credit for its
// first turn) gets its HTTP status, not an opened stream.
func TestServerToolStreamRefusedBeforeOpening(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	key := newLimitedKey(t, g, "0.0000001")
	resp, body := post(t, g, "/chat/completions", toolsBody("call:datetime", "", `,"stream":true`), "Authorization", "Bearer "+key)
	wantError(t, resp, body, http.StatusPaymentRequired, "Key limit exceeded")
	if g.Upstreams["alpha"].Count() != 0 {
		t.Fatal("the upstream was called")
	}
}

// service:web_search through the loop, offline: the demo model searches,
// the web module answers from its demo engine, the model quotes it.
func TestServerToolWebSearch(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	resp, body := post(t, g, "/chat/completions", toolsBody("please search the docs for server tools billing", `[{"type":"service:web_search"}]`, ""), "X-Service-Metadata", "enabled")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body.Raw)
	}
	d := body.Get("usage.server_tool_use_details")
	call := toolStage(t, body).Get("data.calls.0")
	if d.Get("web_search_requests").Int() != 1 || body.Get("usage.server_tool_use.web_search_requests").Int() != 1 || call.Get("tool").Str != "service:web_search" {
		t.Fatalf("%s\n%s", d.Raw, call.Raw)
	}
	if c := body.Get("choices.0.message.content").Str; !strings.Contains(c, "demo search engine") {
		t.Fatalf("answer %q", c)
	}
	// The module's max_uses holds across the parallel calls of one turn
	// (ctx.calls numbers them).
	_, body = post(t, g, "/chat/completions", toolsBody("call:web_search call:web_search routing", `[{"type":"service:web_search","parameters":{"max_uses":1}}]`, ""), "X-Service-Metadata", "enabled")
	calls := toolStage(t, body).Get("data.calls").Array()
	if len(calls) != 2 || calls[0].Get("status").Str != "completed" || calls[1].Get("status").Str != "failed" || !strings.Contains(calls[1].Get("error").Str, "max_uses") {
		t.Fatalf("calls %v", calls)
	}
}

// publishToolTest publishes the test server-tool module (service:tooltest,
// host/tools/testdata/tooltest) for g's account and activates it.
func publishToolTest(t *testing.T, g *gatewaytest.Gateway) {
	t.Helper()
	root := gatewaytest.Root()
	m, err := os.ReadFile(filepath.Join(root, "host", "tools", "testdata", "tooltest", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if resp, body := publish(t, g, g.Key, filepath.Join(root, "build", "testdata", "tooltest.wasm"), string(m), "", true); resp.StatusCode/100 != 2 {
		t.Fatalf("publish: %d %s", resp.StatusCode, body.Raw)
	}
}

// The request's time limit running out while a turn's tool calls run is a
// 408 naming the limit, not a 499 as if the client had gone: the client
// is still there, and the turn it was charged for is said.
func TestServerToolDeadlineIs408(t *testing.T) {
	// 400 ms: less than the tool's own limit (500 ms, the tenant
	// ceiling), so the request's runs out first; under a slow machine
	// turn 1 itself may run out of it, which is the same 408.
	g := start(t, gatewaytest.Options{Mutate: func(c *config.Config) {
		c.Timeouts.Request = config.Duration(400 * time.Millisecond)
	}})
	publishToolTest(t, g)
	resp, body := post(t, g, "/chat/completions", toolsBody(`call:tooltest args:{"spin":true}`, `[{"type":"service:tooltest"}]`, ""))
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("%d %s, want 408", resp.StatusCode, body.Raw)
	}
	if m := body.Get("error.message").Str; !strings.Contains(m, "time limit of 400ms") {
		t.Fatalf("message %q does not name the request's time limit", m)
	}
}
