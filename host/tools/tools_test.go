package tools_test

import (
	"context"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/switchyard/switchyard/host/tools"
	"github.com/tidwall/gjson"
)

func gateway(t testing.TB) *gatewaytest.Gateway {
	t.Helper()
	g, err := gatewaytest.Start(gatewaytest.Options{Quiet: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	return g
}

const body = `{"model":"test/chat","messages":[{"role":"user","content":"time?"}],"stream":true,"max_tool_calls":3,
"stop_server_tools_when":[{"type":"step_count_is","step_count":1}],
"tools":[{"type":"function","function":{"name":"f"}},{"type":"service:datetime","parameters":{"timezone":"Asia/Tokyo"}}],
"tool_choice":{"type":"service:datetime"}}`

// What the model is shown for each kind of turn.
func TestBody(t *testing.T) {
	g := gateway(t)
	set, err := tools.Resolve(g.Modules, g.AccountID, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	defer set.Release()
	for _, tc := range []struct {
		turn   tools.Turn
		choice string
	}{
		{tools.First, `{"type":"function","function":{"name":"datetime"}}`},
		{tools.Next, `"auto"`},
		{tools.Final, `"none"`},
	} {
		out := gjson.ParseBytes(set.Body([]byte(body), tc.turn))
		if out.Get("tool_choice").Raw != tc.choice {
			t.Fatalf("turn %d: tool_choice %s, want %s", tc.turn, out.Get("tool_choice").Raw, tc.choice)
		}
		if out.Get("tools.0").Raw != `{"type":"function","function":{"name":"f"}}` || out.Get("tools.1.function.name").Str != "datetime" ||
			out.Get("tools.1.function.parameters.type").Str != "object" || out.Get("tools.1.function.description").Str == "" {
			t.Fatalf("turn %d: tools %s", tc.turn, out.Get("tools").Raw)
		}
		if out.Get("max_tool_calls").Exists() || out.Get("stop_server_tools_when").Exists() {
			t.Fatalf("the loop's fields reach the model: %s", out.Raw)
		}
	}
}

func TestRun(t *testing.T) {
	g := gateway(t)
	set, err := tools.Resolve(g.Modules, g.AccountID, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	defer set.Release()
	env := tools.Env{RequestID: "gen-1", Account: g.AccountID, Model: "test/chat"}
	for _, tc := range []struct{ name, args, status, want string }{
		{"request's parameters", ``, "completed", `"timezone":"Asia/Tokyo"`},
		{"the model's argument wins", `{"timezone":"Europe/Oslo"}`, "completed", `"timezone":"Europe/Oslo"`},
		{"unknown zone", `{"timezone":"Nowhere/Special"}`, "failed", "unknown time zone"},
		{"arguments not an object", `[1]`, "failed", "not a JSON object"},
		{"arguments not JSON", `{"timezone":`, "failed", "not a JSON object"},
		// Checked against the manifest's parameters schema before the
		// module runs; the model is told which field is wrong.
		{"argument of the wrong type", `{"timezone":5}`, "failed", "do not match its parameters schema: timezone"},
		{"argument the schema does not allow", `{"timezone":"UTC","tz":"UTC"}`, "failed", "additional properties 'tz' not allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			outs := set.RunAll(context.Background(), env, []tools.Call{{ID: "c1", Name: "datetime", Arguments: tc.args}})
			o := outs[0]
			if o.Status != tc.status || !strings.Contains(o.Result, tc.want) || !gjson.Valid(o.Result) || o.Cost != 0 || o.Type != "service:datetime" {
				t.Fatalf("%+v", o)
			}
		})
	}
}

// BenchmarkTurnHostOverhead is the host's own work for one loop turn with
// one server-tool call, the upstream call aside: bind the tools, rewrite
// the body for the model, run the call through its module, rewrite again.
func BenchmarkTurnHostOverhead(b *testing.B) {
	g := gateway(b)
	env := tools.Env{RequestID: "gen-1", Account: g.AccountID, Model: "test/chat"}
	calls := []tools.Call{{ID: "c1", Name: "datetime", Arguments: `{"timezone":"Europe/Oslo"}`}}
	b.ReportAllocs()
	for b.Loop() {
		set, err := tools.Resolve(g.Modules, g.AccountID, []byte(body))
		if err != nil {
			b.Fatal(err)
		}
		_ = set.Body([]byte(body), tools.First)
		if o := set.RunAll(context.Background(), env, calls); o[0].Status != "completed" {
			b.Fatal(o[0])
		}
		_ = set.Body([]byte(body), tools.Next)
		set.Release()
	}
}
