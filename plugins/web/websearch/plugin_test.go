package websearch_test

import (
	"strings"
	"testing"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/plugins/web/websearch"
	"github.com/switchyard/switchyard/sdk"
	"github.com/tidwall/gjson"
)

const convo = `{"model":"m","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"},{"role":"assistant","content":"hello"},{"role":"user","content":"webassembly gateway plugins"}],"plugins":[{"id":"web"}]}`

func pre(t *testing.T, m *websearch.Module, ctx, body string) [][]byte {
	t.Helper()
	out, err := sdk.Run(m.PreRequest, []byte(ctx), []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestPreRequestInjects(t *testing.T) {
	_, s := fakes(t)
	m := &websearch.Module{HTTP: nativeHTTP(t)}
	settings := `{"engine":"exa","engines":{"exa":{"base_url":"` + s.Engines["exa"].BaseURL + `"}}}`
	for _, tc := range []struct{ name, config, prompt string }{
		{"default prompt", `{"id":"web","max_results":2}`, websearch.DefaultPrompt},
		{"search_prompt", `{"id":"web","max_results":2,"search_prompt":"Sources follow."}`, "Sources follow."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := pre(t, m, `{"config":`+tc.config+`,"settings":`+settings+`}`, convo)
			if string(out[0]) != abi.ActionContinue {
				t.Fatalf("%s", out[0])
			}
			msgs := gjson.GetBytes(out[1], "messages").Array()
			if len(msgs) != 5 {
				t.Fatalf("%s", out[1])
			}
			inj := msgs[3]
			if inj.Get("role").Str != "system" || !strings.HasPrefix(inj.Get("content").Str, tc.prompt+"\n\n[1] ") || strings.Count(inj.Get("content").Str, "\nURL: https://") != 2 {
				t.Fatalf("injected %s", inj.Raw)
			}
			if msgs[4].Get("content").Str != "webassembly gateway plugins" || msgs[0].Get("content").Str != "be brief" || msgs[2].Get("content").Str != "hello" {
				t.Fatalf("other messages changed: %s", out[1])
			}
			if gjson.GetBytes(out[3], "results.#").Int() != 2 || gjson.GetBytes(out[2], "data.engine").Str != "exa" || gjson.GetBytes(out[2], "data.fee").Str != "0.007" {
				t.Fatalf("state %s summary %s", out[3], out[2])
			}
		})
	}
	t.Run("unknown engine is the caller's 400", func(t *testing.T) {
		out := pre(t, m, `{"config":{"id":"web","engine":"bing"}}`, convo)
		if string(out[0]) != abi.ActionBlock || gjson.GetBytes(out[1], "code").Int() != 400 || !strings.Contains(gjson.GetBytes(out[1], "message").Str, `unknown engine "bing"`) {
			t.Fatalf("%s %s", out[0], out[1])
		}
	})
	t.Run("engine outage: request goes on, stage says why", func(t *testing.T) {
		out := pre(t, m, `{"config":{"id":"web","engine":"searxng"}}`, convo)
		if string(out[0]) != abi.ActionContinue || len(out[1]) != 0 || !strings.Contains(gjson.GetBytes(out[2], "summary").Str, "base_url") {
			t.Fatalf("%q", out)
		}
	})
	t.Run("native leaves the search to the provider", func(t *testing.T) {
		out := pre(t, m, `{"config":{"id":"web","engine":"native","user_location":{"type":"approximate","country":"GB","city":"London"}}}`, convo)
		wso := gjson.GetBytes(out[1], "web_search_options")
		if wso.Get("user_location.type").Str != "approximate" || wso.Get("user_location.approximate.city").Str != "London" ||
			gjson.GetBytes(out[1], "messages.#").Int() != 4 || !gjson.GetBytes(out[1], "plugins.0").Exists() {
			t.Fatalf("%s", out[1])
		}
	})
	t.Run("no user message", func(t *testing.T) {
		out := pre(t, m, `{"config":{"id":"web"}}`, `{"model":"m","messages":[{"role":"system","content":"x"}]}`)
		if string(out[0]) != abi.ActionContinue || len(out[1]) != 0 {
			t.Fatalf("%q", out)
		}
	})
}

// demoState runs pre_request with the demo engine and returns the ctx the
// host hands the post hooks (ctx with the returned state).
func demoState(t *testing.T) (string, []websearch.Result) {
	m := &websearch.Module{}
	out := pre(t, m, `{"config":{"id":"web","max_results":3}}`, `{"model":"m","messages":[{"role":"user","content":"how does billing settle a stream"}]}`)
	if len(out) < 4 || len(out[3]) == 0 {
		t.Fatalf("no state: %q", out)
	}
	var rs []websearch.Result
	for _, r := range gjson.GetBytes(out[3], "results").Array() {
		rs = append(rs, websearch.Result{URL: r.Get("url").Str, Title: r.Get("title").Str, Content: r.Get("content").Str})
	}
	return `{"config":{"id":"web"},"state":` + string(out[3]) + `}`, rs
}

func TestPostResponseAnnotates(t *testing.T) {
	ctx, rs := demoState(t)
	content := "Per [billing](" + rs[1].URL + "), streams settle at the end."
	result := `{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":` + sdk.Quote(content) + `,"annotations":[{"type":"url_citation","url_citation":{"url":"https://native.example","title":"n","start_index":0,"end_index":1}}]},"finish_reason":"stop"}]}`
	out, err := sdk.Run((&websearch.Module{}).PostResponse, []byte(ctx), []byte(result))
	if err != nil {
		t.Fatal(err)
	}
	anns := gjson.GetBytes(out[1], "choices.0.message.annotations").Array()
	if len(anns) != 1+len(rs) || anns[0].Get("url_citation.url").Str != "https://native.example" {
		t.Fatalf("the provider's annotation must stay first: %s", out[1])
	}
	cited := anns[1].Get("url_citation")
	if cited.Get("url").Str != rs[1].URL || cited.Get("start_index").Int() != 4 || int(cited.Get("end_index").Int()) != 4+len("[billing]("+rs[1].URL+")") {
		t.Fatalf("%s", anns[1].Raw)
	}
	if anns[2].Get("url_citation.end_index").Int() != int64(len(content)) || anns[2].Get("url_citation.content").Str == "" {
		t.Fatalf("uncited source spans the answer: %s", anns[2].Raw)
	}
	// Without state (web did not search) nothing changes.
	out, _ = sdk.Run((&websearch.Module{}).PostResponse, []byte(`{"config":{"id":"web"}}`), []byte(result))
	if len(out[1]) != 0 {
		t.Fatalf("%s", out[1])
	}
}

// TestPostChunkStream plays the host: each post_chunk's state becomes the
// next call's ctx.state. A citation split across chunks is found, and the
// finishing chunk carries the same annotations the JSON answer would.
func TestPostChunkStream(t *testing.T) {
	ctx0, rs := demoState(t)
	content := "Über streams: see [docs](" + rs[0].URL + ") and " + rs[2].URL + " — done."
	parts := []string{content[:20], content[20:31], content[31:50], content[50:]}
	m := &websearch.Module{}
	ctx := ctx0
	var final gjson.Result
	chunk := func(delta, finish string) string {
		return `{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":` + sdk.Quote(delta) + `},"finish_reason":` + finish + `}]}`
	}
	in := []string{`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`}
	for i, p := range parts {
		fin := "null"
		if i == len(parts)-1 {
			fin = `"stop"`
		}
		in = append(in, chunk(p, fin))
	}
	in = append(in, `{"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":1}}`)
	for _, c := range in {
		out, err := sdk.Run(m.PostChunk, []byte(ctx), []byte(c))
		if err != nil {
			t.Fatal(err)
		}
		switch string(out[0]) {
		case abi.ActionContinue:
			if len(out) != 2 || string(out[1]) != c {
				t.Fatalf("an unchanged chunk must pass as is: %q", out)
			}
		case abi.ActionContinueState:
			ctx = `{"config":{"id":"web"},"state":` + string(out[1]) + `}`
			if gjson.GetBytes(out[2], "choices.0.finish_reason").Str == "stop" {
				final = gjson.GetBytes(out[2], "choices.0.delta.annotations")
			} else if gjson.GetBytes(out[2], "choices.0.delta.annotations").Exists() {
				t.Fatalf("annotations before the end: %s", out[2])
			}
		default:
			t.Fatalf("%q", out)
		}
	}
	want := gjson.ParseBytes(websearch.Annotations(content, rs))
	if final.Raw != want.Raw {
		t.Fatalf("stream annotations\n%s\nwant (as JSON)\n%s", final.Raw, want.Raw)
	}
	if len(want.Array()) != 3 || want.Get("0.url_citation.start_index").Int() == 0 {
		t.Fatalf("%s", want.Raw)
	}
}

func TestToolCall(t *testing.T) {
	_, s := fakes(t)
	m := &websearch.Module{HTTP: nativeHTTP(t)}
	settings := `{"engine":"demo","engines":{"brave":{"base_url":"` + s.Engines["brave"].BaseURL + `","fee":"0.004"}}}`
	call := func(ctx, args string) (gjson.Result, string) {
		out, err := sdk.Run(m.ToolCall, []byte(ctx), []byte("web_search"), []byte(args))
		if err != nil {
			t.Fatal(err)
		}
		return gjson.ParseBytes(out[0]), string(out[1])
	}
	res, cost := call(`{"settings":`+settings+`,"parameters":{"engine":"brave","max_results":2,"allowed_domains":["openai.com"]}}`, `{"query":"webassembly"}`)
	if res.Get("engine").Str != "brave" || res.Get("results.#").Int() != 1 || res.Get("results.0.url").Str != "https://openai.com/research/webassembly-agents" || cost != "0.004" {
		t.Fatalf("%s cost %q", res.Raw, cost)
	}
	res, cost = call(`{"settings":`+settings+`}`, `{"query":"rate limits per key"}`)
	if res.Get("engine").Str != "demo" || res.Get("results.#").Int() == 0 || cost != "" {
		t.Fatalf("the operator's default engine, free: %s %q", res.Raw, cost)
	}
	for _, tc := range []struct{ ctx, args, want string }{
		{`{"parameters":{"max_uses":2},"calls":2}`, `{"query":"x"}`, "max_uses (2) reached"},
		{`{"parameters":{"max_uses":2},"calls":1}`, `{"query":""}`, "arguments.query is required"},
		{`{"parameters":{"engine":"yahoo"}}`, `{"query":"x"}`, `unknown engine "yahoo"`},
		{`{}`, `not json`, "not a JSON object"},
	} {
		res, cost := call(tc.ctx, tc.args)
		if !strings.Contains(res.Get("error").Str, tc.want) || cost != "" {
			t.Fatalf("%s: %s %q", tc.ctx, res.Raw, cost)
		}
	}
	// The request's web plugin item (ctx.config) gives what the tool's
	// parameters leave unset.
	res, _ = call(`{"config":{"id":"web","include_domains":["docs.switchyard.demo/billing"],"max_results":1},"parameters":{"max_results":3}}`, `{"query":"stream billing"}`)
	if res.Get("results.#").Int() == 0 || !strings.HasPrefix(res.Get("results.0.url").Str, "https://docs.switchyard.demo/billing") {
		t.Fatalf("%s", res.Raw)
	}
	if res.Get("results.#").Int() > 3 {
		t.Fatalf("parameters.max_results wins: %s", res.Raw)
	}
	if res, _ := call(`{"parameters":{"max_uses":2},"calls":1}`, `{"query":"routing"}`); res.Get("error").Exists() {
		t.Fatalf("the second of two uses runs: %s", res.Raw)
	}
}

func TestToolMaxUsesCountedByModule(t *testing.T) {
	seen := map[string]int{}
	m := &websearch.Module{Uses: func(id string) (int, error) { n := seen[id]; seen[id]++; return n, nil }}
	for i, want := range []bool{true, true, false, false} {
		out, err := sdk.Run(m.ToolCall, []byte(`{"request_id":"r1","parameters":{"max_uses":2}}`), []byte("web_search"), []byte(`{"query":"routing"}`))
		if err != nil {
			t.Fatal(err)
		}
		if ok := !gjson.GetBytes(out[0], "error").Exists(); ok != want {
			t.Fatalf("call %d: %s", i, out[0])
		}
	}
	// Another request counts from zero; without max_uses nothing is counted.
	if out, _ := sdk.Run(m.ToolCall, []byte(`{"request_id":"r2","parameters":{"max_uses":2}}`), []byte("web_search"), []byte(`{"query":"routing"}`)); gjson.GetBytes(out[0], "error").Exists() {
		t.Fatalf("%s", out[0])
	}
	sdk.Run(m.ToolCall, []byte(`{"request_id":"r3"}`), []byte("web_search"), []byte(`{"query":"routing"}`))
	if _, counted := seen["r3"]; counted {
		t.Fatal("counted without max_uses")
	}
}

func TestMalformedSettings(t *testing.T) {
	for _, st := range []string{`"exa"`, `{"engines":{"exa":"key"}}`} {
		if _, err := sdk.Run((&websearch.Module{}).PreRequest, []byte(`{"config":{"id":"web"},"settings":`+st+`}`), []byte(convo)); err == nil || !strings.Contains(err.Error(), "module_settings.web") {
			t.Fatalf("%s: %v", st, err)
		}
	}
	s, err := websearch.ParseSettings(gjson.Parse(`{"engine":"exa","max_results":3,"engines":{"exa":{"fee":"0.01"}}}`))
	if err != nil || s.Engine != "exa" || s.MaxResults != 3 || s.For("exa").Fee != "0.01" || s.For("exa").BaseURL != "https://api.exa.ai" || s.For("exa").Secret != "EXA_API_KEY" {
		t.Fatalf("%+v %v", s, err)
	}
}
