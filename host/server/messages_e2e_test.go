package server_test

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/config"
	"github.com/switchyard/switchyard/host/demo"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/gjson"
)

// The Anthropic Messages front door (POST /api/v1/messages), over
// loopback against the real gateway and the offline demo provider.

// anthropicHeaders are what Anthropic's clients send: the key as
// x-api-key (no Authorization), and the version and beta headers the
// gateway accepts and ignores.
func anthropicHeaders(key string) []string {
	return []string{"Authorization", "", "x-api-key", key, "anthropic-version", "2023-06-01", "anthropic-beta", "context-management-2025-06-27"}
}

func TestMessagesJSON(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	for _, path := range []string{"/messages", "/messages?beta=true"} {
		t.Run(path, func(t *testing.T) {
			resp, body := post(t, g, path, `{"model":"test/chat","max_tokens":1024,
				"system":[{"type":"text","text":"be brief","cache_control":{"type":"ephemeral"}}],
				"metadata":{"user_id":"u-1"},"context_management":{"edits":[]},
				"messages":[{"role":"user","content":[{"type":"text","text":"hello anthropic"}]}]}`, anthropicHeaders(g.Key)...)
			if resp.StatusCode != 200 {
				t.Fatalf("%d %s", resp.StatusCode, body.Raw)
			}
			if body.Get("type").Str != "message" || body.Get("role").Str != "assistant" || !strings.HasPrefix(body.Get("id").Str, "msg_") || body.Get("model").Str != "test/chat" {
				t.Fatalf("message %s", body.Raw)
			}
			if body.Get("content.#").Int() != 1 || body.Get("content.0.type").Str != "text" || !strings.Contains(body.Get("content.0.text").Str, "You said: hello anthropic") {
				t.Fatalf("content %s", body.Get("content").Raw)
			}
			if body.Get("stop_reason").Str != "end_turn" || body.Get("stop_sequence").Type != gjson.Null {
				t.Fatalf("stop %s", body.Raw)
			}
			u := body.Get("usage")
			if u.Get("input_tokens").Int() == 0 || u.Get("output_tokens").Int() == 0 || !u.Get("cache_read_input_tokens").Exists() || !u.Get("cache_creation_input_tokens").Exists() {
				t.Fatalf("usage %s", u.Raw)
			}
			if gen := resp.Header.Get("X-Generation-Id"); !strings.HasPrefix(gen, "gen-") || body.Get("id").Str != "msg_"+strings.TrimPrefix(gen, "gen-") {
				t.Fatalf("X-Generation-Id %q, id %s", gen, body.Get("id").Str)
			}
			// What reached the provider is the equivalent chat request.
			up := gjson.ParseBytes(g.Upstreams["alpha"].Last().Body)
			if up.Get("messages.0.role").Str != "system" || up.Get("messages.0.content").Str != "be brief" || up.Get("user").Str != "u-1" || up.Get("max_tokens").Int() != 1024 {
				t.Fatalf("upstream body %s", up.Raw)
			}
		})
	}
}

// messagesEvents posts a streaming Messages request and returns its
// events in order, as (name, data) pairs.
func messagesEvents(t *testing.T, g *gatewaytest.Gateway, body string) (*http.Response, [][2]string) {
	t.Helper()
	req, _ := http.NewRequest("POST", g.URL+"/messages?beta=true", strings.NewReader(body))
	req.Header.Set("x-api-key", g.Key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var events [][2]string
	var name string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data := strings.TrimPrefix(line, "data: ")
			if !gjson.Valid(data) || gjson.Get(data, "type").Str != name {
				t.Fatalf("event %q data %s", name, data)
			}
			events = append(events, [2]string{name, data})
		}
	}
	return resp, events
}

// names is the event names in order, runs of deltas collapsed.
func names(events [][2]string) string {
	var out []string
	for _, e := range events {
		if len(out) > 0 && e[0] == "content_block_delta" && out[len(out)-1] == e[0] {
			continue
		}
		out = append(out, e[0])
	}
	return strings.Join(out, " ")
}

func TestMessagesStream(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	resp, events := messagesEvents(t, g, `{"model":"test/chat","max_tokens":100,"stream":true,
		"messages":[{"role":"user","content":"stream anthropic"}]}`)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") || resp.Header.Get("X-Generation-Id") == "" {
		t.Fatalf("%d %v", resp.StatusCode, resp.Header)
	}
	want := "message_start content_block_start content_block_delta content_block_stop message_delta message_stop"
	if got := names(events); got != want {
		t.Fatalf("events %s\nwant %s", got, want)
	}
	var text strings.Builder
	for _, e := range events {
		if e[0] == "content_block_delta" {
			if gjson.Get(e[1], "delta.type").Str != "text_delta" || gjson.Get(e[1], "index").Int() != 0 {
				t.Fatalf("delta %s", e[1])
			}
			text.WriteString(gjson.Get(e[1], "delta.text").Str)
		}
	}
	if !strings.Contains(text.String(), "You said: stream anthropic") {
		t.Fatalf("text %q", text.String())
	}
	start := gjson.Parse(events[0][1])
	if start.Get("message.content.#").Int() != 0 || start.Get("message.role").Str != "assistant" || !strings.HasPrefix(start.Get("message.id").Str, "msg_") {
		t.Fatalf("message_start %s", events[0][1])
	}
	delta := gjson.Parse(events[len(events)-2][1])
	if delta.Get("delta.stop_reason").Str != "end_turn" || delta.Get("usage.output_tokens").Int() == 0 || delta.Get("usage.input_tokens").Int() == 0 {
		t.Fatalf("message_delta %s", delta.Raw)
	}
}

const messagesTools = `"tools":[{"name":"lookup","description":"look a thing up","input_schema":{"type":"object","properties":{"q":{"type":"string"}}}}]`

func TestMessagesToolRoundTrip(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	ask := `{"role":"user","content":"please call:lookup args:{\"q\":\"switchyard\"}"}`
	resp, body := post(t, g, "/messages", `{"model":"test/chat","max_tokens":200,`+messagesTools+`,"tool_choice":{"type":"auto","disable_parallel_tool_use":true},"messages":[`+ask+`]}`, anthropicHeaders(g.Key)...)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body.Raw)
	}
	use := body.Get(`content.#(type=="tool_use")`)
	if body.Get("stop_reason").Str != "tool_use" || use.Get("name").Str != "lookup" || use.Get("input.q").Str != "switchyard" || use.Get("id").Str == "" {
		t.Fatalf("message %s", body.Raw)
	}
	if up := gjson.ParseBytes(g.Upstreams["alpha"].Last().Body); up.Get("parallel_tool_calls").Type != gjson.False || up.Get("tool_choice").Str != "auto" || up.Get("tools.0.function.parameters.properties.q.type").Str != "string" {
		t.Fatalf("upstream body %s", up.Raw)
	}
	id := use.Get("id").Str
	// The client runs the tool and sends its result; a thinking block of
	// the earlier turn is dropped.
	turn2 := fmt.Sprintf(`{"model":"test/chat","max_tokens":200,%s,"messages":[%s,
		{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"sig"},{"type":"text","text":"looking"},{"type":"tool_use","id":%q,"name":"lookup","input":{"q":"switchyard"}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":%q,"content":[{"type":"text","text":"a gateway"}]}]}]}`,
		messagesTools, ask, id, id)
	resp, body = post(t, g, "/messages", turn2, anthropicHeaders(g.Key)...)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body.Raw)
	}
	if body.Get("stop_reason").Str != "end_turn" || !strings.Contains(body.Get("content.0.text").Str, "a gateway") {
		t.Fatalf("answer %s", body.Raw)
	}
	up := gjson.ParseBytes(g.Upstreams["alpha"].Last().Body)
	msgs := up.Get("messages")
	if msgs.Get("1.tool_calls.0.id").Str != id || msgs.Get("2.role").Str != "tool" || msgs.Get("2.tool_call_id").Str != id || msgs.Get("2.content").Str != "a gateway" || msgs.Get("#").Int() != 3 || strings.Contains(up.Raw, "sig") {
		t.Fatalf("upstream messages %s", msgs.Raw)
	}

	// Streamed, the call is a tool_use block with input_json_delta pieces.
	_, events := messagesEvents(t, g, `{"model":"test/chat","max_tokens":200,"stream":true,`+messagesTools+`,"messages":[`+ask+`]}`)
	var blockStart, partial string
	for _, e := range events {
		switch e[0] {
		case "content_block_start":
			if gjson.Get(e[1], "content_block.type").Str == "tool_use" {
				blockStart = e[1]
			}
		case "content_block_delta":
			if gjson.Get(e[1], "delta.type").Str == "input_json_delta" {
				partial += gjson.Get(e[1], "delta.partial_json").Str
			}
		}
	}
	if gjson.Get(blockStart, "content_block.name").Str != "lookup" || gjson.Get(blockStart, "content_block.id").Str == "" || gjson.Get(partial, "q").Str != "switchyard" {
		t.Fatalf("events %v", events)
	}
	if last := events[len(events)-2][1]; gjson.Get(last, "delta.stop_reason").Str != "tool_use" {
		t.Fatalf("message_delta %s", last)
	}
}

func TestMessagesErrors(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	valid := `{"model":"test/chat","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`
	for _, tc := range []struct {
		name, path, body string
		headers          []string
		status           int
		typ, msg         string
	}{
		{"no key", "/messages", valid, []string{"Authorization", ""}, 401, "authentication_error", "Missing Authentication"},
		{"bad x-api-key", "/messages", valid, anthropicHeaders("sk-sy-nope"), 401, "authentication_error", ""},
		{"bad bearer", "/messages", valid, []string{"Authorization", "Bearer sk-sy-nope"}, 401, "authentication_error", ""},
		{"x-api-key is only for messages", "/chat/completions", `{"model":"test/chat","messages":[{"role":"user","content":"hi"}]}`, anthropicHeaders(g.Key), 401, "", ""},
		{"no max_tokens", "/messages", `{"model":"test/chat","messages":[{"role":"user","content":"hi"}]}`, anthropicHeaders(g.Key), 400, "invalid_request_error", "max_tokens"},
		{"not JSON", "/messages", `{"model":`, anthropicHeaders(g.Key), 400, "invalid_request_error", "JSON"},
		{"unknown block", "/messages", `{"model":"test/chat","max_tokens":10,"messages":[{"role":"user","content":[{"type":"video"}]}]}`, anthropicHeaders(g.Key), 400, "invalid_request_error", "video"},
		{"unknown field", "/messages", `{"model":"test/chat","max_tokens":10,"bogus":1,"messages":[{"role":"user","content":"hi"}]}`, anthropicHeaders(g.Key), 400, "invalid_request_error", "bogus"},
		{"unknown model", "/messages", `{"model":"nope/none","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`, anthropicHeaders(g.Key), 404, "not_found_error", "nope/none"},
		{"count_tokens no key", "/messages/count_tokens", valid, []string{"Authorization", ""}, 401, "authentication_error", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := post(t, g, tc.path, tc.body, tc.headers...)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, body.Raw)
			}
			if tc.typ == "" { // the gateway's own envelope
				if body.Get("error.code").Int() != int64(tc.status) {
					t.Fatalf("body %s", body.Raw)
				}
				return
			}
			if body.Get("type").Str != "error" || body.Get("error.type").Str != tc.typ || !strings.Contains(body.Get("error.message").Str, tc.msg) {
				t.Fatalf("body %s, want type %s and %q", body.Raw, tc.typ, tc.msg)
			}
		})
	}
}

func TestMessagesCountTokens(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	count := func(text string) int64 {
		t.Helper()
		resp, body := post(t, g, "/messages/count_tokens", `{"model":"test/chat","system":"be brief",`+messagesTools+`,"messages":[{"role":"user","content":`+text+`}]}`, anthropicHeaders(g.Key)...)
		if resp.StatusCode != 200 || !body.Get("input_tokens").Exists() || len(body.Map()) != 1 {
			t.Fatalf("%d %s", resp.StatusCode, body.Raw)
		}
		return body.Get("input_tokens").Int()
	}
	short, long := count(`"hi"`), count(`"hi there, how are you doing on this fine day"`)
	if short <= 0 || long <= short {
		t.Fatalf("counts %d, %d", short, long)
	}
	if n := g.Upstreams["alpha"].Count(); n != 0 {
		t.Fatalf("counting reached the provider %d times", n)
	}
}

// A Messages request is charged as its equivalent chat request is.
func TestMessagesChargesAsChat(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	resp, body := post(t, g, "/messages", `{"model":"test/chat","max_tokens":100,"system":"be brief","messages":[{"role":"user","content":"what does this cost"}]}`, anthropicHeaders(g.Key)...)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body.Raw)
	}
	viaMessages := generation(t, g, g.Key, resp.Header.Get("X-Generation-Id"))
	resp, chat := post(t, g, "/chat/completions", `{"model":"test/chat","max_tokens":100,"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"what does this cost"}]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, chat.Raw)
	}
	viaChat := generation(t, g, g.Key, chat.Get("id").Str)
	for _, f := range []string{"total_cost", "tokens_prompt", "tokens_completion", "model", "provider_name", "status"} {
		if viaMessages.Get(f).Raw != viaChat.Get(f).Raw {
			t.Fatalf("%s: messages %s, chat %s", f, viaMessages.Get(f).Raw, viaChat.Get(f).Raw)
		}
	}
	if viaMessages.Get("total_cost").Float() <= 0 {
		t.Fatalf("generation %s", viaMessages.Raw)
	}
	if body.Get("usage.input_tokens").Int() != chat.Get("usage.prompt_tokens").Int() || body.Get("usage.output_tokens").Int() != chat.Get("usage.completion_tokens").Int() {
		t.Fatalf("usage %s vs %s", body.Get("usage").Raw, chat.Get("usage").Raw)
	}
}

// A stream the gateway pushes (a fusion's: keep-alives while its panel
// works, then the answer) is translated through messages.Writer.
func TestMessagesPushedStream(t *testing.T) {
	g := startFusion(t, 0)
	resp, events := messagesEvents(t, g, `{"model":"test/sage","max_tokens":500,"stream":true,"plugins":[{"id":"fusion","tools":[]}],
		"messages":[{"role":"user","content":"Is Pluto a planet?"}]}`)
	if resp.StatusCode != 200 || resp.Header.Get("X-Generation-Id") == "" {
		t.Fatalf("%d %v", resp.StatusCode, resp.Header)
	}
	var text strings.Builder
	var rest []string
	pieces := 0
	for _, e := range events {
		switch e[0] {
		case "ping": // the keep-alives while the panel works
		case "content_block_delta":
			text.WriteString(gjson.Get(e[1], "delta.text").Str)
			pieces++
		default:
			rest = append(rest, e[0])
		}
	}
	if want := "message_start content_block_start content_block_stop message_delta message_stop"; strings.Join(rest, " ") != want || pieces < 2 {
		t.Fatalf("events %v", events)
	}
	if !strings.Contains(text.String(), "answering as echo-judge. You said: Is Pluto a planet?") {
		t.Fatalf("text %q", text.String())
	}
	if u := gjson.Get(events[len(events)-2][1], "usage"); u.Get("output_tokens").Int() == 0 {
		t.Fatalf("message_delta %s", events[len(events)-2][1])
	}
}

// A stream the upstream cuts off ends with an error event; keep-alives
// while it is quiet are SSE comments between events.
func TestMessagesStreamCutAndKeepAlive(t *testing.T) {
	g := start(t, gatewaytest.Options{Mutate: func(c *config.Config) {
		c.KeepAlive = config.Duration(10 * time.Millisecond)
	}})
	g.Upstreams["alpha"].SetFaults(demo.Faults{ChunkDelay: 40 * time.Millisecond, CutAfter: 3})
	req, _ := http.NewRequest("POST", g.URL+"/messages", strings.NewReader(`{"model":"test/chat","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"one two three four five six"}]}`))
	req.Header.Set("x-api-key", g.Key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	if !strings.Contains(s, "\n: SWITCHYARD PROCESSING\n") {
		t.Fatalf("no keep-alive comment in %q", s)
	}
	last := s[strings.LastIndex(s, "event: "):]
	if !strings.HasPrefix(last, "event: error\ndata: ") || gjson.Get(strings.SplitN(last, "data: ", 2)[1], "error.type").Str == "" || strings.Contains(s, "message_stop") {
		t.Fatalf("stream ends %q", last)
	}
}

// The gateway's own fields (models, provider) route a Messages request as
// they route a chat request: a provider that fails falls back to the next,
// and the failure of all is a 502 in Anthropic's envelope.
func TestMessagesRoutingFields(t *testing.T) {
	g := start(t, gatewaytest.Options{Providers: []string{"alpha", "beta"}})
	g.Upstreams["alpha"].SetFaults(demo.Faults{Status: 500})
	body := `{"models":["test/chat"],"provider":{"order":["alpha","beta"]},"max_tokens":50,"messages":[{"role":"user","content":"route me"}]}`
	resp, msg := post(t, g, "/messages", body, anthropicHeaders(g.Key)...)
	if resp.StatusCode != 200 || !strings.Contains(msg.Get("content.0.text").Str, "route me") {
		t.Fatalf("%d %s", resp.StatusCode, msg.Raw)
	}
	if gen := generation(t, g, g.Key, resp.Header.Get("X-Generation-Id")); gen.Get("provider_name").Str != "beta" {
		t.Fatalf("generation %s", gen.Raw)
	}
	g.Upstreams["beta"].SetFaults(demo.Faults{Status: 500})
	resp, msg = post(t, g, "/messages", body, anthropicHeaders(g.Key)...)
	if resp.StatusCode != 502 || msg.Get("type").Str != "error" || msg.Get("error.type").Str != "api_error" {
		t.Fatalf("%d %s", resp.StatusCode, msg.Raw)
	}
}

// Messages requests and counts are held to the key's rate limits as chat
// requests are; the refusal is a 429 rate_limit_error with Retry-After.
func TestMessagesRateLimited(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	key := limitedKey(t, g, "rpm2", `{"requests_per_minute":2}`)
	msg := `{"model":"test/chat","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`
	for i, path := range []string{"/messages", "/messages/count_tokens", "/messages"} {
		resp, body := post(t, g, path, msg, anthropicHeaders(key)...)
		if i < 2 {
			if resp.StatusCode != 200 {
				t.Fatalf("request %d: %d %s", i+1, resp.StatusCode, body.Raw)
			}
			continue
		}
		if resp.StatusCode != 429 || body.Get("error.type").Str != "rate_limit_error" || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("request %d: %d %v %s", i+1, resp.StatusCode, resp.Header, body.Raw)
		}
	}
}

// Over a provider that speaks Anthropic's Messages itself (the anthropic
// adapter): the request goes Messages → chat → Messages and back, the
// tool_use id and input unchanged both-ways.
func TestMessagesOverAnthropicProvider(t *testing.T) {
	g, anth := startAnthropic(t)
	ask := `{"role":"user","content":"please call:lookup args:{\"q\":\"both-ways\"}"}`
	resp, body := post(t, g, "/messages", `{"model":"test/claude","max_tokens":200,`+messagesTools+`,"messages":[`+ask+`]}`, anthropicHeaders(g.Key)...)
	use := body.Get(`content.#(type=="tool_use")`)
	if resp.StatusCode != 200 || body.Get("stop_reason").Str != "tool_use" || use.Get("input.q").Str != "both-ways" {
		t.Fatalf("%d %s", resp.StatusCode, body.Raw)
	}
	id := use.Get("id").Str
	resp, body = post(t, g, "/messages", fmt.Sprintf(`{"model":"test/claude","max_tokens":200,%s,"messages":[%s,
		{"role":"assistant","content":[{"type":"tool_use","id":%q,"name":"lookup","input":{"q":"both-ways"}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":%q,"content":"found it"}]}]}`, messagesTools, ask, id, id), anthropicHeaders(g.Key)...)
	if resp.StatusCode != 200 || !strings.Contains(body.Get("content.0.text").Str, "found it") {
		t.Fatalf("%d %s", resp.StatusCode, body.Raw)
	}
	sent := gjson.ParseBytes(anth.Last().Body)
	if sent.Get("messages.1.content.0.id").Str != id || sent.Get("messages.2.content.0.tool_use_id").Str != id || sent.Get("messages.1.content.0.input.q").Str != "both-ways" {
		t.Fatalf("sent upstream %s", sent.Get("messages").Raw)
	}
}

// A document block (a base64 PDF) is a chat file part: the file-parser
// plugin, named as an extra body field, reads it and the upstream gets its
// text.
func TestMessagesDocument(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	pdf, err := os.ReadFile(filepath.Join(gatewaytest.Root(), "plugins", "file-parser", "testdata", "fpdf-multilingual.pdf"))
	if err != nil {
		t.Fatal(err)
	}
	resp, body := post(t, g, "/messages", `{"model":"test/chat","max_tokens":100,"plugins":[{"id":"file-parser","pdf":{"engine":"pdf-text"}}],
		"messages":[{"role":"user","content":[{"type":"document","title":"report.pdf","source":{"type":"base64","media_type":"application/pdf","data":"`+base64.StdEncoding.EncodeToString(pdf)+`"}},
		{"type":"text","text":"What does the report say?"}]}]}`, anthropicHeaders(g.Key)...)
	if resp.StatusCode != 200 || body.Get("type").Str != "message" {
		t.Fatalf("%d %s", resp.StatusCode, body.Raw)
	}
	sent := gjson.ParseBytes(g.Upstreams["alpha"].Last().Body).Get("messages.0.content").Raw
	if !strings.Contains(sent, "Отчёт о работе шлюза") || strings.Contains(sent, "application/pdf") {
		t.Fatalf("upstream got %s", sent)
	}
}
