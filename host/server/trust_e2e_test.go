package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/gjson"
)

// englandFlag is a flag written with tag characters (U+E0067…), which
// strconv.Quote escapes as \U000e0067: not JSON.
const englandFlag = "\U0001F3F4\U000E0067\U000E0062\U000E0065\U000E006E\U000E0067\U000E007F"

// A server tool's result holding DEL, ESC, bytes that are not UTF-8 and a
// flag reaches the next upstream turn and the client as valid JSON (issue
// 31 item 5): once from a hostile page fetched by service:web_fetch, once
// from a module (tooltest) whose result carries the raw bytes itself; each
// answered as JSON and streamed.
func TestServerToolHostileResult(t *testing.T) {
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "DEL[\x7f] ESC[\x1b] bad[\xff\xfe] flag["+englandFlag+"]")
	}))
	t.Cleanup(page.Close)
	g := start(t, gatewaytest.Options{AllowPrivateNetworks: true})
	publishToolTest(t, g)
	for _, tc := range []struct{ name, user, tools string }{
		{"web_fetch of a hostile page", "Please fetch " + page.URL + "/hostile", `[{"type":"service:web_fetch"}]`},
		{"module result", `call:tooltest args:{"hostile":true}`, `[{"type":"service:tooltest"}]`},
	} {
		for _, stream := range []bool{false, true} {
			name := tc.name
			if stream {
				name += " streamed"
			}
			t.Run(name, func(t *testing.T) {
				extra := ""
				if stream {
					extra = `,"stream":true`
				}
				body := toolsBody(tc.user, tc.tools, extra)
				var answer string
				if stream {
					raw := readStream(t, g, body)
					var text strings.Builder
					done := false
					for _, line := range strings.Split(raw, "\n") {
						data, ok := strings.CutPrefix(line, "data: ")
						if !ok {
							continue
						}
						if data == "[DONE]" {
							done = true
							continue
						}
						if !json.Valid([]byte(data)) || !utf8.ValidString(data) {
							t.Fatalf("an event the client got is not valid JSON: %q", data)
						}
						if e := gjson.Get(data, "error"); e.Exists() {
							t.Fatalf("the stream ended in an error: %s", data)
						}
						text.WriteString(gjson.Get(data, "choices.0.delta.content").Str)
					}
					if !done {
						t.Fatalf("no [DONE]: %s", raw)
					}
					answer = text.String()
				} else {
					resp, res := post(t, g, "/chat/completions", body)
					if resp.StatusCode != http.StatusOK {
						t.Fatalf("%d %s", resp.StatusCode, res.Raw)
					}
					answer = res.Get("choices.0.message.content").Str
				}
				// The second turn's body: valid JSON whose tool message holds
				// the result, DEL and flag as they are, the bad bytes as
				// U+FFFD (web-fetch makes a run of them one), the ESC as the
				// result's own escape.
				sent := g.Upstreams["alpha"].Last().Body
				if !json.Valid(sent) || !utf8.Valid(sent) {
					t.Fatalf("the next upstream turn's body is not valid JSON: %q", sent)
				}
				msgs := gjson.GetBytes(sent, "messages").Array()
				tool := msgs[len(msgs)-1]
				want := []string{"DEL[\x7f]", `ESC[\u001b]`, "bad[\uFFFD", "flag[" + englandFlag + "]"}
				for _, w := range want {
					if tool.Get("role").Str != "tool" || !strings.Contains(tool.Get("content").Str, w) {
						t.Fatalf("tool message lacks %q: %q", w, tool.Raw)
					}
				}
				// The model quoted the result back: the client got it.
				if !strings.Contains(answer, "Tool results:") || !strings.Contains(answer, englandFlag) || !strings.Contains(answer, "DEL[\x7f]") {
					t.Fatalf("answer %q", answer)
				}
			})
		}
	}
}

// manyCalls is an OpenAI-style upstream whose first turn calls datetime as
// many times as the user's message says ("calls:N"), all in one turn (in
// chunks of 100 calls when streamed); a later turn answers "done".
func manyCalls(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	msgs := gjson.GetBytes(body, "messages").Array()
	n := 0
	if len(msgs) == 1 {
		n, _ = strconv.Atoi(strings.TrimPrefix(msgs[0].Get("content").Str, "calls:"))
	}
	call := func(i int, index bool) string {
		s := `{`
		if index {
			s += `"index":` + strconv.Itoa(i) + `,`
		}
		return s + `"id":"call_` + strconv.Itoa(i) + `","type":"function","function":{"name":"datetime","arguments":"{}"}}`
	}
	usage := `"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}`
	if !gjson.GetBytes(body, "stream").Bool() {
		w.Header().Set("Content-Type", "application/json")
		msg, finish := `{"role":"assistant","content":"done"}`, "stop"
		if n > 0 {
			var calls []string
			for i := range n {
				calls = append(calls, call(i, false))
			}
			msg, finish = `{"role":"assistant","content":null,"tool_calls":[`+strings.Join(calls, ",")+`]}`, "tool_calls"
		}
		io.WriteString(w, `{"id":"x","object":"chat.completion","created":1,"model":"echo","choices":[{"index":0,"message":`+msg+`,"finish_reason":"`+finish+`"}],`+usage+`}`)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	head := `{"id":"x","object":"chat.completion.chunk","created":1,"model":"echo","choices":`
	send := func(ch string) { io.WriteString(w, "data: "+ch+"\n\n") }
	finish := "stop"
	if n == 0 {
		send(head + `[{"index":0,"delta":{"role":"assistant","content":"done"},"finish_reason":null}]}`)
	}
	for i := 0; i < n; i += 100 {
		var calls []string
		for j := i; j < min(i+100, n); j++ {
			calls = append(calls, call(j, true))
		}
		send(head + `[{"index":0,"delta":{"tool_calls":[` + strings.Join(calls, ",") + `]},"finish_reason":null}]}`)
		finish = "tool_calls"
	}
	send(head + `[{"index":0,"delta":{},"finish_reason":"` + finish + `"}]}`)
	send(head + `[],` + usage + `}`)
	send("[DONE]")
}

// An upstream turn with more tool calls than limits.max_tool_calls_per_turn
// (default 128) is the upstream's fault: 502 naming the limit, and no next
// turn is made (issue 31 item 17: 5,000 calls in one turn were accepted,
// 1.3 MB of metadata and 5.4 s). A turn at the limit is served.
func TestServerToolCallsPerTurnCapped(t *testing.T) {
	var turns atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		turns.Add(1)
		manyCalls(w, r)
	}))
	t.Cleanup(srv.Close)
	// A context that holds the results of 128 calls.
	g := start(t, gatewaytest.Options{Providers: []string{}, ConfigYAML: "demo: false\ntimeouts: {attempt: 10s, request: 30s}\nproviders:\n" +
		"  - {slug: raw, name: Raw, adapter: openai, base_url: \"" + srv.URL + "/v1\", data_collection: deny, region: us}\n" +
		"models:\n  - id: test/raw\n    kind: chat\n    context_length: 1000000\n    endpoints:\n" +
		"      - {provider: raw, upstream_model: echo, max_output: 1024, price: {prompt: 1, completion: 2}}\n"})
	body := func(n int, stream bool) string {
		return `{"model":"test/raw","stream":` + strconv.FormatBool(stream) + `,"messages":[{"role":"user","content":"calls:` + strconv.Itoa(n) +
			`"}],"tools":[{"type":"service:datetime"}]}`
	}
	const want = "tool calls in one turn; this gateway's limit is 128 (limits.max_tool_calls_per_turn)"
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			// At the limit: served (8 calls run, the rest skipped).
			turns.Store(0)
			if stream {
				raw := readStream(t, g, body(128, true))
				if !strings.Contains(raw, "data: [DONE]") || strings.Contains(raw, `"error"`) {
					t.Fatalf("128 calls: %s", raw)
				}
			} else if resp, res := post(t, g, "/chat/completions", body(128, false)); resp.StatusCode != http.StatusOK {
				t.Fatalf("128 calls: %d %s", resp.StatusCode, res.Raw)
			}
			if turns.Load() != 2 {
				t.Fatalf("128 calls: %d turns", turns.Load())
			}
			// Past it: refused, and no second turn.
			turns.Store(0)
			if stream {
				raw := readStream(t, g, body(5000, true))
				var last gjson.Result
				for _, line := range strings.Split(raw, "\n") {
					if d, ok := strings.CutPrefix(line, "data: "); ok && d != "[DONE]" {
						last = gjson.Parse(d)
					}
				}
				if last.Get("error.code").Int() != http.StatusBadGateway || !strings.Contains(last.Get("error.message").Str, want) ||
					!strings.Contains(last.Get("error.message").Str, "more than 128 tool calls") {
					t.Fatalf("last event %s", last.Raw)
				}
			} else {
				resp, res := post(t, g, "/chat/completions", body(5000, false))
				wantError(t, resp, res, http.StatusBadGateway, want)
				wantError(t, resp, res, http.StatusBadGateway, "5000 tool calls")
			}
			if turns.Load() != 1 {
				t.Fatalf("5000 calls: %d upstream requests, want 1 (no turn after the refused one)", turns.Load())
			}
		})
	}
}

// A plugin's output is held to its contract before anyone sees it (issue
// 31 item 13): a stage cost that is not a non-negative dollar amount, or a
// result or chunk with a field of the wrong type, is a 502 naming the
// plugin; bytes that are not UTF-8 become U+FFFD. Driven through the test
// plugin, as JSON and streamed.
func TestPluginOutputNormalised(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	wasmPath, mf := testPlugin(t)
	if resp, body := publish(t, g, g.Key, wasmPath, mf, "global", true); resp.StatusCode != 201 {
		t.Fatalf("publish: %d %s", resp.StatusCode, body.Raw)
	}
	body := func(cfg string, stream bool) string {
		return `{"model":"test/chat","stream":` + strconv.FormatBool(stream) + `,"messages":[{"role":"user","content":"hello there"}],"plugins":[{"id":"testplugin",` + cfg + `}]}`
	}
	request := func(t *testing.T, b string) (*http.Response, []byte) {
		t.Helper()
		resp, raw, err := g.Request(http.MethodPost, "/chat/completions", b, "X-Service-Metadata", "enabled")
		if err != nil {
			t.Fatal(err)
		}
		if !utf8.Valid(raw) || (!json.Valid(raw) && !strings.Contains(b, `"stream":true`)) {
			t.Fatalf("the client got bytes that are not UTF-8 JSON: %q", raw)
		}
		return resp, raw
	}
	refused := func(t *testing.T, resp *http.Response, raw []byte, what string) {
		t.Helper()
		res := gjson.ParseBytes(raw)
		wantError(t, resp, res, http.StatusBadGateway, "plugin testplugin")
		wantError(t, resp, res, http.StatusBadGateway, what)
	}
	for _, tc := range []struct{ name, cost string }{
		{"negative number", `-50`},
		{"negative string", `"-50"`},
		{"not finite", `1e999`},
		{"not a number", `"NaN"`},
		{"an object", `{"usd":1}`},
	} {
		t.Run("cost "+tc.name, func(t *testing.T) {
			resp, raw := request(t, body(`"mode":"cost","cost":`+tc.cost, false))
			refused(t, resp, raw, "cost")
		})
	}
	t.Run("cost valid", func(t *testing.T) {
		resp, raw := request(t, body(`"mode":"cost","cost":"0.001"`, false))
		res := gjson.ParseBytes(raw)
		if resp.StatusCode != http.StatusOK || usd(t, res.Get("usage.cost_details.tool_fees")) != 1_000_000 {
			t.Fatalf("%d %s", resp.StatusCode, raw)
		}
	})
	for _, tc := range []struct{ mode, want string }{
		{"badbytes", "answered \uFFFD by testplugin"}, // a run of bad bytes is one U+FFFD, as in upstream answers
		{"badbytes_post", "posted \uFFFD"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			resp, raw := request(t, body(`"mode":"`+tc.mode+`"`, false))
			res := gjson.ParseBytes(raw)
			if resp.StatusCode != http.StatusOK || res.Get("choices.0.message.content").Str != tc.want {
				t.Fatalf("%d %s", resp.StatusCode, raw)
			}
			if tc.mode == "badbytes" && res.Get("service_metadata.pipeline.0.summary").Str != "summary \uFFFD" {
				t.Fatalf("stage %s", res.Get("service_metadata.pipeline.0").Raw)
			}
			// Streamed: the chunks the plugin edits.
			_, raw = request(t, body(`"mode":"`+tc.mode+`"`, true))
			if !strings.Contains(string(raw), `"content":"chunk `+"\uFFFD"+`"`) || !strings.Contains(string(raw), "data: [DONE]") {
				t.Fatalf("stream %s", raw)
			}
		})
	}
	for _, mode := range []string{"badtypes", "badtypes_post"} {
		t.Run(mode, func(t *testing.T) {
			resp, raw := request(t, body(`"mode":"`+mode+`"`, false))
			refused(t, resp, raw, "choices.0.message.content is not a string")
			_, raw = request(t, body(`"mode":"`+mode+`"`, true))
			var last gjson.Result
			for _, line := range strings.Split(string(raw), "\n") {
				if d, ok := strings.CutPrefix(line, "data: "); ok && d != "[DONE]" {
					last = gjson.Parse(d)
				}
			}
			if last.Get("error.code").Int() != http.StatusBadGateway || !strings.Contains(last.Get("error.message").Str, "plugin testplugin") ||
				!strings.Contains(last.Get("error.message").Str, "choices.0.delta.content is not a string") {
				t.Fatalf("stream %s", raw)
			}
		})
	}
}
