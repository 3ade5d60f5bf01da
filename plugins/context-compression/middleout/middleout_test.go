package middleout_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/host/tokenize"
	"github.com/switchyard/switchyard/plugins/context-compression/middleout"
	"github.com/switchyard/switchyard/sdk"
	"github.com/tidwall/gjson"
)

// count is the gateway's own tokenizer, what count_tokens answers with.
func count(s string) (int, error) {
	n, err := tokenize.Count("test/chat", s)
	return int(n), err
}

type msg map[string]any

func words(tag string, n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(tag)
		b.WriteString(" word ")
		b.WriteString(strconv.Itoa(i))
		b.WriteString(". ")
	}
	return b.String()
}

func body(t *testing.T, msgs []msg, extra map[string]any) []byte {
	t.Helper()
	m := map[string]any{"model": "test/chat", "messages": msgs}
	for k, v := range extra {
		m[k] = v
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// conversation: a system prompt, n turns of about 200 tokens each, and a
// last user question; turn 3 (if present) calls a tool.
func conversation(n int) []msg {
	ms := []msg{{"role": "system", "content": "You are terse."}}
	for i := range n {
		ms = append(ms, msg{"role": "user", "content": words("q"+strconv.Itoa(i), 40)})
		if i == 3 {
			ms = append(ms,
				msg{"role": "assistant", "content": nil, "tool_calls": []any{
					map[string]any{"id": "call_a", "type": "function", "function": map[string]any{"name": "lookup", "arguments": `{"q":"a"}`}},
					map[string]any{"id": "call_b", "type": "function", "function": map[string]any{"name": "lookup", "arguments": `{"q":"b"}`}},
				}},
				msg{"role": "tool", "tool_call_id": "call_a", "content": words("ra", 30)},
				msg{"role": "tool", "tool_call_id": "call_b", "content": words("rb", 30)},
			)
		}
		ms = append(ms, msg{"role": "assistant", "content": words("a"+strconv.Itoa(i), 40)})
	}
	return append(ms, msg{"role": "user", "content": "THE LAST QUESTION: what now?"})
}

// checkPairs fails when a tool message is kept without the assistant
// message that called it, or an assistant's call lost its answer.
func checkPairs(t *testing.T, msgs gjson.Result) {
	t.Helper()
	calls := map[string]bool{}
	answered := map[string]bool{}
	for _, m := range msgs.Array() {
		for _, tc := range m.Get("tool_calls").Array() {
			calls[tc.Get("id").Str] = true
		}
		if m.Get("role").Str == "tool" {
			id := m.Get("tool_call_id").Str
			if !calls[id] {
				t.Fatalf("tool result %s kept without its call: %s", id, msgs.Raw)
			}
			answered[id] = true
		}
	}
	for id := range calls {
		if !answered[id] {
			t.Fatalf("tool call %s kept without its result", id)
		}
	}
}

func TestCompress(t *testing.T) {
	huge := words("huge", 3000)
	tests := []struct {
		name    string
		body    []byte
		w       middleout.Window
		changed bool
		fits    bool
		counted bool
		check   func(t *testing.T, o middleout.Outcome, msgs gjson.Result)
	}{
		{name: "fits by its size: unchanged, not tokenized", body: body(t, conversation(3), nil), w: middleout.Window{MaxContext: 8192}, fits: true},
		{name: "fits by its count: unchanged", body: body(t, conversation(30), nil), w: middleout.Window{MaxContext: 20000}, fits: true, counted: true},
		{name: "no context known: unchanged", body: body(t, conversation(30), nil), w: middleout.Window{}, fits: true},
		{name: "middle dropped, ends kept", body: body(t, conversation(30), map[string]any{"max_tokens": 256}), w: middleout.Window{MaxContext: 2048, MaxOutput: 1024},
			changed: true, fits: true, counted: true, check: func(t *testing.T, o middleout.Outcome, msgs gjson.Result) {
				if msgs.Get("0.role").Str != "system" || msgs.Get("#").Int() < 3 {
					t.Fatalf("system prompt not first: %s", msgs.Raw)
				}
				if last := msgs.Get(strconv.Itoa(int(msgs.Get("#").Int()) - 1)); last.Get("content").Str != "THE LAST QUESTION: what now?" {
					t.Fatalf("last user turn lost: %s", last.Raw)
				}
				if !strings.Contains(msgs.Get("1.content").Str, "q0 word") {
					t.Fatalf("the start of the conversation should stay: %s", msgs.Get("1").Raw)
				}
				if o.Reserved != 256 || o.After.Tokens+256 > 2048 || o.Dropped == 0 || o.Truncated != 0 {
					t.Fatalf("outcome %+v", o)
				}
				checkPairs(t, msgs)
			}},
		{name: "output reservation capped at max_output", body: body(t, conversation(30), map[string]any{"max_completion_tokens": 100000}), w: middleout.Window{MaxContext: 4096, MaxOutput: 1024},
			changed: true, fits: true, counted: true, check: func(t *testing.T, o middleout.Outcome, msgs gjson.Result) {
				if o.Reserved != 1024 || o.After.Tokens > 4096-1024 {
					t.Fatalf("outcome %+v", o)
				}
			}},
		{name: "tool call pairs go together", body: body(t, conversation(8), nil), w: middleout.Window{MaxContext: 1400},
			changed: true, fits: true, counted: true, check: func(t *testing.T, o middleout.Outcome, msgs gjson.Result) { checkPairs(t, msgs) }},
		{name: "message-count limit: half from each end", body: body(t, conversation(10), nil), w: middleout.Window{MaxContext: 1 << 20, MaxMessages: 6},
			changed: true, fits: true, counted: true, check: func(t *testing.T, o middleout.Outcome, msgs gjson.Result) {
				if n := msgs.Get("#").Int(); n > 6 || n < 5 {
					t.Fatalf("%d messages kept, limit 6", n)
				}
				if !strings.Contains(msgs.Get("1.content").Str, "q0 word") || !strings.Contains(msgs.Get("2.content").Str, "a0 word") {
					t.Fatalf("the start was not kept: %s", msgs.Raw)
				}
				checkPairs(t, msgs)
			}},
		{name: "one long user message is truncated in its middle", body: body(t, []msg{{"role": "system", "content": "Sum up."}, {"role": "user", "content": "BEGIN " + huge + " END"}}, nil),
			w: middleout.Window{MaxContext: 1000}, changed: true, fits: true, counted: true, check: func(t *testing.T, o middleout.Outcome, msgs gjson.Result) {
				c := msgs.Get("1.content").Str
				if !strings.HasPrefix(c, "BEGIN ") || !strings.HasSuffix(c, " END") || !strings.Contains(c, middleout.Marker) || o.Truncated == 0 || o.Dropped != 0 {
					t.Fatalf("outcome %+v, content %q…", o, c[:min(len(c), 80)])
				}
				if o.After.Tokens > 1000 || len(msgs.Raw)/4 > 1000 {
					t.Fatalf("still too long: %+v, %d bytes", o, len(msgs.Raw))
				}
			}},
		{name: "text parts are truncated too", body: body(t, []msg{{"role": "user", "content": []any{map[string]any{"type": "text", "text": huge}}}}, nil),
			w: middleout.Window{MaxContext: 600}, changed: true, fits: true, counted: true, check: func(t *testing.T, o middleout.Outcome, msgs gjson.Result) {
				if !strings.Contains(msgs.Get("0.content.0.text").Str, middleout.Marker) {
					t.Fatalf("%s", msgs.Raw)
				}
			}},
		{name: "cannot fit: tool definitions alone are too large", body: body(t, []msg{{"role": "user", "content": "hi"}},
			map[string]any{"tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "f", "description": huge}}}}),
			w: middleout.Window{MaxContext: 500}, changed: true, fits: false, counted: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := middleout.Compress(tt.body, tt.w, count)
			if err != nil {
				t.Fatal(err)
			}
			if (o.Body != nil) != tt.changed || o.Fits != tt.fits {
				t.Fatalf("changed %v fits %v, want %v %v (%+v)", o.Body != nil, o.Fits, tt.changed, tt.fits, o)
			}
			n := int(gjson.GetBytes(tt.body, "messages.#").Int())
			if o.Before.Messages != n || o.Before.Tokens <= 0 {
				t.Fatalf("before %+v, %d messages", o.Before, n)
			}
			// Counted: the gateway's own count; not counted: a bound of it.
			if want, _, _ := tokenize.CountChatPrompt("test/chat", tt.body); (o.Counted && int(want) != o.Before.Tokens) || int(want) > o.Before.Tokens {
				t.Fatalf("before %d tokens (counted %v), the gateway counts %d", o.Before.Tokens, o.Counted, want)
			}
			if o.Counted != tt.counted {
				t.Fatalf("counted %v", o.Counted)
			}
			if o.Body == nil {
				if o.After != o.Before {
					t.Fatalf("unchanged but after %+v != before %+v", o.After, o.Before)
				}
				return
			}
			msgs := gjson.GetBytes(o.Body, "messages")
			if int(msgs.Get("#").Int()) != o.After.Messages || o.Dropped != n-o.After.Messages {
				t.Fatalf("after %+v, %d messages sent, dropped %d", o.After, msgs.Get("#").Int(), o.Dropped)
			}
			// The stats are the gateway's own count of what is sent.
			if want, _, _ := tokenize.CountChatPrompt("test/chat", o.Body); int(want) != o.After.Tokens {
				t.Fatalf("after %d tokens, the gateway counts %d", o.After.Tokens, want)
			}
			if tt.check != nil {
				tt.check(t, o, msgs)
			}
		})
	}
}

// TestPreRequest runs the module's hook natively through the ABI's frame
// encoding (sdk.Run), as the Wasm module runs it.
func TestPreRequest(t *testing.T) {
	m := &middleout.Module{Count: func(_, s string) (int, error) { return count(s) }}
	ctx := func(w string) []byte {
		return []byte(`{"config":{"id":"context-compression"},"model":"test/chat","scope":"global","context":` + w + `}`)
	}
	long := body(t, conversation(30), nil)
	tests := []struct {
		name, ctx, action string
		changed           bool
		stage             string
	}{
		{"compressed", `{"min_context":2048,"max_context":2048,"max_output":1024}`, abi.ActionContinue, true, "middle-out: "},
		{"fits", `{"min_context":131072,"max_context":131072}`, abi.ActionContinue, false, "left unchanged"},
		{"no context", `{}`, abi.ActionContinue, false, "context length unknown"},
		{"cannot fit", `{"min_context":10,"max_context":10}`, abi.ActionBlock, false, "cannot fit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := sdk.Run(m.PreRequest, ctx(tt.ctx), long)
			if err != nil {
				t.Fatal(err)
			}
			if string(out[0]) != tt.action {
				t.Fatalf("action %s", out[0])
			}
			st := gjson.ParseBytes(out[2])
			if !strings.Contains(st.Get("summary").Str, tt.stage) || (tt.name != "no context" && st.Get("data.original_count").Int() != 65) {
				t.Fatalf("stage %s", out[2])
			}
			if tt.action == abi.ActionBlock {
				e := gjson.ParseBytes(out[1])
				if e.Get("code").Int() != 400 || !strings.Contains(e.Get("message").Str, "context of 10 tokens") {
					t.Fatalf("block %s", out[1])
				}
				return
			}
			if (len(out[1]) > 0) != tt.changed {
				t.Fatalf("body changed %v", len(out[1]) > 0)
			}
			if tt.changed && st.Get("data.compressed_count").Int() != gjson.GetBytes(out[1], "messages.#").Int() {
				t.Fatalf("stage %s", out[2])
			}
		})
	}
}

// The middle-out order — the middle one of the units left, each time — is
// kept by the run that grows from the centre, for every count of units.
func TestMiddleOutOrder(t *testing.T) {
	for n := 0; n <= 64; n++ {
		var want []int
		left := make([]int, n)
		for i := range left {
			left[i] = i
		}
		for len(left) > 0 {
			k := len(left) / 2
			want = append(want, left[k])
			left = append(left[:k], left[k+1:]...)
		}
		var got []int
		lo, hi := n/2, n/2
		for lo > 0 || hi < n {
			if lo > n-hi {
				lo--
				got = append(got, lo)
			} else {
				got = append(got, hi)
				hi++
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%d units: order %v, want %v", n, got, want)
		}
	}
}
