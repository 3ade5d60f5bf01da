package translate_test

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/plugins/bedrock/translate"
	"github.com/switchyard/switchyard/plugins/internal/fixture"
	"github.com/switchyard/switchyard/sdk"
)

// The payloads under ../testdata come from the Bedrock API reference and
// user guide; SOURCES.md names the page of each.
func testdata(name string) string { return filepath.Join("..", "testdata", name) }

var adapter = &translate.Adapter{Build: "bedrock/test"}

// TestChatRequestMatchesConverse translates unified requests and compares
// the whole body with the Converse request AWS's documentation shows.
func TestChatRequestMatchesConverse(t *testing.T) {
	fixture.CheckRequests(t, adapter.ChatRequest, testdata("requests.json"), "", "",
		"Authorization: Bearer ${API_KEY}", "X-Switchyard-Adapter: bedrock/test")
}

// TestImageByURLRefused: Bedrock cannot fetch a web image; the adapter
// says so rather than drop it.
func TestImageByURLRefused(t *testing.T) {
	_, err := fixtureCallErr(`{"model":"m"}`, `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://example.com/a.png"}}]}]}`)
	if err == nil || !strings.Contains(err.Error(), "data URLs") {
		t.Fatalf("want a refusal naming data URLs, got %v", err)
	}
}

func TestChatResponse(t *testing.T) {
	fixture.CheckResponses(t, translate.ChatResponse, map[string]map[string]string{
		testdata("converse_response.json"): {
			"choices.0.message.content":      "The most popular song on WZPZ is Elemental Hotel by 8 Storey Hike.",
			"choices.0.finish_reason":        "stop",
			"usage.prompt_tokens":            "125",
			"usage.completion_tokens":        "60",
			"usage.total_tokens":             "185",
			"choices.0.message.role":         "assistant",
			"choices.0.native_finish_reason": "end_turn",
		},
		testdata("converse_tool_use.json"): {
			"choices.0.finish_reason":                           "tool_calls",
			"choices.0.message.tool_calls.#":                    "1",
			"choices.0.message.tool_calls.0.id":                 "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q",
			"choices.0.message.tool_calls.0.function.name":      "top_song",
			"choices.0.message.tool_calls.0.function.arguments": `{"sign": "WZPZ"}`,
		},
	})
}

// TestStream: the ConverseStream events of a text answer and a tool
// call, as the host hands them over, assemble into what an OpenAI client
// builds: the text, one tool call with its arguments joined, the finish
// reason and the usage.
func TestStream(t *testing.T) {
	events := strings.Split(strings.TrimSpace(string(fixture.Read(t, testdata("converse_stream_tool.jsonl")))), "\n")
	chunks := fixture.Stream(t, translate.StreamEvent, `{"model":"m"}`, events)
	s := fixture.Assemble(t, chunks)
	if s.Role != "assistant" || s.Content != "I'll look that up." || s.Finish != "tool_calls" {
		t.Fatalf("assembled %+v", s)
	}
	c := s.Calls[0]
	if len(s.Calls) != 1 || c == nil || c.ID != "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q" || c.Name != "top_song" || c.Args != `{"sign": "WZPZ"}` {
		t.Fatalf("tool calls %+v", s.Calls)
	}
	fixture.CheckUsage(t, s.Usage, 414, 57, 0)
}

// TestStreamException: an exception frame inside the stream is an error
// chunk with the exception's name and message.
func TestStreamException(t *testing.T) {
	chunks := fixture.Stream(t, translate.StreamEvent, `{"model":"m"}`, []string{
		`{"messageStart":{"role":"assistant"}}`,
		`{"throttlingException":{"message":"Too many requests, please wait before trying again."}}`,
	})
	s := fixture.Assemble(t, chunks)
	if len(s.Errors) != 1 || !strings.Contains(s.Errors[0], "ThrottlingException: Too many requests") {
		t.Fatalf("errors %q", s.Errors)
	}
}

// TestMapError: each documented Bedrock exception becomes the gateway's
// status (throttling 429, model not ready 503, validation 400, access
// denied the credentials 502, …).
func TestMapError(t *testing.T) {
	var cases []struct {
		Name       string
		Status     int
		Body       json.RawMessage
		WantStatus int `json:"want_status"`
	}
	if err := json.Unmarshal(fixture.Read(t, testdata("errors.json")), &cases); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			out := fixture.Call(t, translate.MapError, `{}`, strconv.Itoa(c.Status), string(c.Body))
			if len(out) != 2 || out[0] != strconv.Itoa(c.WantStatus) || out[1] == "" {
				t.Fatalf("got %q, want %d", out, c.WantStatus)
			}
		})
	}
}

func fixtureCallErr(fields ...string) ([][]byte, error) {
	bs := make([][]byte, len(fields))
	for i, f := range fields {
		bs[i] = []byte(f)
	}
	return sdk.Run(adapter.ChatRequest, bs...)
}

// FuzzStreamEvent: any event and state give chunks or an error, never a
// panic (the state is the module's own, but an event is the upstream's).
func FuzzStreamEvent(f *testing.F) {
	for _, line := range strings.Split(strings.TrimSpace(string(fixture.Read(f, testdata("converse_stream_tool.jsonl")))), "\n") {
		f.Add(line, `{"calls":1,"idx":{"1":0}}`)
	}
	f.Add(`{"throttlingException":{}}`, ``)
	f.Fuzz(func(t *testing.T, ev, state string) {
		_, _ = sdk.Run(translate.StreamEvent, []byte(`{}`), []byte(ev), []byte(state))
	})
}

// BenchmarkChatRequest: a 1 KB chat with a tool, translated to Converse.
func BenchmarkChatRequest(b *testing.B) {
	body := []byte(`{"model":"m","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"` + strings.Repeat("lorem ipsum ", 80) + `"}],` +
		`"tools":[{"type":"function","function":{"name":"top_song","parameters":{"type":"object","properties":{"sign":{"type":"string"}}}}}],"max_tokens":512}`)
	ctx := []byte(`{"model":"anthropic.claude-3-haiku-20240307-v1:0"}`)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := sdk.Run(adapter.ChatRequest, ctx, body); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStreamEvent: one text delta, the bulk of a stream.
func BenchmarkStreamEvent(b *testing.B) {
	ev := []byte(`{"contentBlockDelta":{"delta":{"text":"Hello, how can I help you today?"},"contentBlockIndex":0}}`)
	st := []byte(`{"calls":0}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := sdk.Run(translate.StreamEvent, []byte(`{}`), ev, st); err != nil {
			b.Fatal(err)
		}
	}
}
