package server_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/config"
	"github.com/switchyard/switchyard/host/demo"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/gjson"
)

// The OpenAI Responses front door (POST /responses) over loopback against
// the offline demo provider: JSON, stream, a function-call round trip,
// errors, and the charge of the equivalent chat request.

const weatherTool = `[{"type":"function","name":"get_weather","description":"the weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]`

func TestResponsesJSON(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	resp, body := post(t, g, "/responses", `{"model":"test/chat","instructions":"be brief","input":"hello there","temperature":0.3,"max_output_tokens":50,"store":true,"metadata":{"k":"v"},"provider":{"sort":"price"}}`)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body.Raw)
	}
	gen := resp.Header.Get("X-Generation-Id")
	if gen == "" || body.Get("id").Str != "resp_"+strings.TrimPrefix(gen, "gen-") {
		t.Fatalf("id %q, generation %q", body.Get("id").Str, gen)
	}
	for path, want := range map[string]string{
		"object":                  "response",
		"status":                  "completed",
		"model":                   "test/chat",
		"output.#":                "1",
		"output.0.type":           "message",
		"output.0.role":           "assistant",
		"output.0.status":         "completed",
		"output.0.content.0.type": "output_text",
		"instructions":            "be brief",
		"max_output_tokens":       "50",
		"temperature":             "0.3",
		"metadata.k":              "v",
		"error":                   "",
		"incomplete_details":      "",
		"tool_choice":             "auto",
		"text.format.type":        "text",
		"usage.input_tokens_details.cached_tokens":     "0",
		"usage.output_tokens_details.reasoning_tokens": "0",
	} {
		if got := body.Get(path).String(); got != want {
			t.Errorf("%s = %q, want %q", path, got, want)
		}
	}
	if !strings.Contains(body.Get("output.0.content.0.text").Str, "You said: hello there") {
		t.Errorf("text %q", body.Get("output.0.content.0.text").Str)
	}
	u := body.Get("usage")
	if u.Get("input_tokens").Int() == 0 || u.Get("output_tokens").Int() == 0 ||
		u.Get("total_tokens").Int() != u.Get("input_tokens").Int()+u.Get("output_tokens").Int() {
		t.Errorf("usage %s", u.Raw)
	}
	// What reached the provider: the chat request it stands for.
	up := gjson.ParseBytes(g.Upstreams["alpha"].Last().Body)
	if up.Get("messages.0.role").Str != "system" || up.Get("messages.0.content").Str != "be brief" ||
		up.Get("messages.1.role").Str != "user" || up.Get("messages.1.content").Str != "hello there" {
		t.Errorf("upstream messages %s", up.Get("messages").Raw)
	}
	if up.Get("max_tokens").Int() != 50 && up.Get("max_completion_tokens").Int() != 50 {
		t.Errorf("max_output_tokens not sent as the token limit: %s", up.Raw)
	}
	for _, gone := range []string{"input", "instructions", "store", "max_output_tokens", "provider"} {
		if up.Get(gone).Exists() {
			t.Errorf("%s reached the upstream: %s", gone, up.Raw)
		}
	}
}

// responsesEvents posts a streaming Responses request and returns its
// events' data, checking the framing: each event named by `event:` as its
// type, sequence numbers 0, 1, 2…
func responsesEvents(t *testing.T, g *gatewaytest.Gateway, body string) []gjson.Result {
	t.Helper()
	evs, _ := responsesEventsComments(t, g, body)
	return evs
}

// responsesEventsComments is responsesEvents with the number of comment
// lines (keep-alives) seen.
func responsesEventsComments(t *testing.T, g *gatewaytest.Gateway, body string) (events []gjson.Result, comments int) {
	t.Helper()
	req, _ := http.NewRequest("POST", g.URL+"/responses", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+g.Key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	name := ""
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
		case strings.HasPrefix(line, ":"):
			comments++
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			ev := gjson.Parse(strings.TrimPrefix(line, "data: "))
			if ev.Get("type").Str != name {
				t.Fatalf("event %q carries type %q", name, ev.Get("type").Str)
			}
			if ev.Get("sequence_number").Int() != int64(len(events)) {
				t.Fatalf("event %d has sequence_number %d", len(events), ev.Get("sequence_number").Int())
			}
			events = append(events, ev)
			name = ""
		default:
			t.Fatalf("unexpected line %q", line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return events, comments
}

func eventTypes(evs []gjson.Result) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Get("type").Str)
	}
	return out
}

func TestResponsesStream(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	evs := responsesEvents(t, g, `{"model":"test/chat","stream":true,"input":[{"role":"user","content":[{"type":"input_text","text":"stream me"}]}]}`)
	types := eventTypes(evs)
	if len(types) < 9 {
		t.Fatalf("events %v", types)
	}
	head := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"}
	tail := []string{"response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"}
	if strings.Join(types[:4], ",") != strings.Join(head, ",") || strings.Join(types[len(types)-4:], ",") != strings.Join(tail, ",") {
		t.Fatalf("events %v", types)
	}
	var text strings.Builder
	for _, e := range evs[4 : len(evs)-4] {
		if e.Get("type").Str != "response.output_text.delta" {
			t.Fatalf("unexpected %s between the part's start and end", e.Raw)
		}
		text.WriteString(e.Get("delta").Str)
	}
	if !strings.Contains(text.String(), "You said: stream me") {
		t.Fatalf("streamed text %q", text.String())
	}
	if evs[0].Get("response.status").Str != "in_progress" || evs[0].Get("response.output.#").Int() != 0 {
		t.Fatalf("created %s", evs[0].Raw)
	}
	done := evs[len(evs)-1].Get("response")
	if done.Get("status").Str != "completed" || done.Get("output.0.content.0.text").Str != text.String() ||
		evs[len(evs)-4].Get("text").Str != text.String() {
		t.Fatalf("completed %s", done.Raw)
	}
	if done.Get("usage.output_tokens").Int() == 0 || done.Get("usage.total_tokens").Int() == 0 {
		t.Fatalf("no usage on response.completed: %s", done.Raw)
	}
	if done.Get("id").Str != evs[0].Get("response.id").Str || !strings.HasPrefix(done.Get("id").Str, "resp_") {
		t.Fatalf("ids %s / %s", evs[0].Get("response.id").Str, done.Get("id").Str)
	}
}

// The model calls a function; the client runs it and sends the call and
// its output back as input items; the model answers with the result.
func TestResponsesFunctionCallRoundTrip(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	resp, body := post(t, g, "/responses", `{"model":"test/chat","input":"call:get_weather please","tools":`+weatherTool+`}`)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body.Raw)
	}
	call := body.Get(`output.#(type=="function_call")`)
	if call.Get("name").Str != "get_weather" || call.Get("call_id").Str == "" || call.Get("status").Str != "completed" ||
		!strings.HasPrefix(call.Get("id").Str, "fc_") || !gjson.Valid(call.Get("arguments").Str) {
		t.Fatalf("no function call in %s", body.Raw)
	}
	up := gjson.ParseBytes(g.Upstreams["alpha"].Last().Body)
	if up.Get("tools.0.function.name").Str != "get_weather" || up.Get("tools.0.type").Str != "function" {
		t.Fatalf("upstream tools %s", up.Get("tools").Raw)
	}

	// Round trip: the call as it came, then its output.
	input := `[{"role":"user","content":"call:get_weather please"},` + call.Raw +
		`,{"type":"function_call_output","call_id":` + call.Get("call_id").Raw + `,"output":"sunny and 21C"}]`
	resp, body = post(t, g, "/responses", `{"model":"test/chat","input":`+input+`,"tools":`+weatherTool+`}`)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body.Raw)
	}
	if body.Get("output.0.type").Str != "message" || !strings.Contains(body.Get("output.0.content.0.text").Str, "sunny and 21C") {
		t.Fatalf("answer %s", body.Raw)
	}
	up = gjson.ParseBytes(g.Upstreams["alpha"].Last().Body)
	msgs := up.Get("messages")
	if msgs.Get("1.role").Str != "assistant" || msgs.Get("1.tool_calls.0.id").Str != call.Get("call_id").Str ||
		msgs.Get("1.tool_calls.0.function.arguments").Str != call.Get("arguments").Str ||
		msgs.Get("2.role").Str != "tool" || msgs.Get("2.tool_call_id").Str != call.Get("call_id").Str {
		t.Fatalf("upstream messages %s", msgs.Raw)
	}

	// Streamed, the call arrives as function_call_arguments events.
	evs := responsesEvents(t, g, `{"model":"test/chat","stream":true,"input":"call:get_weather args:{\"city\":\"Paris\"}","tools":`+weatherTool+`}`)
	var added, args, argsDone gjson.Result
	var deltas strings.Builder
	for _, e := range evs {
		switch e.Get("type").Str {
		case "response.output_item.added":
			if e.Get("item.type").Str == "function_call" {
				added = e
			}
		case "response.function_call_arguments.delta":
			deltas.WriteString(e.Get("delta").Str)
			args = e
		case "response.function_call_arguments.done":
			argsDone = e
		}
	}
	if added.Get("item.name").Str != "get_weather" || added.Get("item.call_id").Str == "" || !args.Exists() {
		t.Fatalf("events %v", eventTypes(evs))
	}
	if argsDone.Get("arguments").Str != deltas.String() || !strings.Contains(deltas.String(), `"city":"Paris"`) {
		t.Fatalf("arguments %q, deltas %q", argsDone.Get("arguments").Str, deltas.String())
	}
	final := evs[len(evs)-1].Get("response")
	fc := final.Get(`output.#(type=="function_call")`)
	if fc.Get("call_id").Str != added.Get("item.call_id").Str || fc.Get("arguments").Str != deltas.String() {
		t.Fatalf("completed %s", final.Raw)
	}
}

// wantResponsesError checks OpenAI's error object, which the Responses
// front door answers with (docs/front-doors.md, "Errors"): message, type,
// param and code, the last two strings or null ("" here).
func wantResponsesError(t *testing.T, resp *http.Response, body gjson.Result, status int, typ, param, code, msgPart string) {
	t.Helper()
	e := body.Get("error")
	if resp.StatusCode != status || e.Get("type").Str != typ || !strings.Contains(e.Get("message").Str, msgPart) {
		t.Fatalf("status %d, want %d %s %q; body %s", resp.StatusCode, status, typ, msgPart, body.Raw)
	}
	for name, want := range map[string]string{"param": param, "code": code} {
		v := e.Get(name)
		if !v.Exists() || (want == "" && v.Type != gjson.Null) || (want != "" && (v.Type != gjson.String || v.Str != want)) {
			t.Fatalf("error.%s %s, want %q; body %s", name, v.Raw, want, body.Raw)
		}
	}
}

func TestResponsesErrors(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	cases := []struct {
		name, body            string
		status                int
		typ, param, code, msg string
	}{
		{"unknown previous_response_id", `{"model":"test/chat","input":"hi","previous_response_id":"resp_1"}`, 404, "not_found_error", "", "", "previous_response_id"},
		{"conversation", `{"model":"test/chat","input":"hi","conversation":"conv_1"}`, 400, "invalid_request_error", "conversation", "invalid_prompt", "conversation"},
		{"no input", `{"model":"test/chat"}`, 400, "invalid_request_error", "input", "invalid_prompt", "input"},
		{"not JSON", `{"model":`, 400, "invalid_request_error", "", "invalid_prompt", "not valid JSON"},
		{"hosted tool", `{"model":"test/chat","input":"hi","tools":[{"type":"file_search"}]}`, 400, "invalid_request_error", "tools[0].type", "invalid_prompt", "tools[0].type"},
		{"bad role", `{"model":"test/chat","input":[{"role":"robot","content":"hi"}]}`, 400, "invalid_request_error", "input[0].role", "invalid_prompt", "input[0].role"},
		{"chat's field named as Responses'", `{"model":"test/chat","input":"hi","max_output_tokens":-1}`, 400, "invalid_request_error", "max_output_tokens", "invalid_prompt", ""},
		{"context overflow", `{"model":"test/chat","plugins":[{"id":"context-compression","enabled":false}],"input":"` + strings.Repeat("lighthouse ", 10000) + `"}`, 400, "invalid_request_error", "input", "context_length_exceeded", "does not fit"},
		{"unknown model", `{"model":"nope/none","input":"hi"}`, 404, "not_found_error", "", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := post(t, g, "/responses", tc.body)
			wantResponsesError(t, resp, body, tc.status, tc.typ, tc.param, tc.code, tc.msg)
		})
	}
	t.Run("hosted web search is the gateway's", func(t *testing.T) {
		resp, body := post(t, g, "/responses", `{"model":"test/chat","input":"hi","tools":[{"type":"web_search_preview"}]}`)
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, body.Raw)
		}
		up := gjson.ParseBytes(g.Upstreams["alpha"].Last().Body)
		if up.Get(`tools.#(function.name=="web_search")`).Raw == "" {
			t.Fatalf("the server tool was not offered: %s", up.Get("tools").Raw)
		}
	})
	t.Run("auth", func(t *testing.T) {
		resp, body := post(t, g, "/responses", `{"model":"test/chat","input":"hi"}`, "Authorization", "Bearer sk-sy-v1-nope000000000000000000000000")
		wantResponsesError(t, resp, body, 401, "authentication_error", "", "invalid_api_key", "Invalid API key")
	})
	t.Run("unknown stored response", func(t *testing.T) {
		for _, m := range []string{"GET", "DELETE"} {
			resp, b, err := g.Request(m, "/responses/resp_abc", "")
			if err != nil {
				t.Fatal(err)
			}
			wantResponsesError(t, resp, gjson.ParseBytes(b), 404, "not_found_error", "", "", "not found")
		}
	})
}

// A Responses request is the chat request it stands for: the same tokens,
// the same cost, the same generation record.
func TestResponsesChargesAsChat(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	resp, chat := post(t, g, "/chat/completions", `{"model":"test/chat","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"price me"}]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, chat.Raw)
	}
	resp, res := post(t, g, "/responses", `{"model":"test/chat","instructions":"be brief","input":"price me"}`)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, res.Raw)
	}
	cu, ru := chat.Get("usage"), res.Get("usage")
	if cu.Get("cost").Float() <= 0 || cu.Get("cost").Float() != ru.Get("cost").Float() ||
		cu.Get("prompt_tokens").Int() != ru.Get("input_tokens").Int() || cu.Get("completion_tokens").Int() != ru.Get("output_tokens").Int() {
		t.Fatalf("chat usage %s, responses usage %s", cu.Raw, ru.Raw)
	}
	cg := generation(t, g, g.Key, chat.Get("id").Str)
	rg := generation(t, g, g.Key, resp.Header.Get("X-Generation-Id"))
	for _, f := range []string{"total_cost", "tokens_prompt", "tokens_completion", "model", "status"} {
		if cg.Get(f).String() != rg.Get(f).String() {
			t.Errorf("generation %s: chat %q, responses %q", f, cg.Get(f).String(), rg.Get(f).String())
		}
	}
}

// A request with a server tool runs the server-tool loop, whose stream the
// gateway pushes (not the pump): it is translated on the way out too, and
// a client's function call still ends it.
func TestResponsesServerToolStream(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	evs := responsesEvents(t, g, `{"model":"test/chat","stream":true,"input":"what is the date today?","tools":[{"type":"service:datetime"}]}`)
	done := evs[len(evs)-1]
	if done.Get("type").Str != "response.completed" {
		t.Fatalf("events %v", eventTypes(evs))
	}
	text := done.Get("response.output.0.content.0.text").Str
	if !strings.Contains(text, `"timezone":"UTC"`) || done.Get("response.usage.server_tool_use_details.tool_calls_executed").Int() != 1 {
		t.Fatalf("completed %s", done.Raw)
	}
	evs = responsesEvents(t, g, `{"model":"test/chat","stream":true,"input":"call:datetime call:get_weather",`+
		`"tools":[{"type":"service:datetime"},{"type":"function","name":"get_weather","parameters":{"type":"object"}}]}`)
	final := evs[len(evs)-1].Get("response")
	var calls []string
	final.Get("output").ForEach(func(_, o gjson.Result) bool {
		if o.Get("type").Str == "function_call" {
			calls = append(calls, o.Get("name").Str)
		}
		return true
	})
	if len(calls) != 1 || calls[0] != "get_weather" {
		t.Fatalf("function calls %v in %s", calls, final.Raw)
	}
}

// Keep-alives go out while the upstream is quiet (straight to the
// connection, between whole translated events), and a stream the upstream
// cuts short ends with error and response.failed.
func TestResponsesStreamKeepAliveAndCut(t *testing.T) {
	g := start(t, gatewaytest.Options{Mutate: func(c *config.Config) {
		c.KeepAlive = config.Duration(20 * time.Millisecond)
	}})
	g.Upstreams["alpha"].SetFaults(demo.Faults{ChunkDelay: 60 * time.Millisecond, CutAfter: 3})
	evs, comments := responsesEventsComments(t, g, `{"model":"test/chat","stream":true,"input":"a b c d e f"}`)
	if comments == 0 {
		t.Errorf("no keep-alive while the upstream was silent")
	}
	types := eventTypes(evs)
	if len(types) < 4 || types[0] != "response.created" || types[len(types)-2] != "error" || types[len(types)-1] != "response.failed" {
		t.Fatalf("events %v", types)
	}
	failed := evs[len(evs)-1].Get("response")
	if failed.Get("status").Str != "failed" || !strings.Contains(failed.Get("error.message").Str, "ended the stream before it was complete") ||
		failed.Get("error.code").Str != "server_error" {
		t.Fatalf("failed %s", failed.Raw)
	}
	// OpenAI's error event: {type, code, message, param, sequence_number}.
	if e := evs[len(evs)-2]; e.Get("type").Str != "error" || e.Get("code").Str != "server_error" || e.Get("message").Str != failed.Get("error.message").Str ||
		e.Get("param").Type != gjson.Null || !e.Get("sequence_number").Exists() {
		t.Fatalf("error event %s", e.Raw)
	}
}

// A client that leaves a Responses stream cancels the upstream, as on
// chat: the translating reader closes the pump.
func TestResponsesClientDisconnectCancelsUpstream(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	up := g.Upstreams["alpha"]
	up.SetFaults(demo.Faults{ChunkDelay: 200 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", g.URL+"/responses",
		strings.NewReader(`{"model":"test/chat","stream":true,"input":"one two three four five six seven"}`))
	req.Header.Set("Authorization", "Bearer "+g.Key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	waitFor(t, "the upstream stream cancelled after the client went away", func() bool { return up.Cancelled() > 0 })
}

func getJSON(t *testing.T, g *gatewaytest.Gateway, method, path, key string) (*http.Response, gjson.Result) {
	t.Helper()
	resp, b, err := g.Request(method, path, "", "Authorization", "Bearer "+key)
	if err != nil {
		t.Fatal(err)
	}
	return resp, gjson.ParseBytes(b)
}

// Responses are kept per account (store defaults to true): readable by
// id, their input items listed, continued with previous_response_id —
// streamed or not, a function call answered by its output alone — deleted,
// never seen by another account, and not kept with store:false.
func TestResponsesStored(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	resp, first := post(t, g, "/responses", `{"model":"test/chat","instructions":"be brief","input":"remember lighthouse","tools":`+weatherTool+`}`)
	if resp.StatusCode != 200 || first.Get("store").Bool() != true {
		t.Fatalf("%d %s", resp.StatusCode, first.Raw)
	}
	id := first.Get("id").Str
	resp, got := getJSON(t, g, "GET", "/responses/"+id, g.Key)
	if resp.StatusCode != 200 || got.Raw != first.Raw {
		t.Fatalf("GET %d %s\nwant %s", resp.StatusCode, got.Raw, first.Raw)
	}
	resp, items := getJSON(t, g, "GET", "/responses/"+id+"/input_items", g.Key)
	if resp.StatusCode != 200 || items.Get("object").Str != "list" || items.Get("data.#").Int() != 1 ||
		items.Get("data.0.content.0.text").Str != "remember lighthouse" || items.Get("data.0.id").Str == "" ||
		items.Get("first_id").Str != items.Get("data.0.id").Str || items.Get("has_more").Bool() {
		t.Fatalf("input_items %d %s", resp.StatusCode, items.Raw)
	}

	// Continued, streamed: the stored turn comes first, the instructions
	// do not carry over (OpenAI's rule).
	evs := responsesEvents(t, g, `{"model":"test/chat","stream":true,"previous_response_id":"`+id+`","input":"call:get_weather now","tools":`+weatherTool+`}`)
	second := evs[len(evs)-1].Get("response")
	up := gjson.ParseBytes(g.Upstreams["alpha"].Last().Body).Get("messages")
	if up.Get("#").Int() != 3 || up.Get("0.content.0.text").Str != "remember lighthouse" || up.Get("1.role").Str != "assistant" ||
		!strings.Contains(up.Get("1.content").Str, "You said: remember lighthouse") || up.Get("2.content").Str != "call:get_weather now" {
		t.Fatalf("upstream messages %s", up.Raw)
	}
	if second.Get("previous_response_id").Str != id {
		t.Fatalf("second %s", second.Raw)
	}
	call := second.Get(`output.#(type=="function_call")`)
	if call.Get("call_id").Str == "" {
		t.Fatalf("no call in %s", second.Raw)
	}
	if resp, got := getJSON(t, g, "GET", "/responses/"+second.Get("id").Str, g.Key); resp.StatusCode != 200 || got.Get("output").Raw != second.Get("output").Raw {
		t.Fatalf("the streamed response was not kept: %d %s", resp.StatusCode, got.Raw)
	}

	// The call answered by its output alone.
	resp, third := post(t, g, "/responses", `{"model":"test/chat","previous_response_id":"`+second.Get("id").Str+
		`","input":[{"type":"function_call_output","call_id":`+call.Get("call_id").Raw+`,"output":"foggy"}],"tools":`+weatherTool+`,"store":false}`)
	if resp.StatusCode != 200 || !strings.Contains(third.Get("output.0.content.0.text").Str, "foggy") || third.Get("store").Bool() {
		t.Fatalf("%d %s", resp.StatusCode, third.Raw)
	}
	up = gjson.ParseBytes(g.Upstreams["alpha"].Last().Body).Get("messages")
	if up.Get("#").Int() != 5 || up.Get("3.tool_calls.0.id").Str != call.Get("call_id").Str || up.Get("4.tool_call_id").Str != call.Get("call_id").Str {
		t.Fatalf("upstream messages %s", up.Raw)
	}
	if resp, _ := getJSON(t, g, "GET", "/responses/"+third.Get("id").Str, g.Key); resp.StatusCode != 404 {
		t.Fatalf("a store:false response was kept: %d", resp.StatusCode)
	}

	// Another account sees none of it.
	_, other := newAccount(t, g, "other", 1_000_000_000)
	for _, path := range []string{"/responses/" + id, "/responses/" + id + "/input_items"} {
		resp, body := getJSON(t, g, "GET", path, other)
		wantResponsesError(t, resp, body, 404, "not_found_error", "", "", "not found")
	}
	resp, body := getJSON(t, g, "DELETE", "/responses/"+id, other)
	wantResponsesError(t, resp, body, 404, "not_found_error", "", "", "not found")
	resp, body = post(t, g, "/responses", `{"model":"test/chat","previous_response_id":"`+id+`","input":"hi"}`, "Authorization", "Bearer "+other)
	wantResponsesError(t, resp, body, 404, "not_found_error", "", "", "previous_response_id")

	// Deleted: gone for its owner too.
	resp, body = getJSON(t, g, "DELETE", "/responses/"+id, g.Key)
	if resp.StatusCode != 200 || !body.Get("deleted").Bool() {
		t.Fatalf("DELETE %d %s", resp.StatusCode, body.Raw)
	}
	if resp, _ := getJSON(t, g, "GET", "/responses/"+id, g.Key); resp.StatusCode != 404 {
		t.Fatalf("GET after DELETE: %d", resp.StatusCode)
	}
}

// Credits and rate limits are chat's: no credits is a 402 before any
// upstream call, and a key's requests per minute count Responses requests
// (refused ones included) with chat's.
func TestResponsesCreditsAndLimits(t *testing.T) {
	t.Run("no credits", func(t *testing.T) {
		g := start(t, gatewaytest.Options{Credits: -1})
		resp, body := post(t, g, "/responses", `{"model":"test/chat","input":"hi"}`)
		wantResponsesError(t, resp, body, 402, "insufficient_quota", "", "insufficient_quota", "")
		if g.Upstreams["alpha"].Count() != 0 {
			t.Fatal("a request without credits reached the upstream")
		}
	})
	t.Run("rate limit", func(t *testing.T) {
		g := start(t, gatewaytest.Options{})
		key := limitedKey(t, g, "rl", `{"requests_per_minute":3}`)
		if resp, b := call(t, g, key, "/chat/completions", hello); resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		if resp, b := call(t, g, key, "/responses", `{"model":"test/chat","input":"hi"}`); resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		if resp, b := call(t, g, key, "/responses", `{"model":"test/chat"}`); resp.StatusCode != 400 {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		resp, b := call(t, g, key, "/responses", `{"model":"test/chat","input":"hi"}`)
		if resp.StatusCode != 429 {
			t.Fatalf("fourth request of a 3-per-minute key: %d %s", resp.StatusCode, b)
		}
	})
}
