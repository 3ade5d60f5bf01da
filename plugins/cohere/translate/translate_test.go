package translate_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/plugins/cohere/translate"
	"github.com/switchyard/switchyard/plugins/internal/fixture"
	"github.com/switchyard/switchyard/sdk"
	"github.com/tidwall/gjson"
)

// The payloads under ../testdata come from Cohere's v2 API reference and
// guides; SOURCES.md names the page of each.
func testdata(name string) string { return filepath.Join("..", "testdata", name) }

var adapter = &translate.Adapter{Build: "cohere/test"}

// callErr runs h on the fields and returns its error (the hook failed).
func callErr(h sdk.Handler, fields ...string) ([][]byte, error) {
	in := make([][]byte, len(fields))
	for i, f := range fields {
		in[i] = []byte(f)
	}
	return sdk.Run(h, in...)
}

func TestChatRequest(t *testing.T) {
	fixture.CheckRequests(t, adapter.ChatRequest, testdata("requests.json"), "", "/v2/chat",
		"Authorization: Bearer ${API_KEY}", "X-Switchyard-Adapter: cohere/test")
}

// TestChatRequestRefusesFiles: a content part Cohere has no form for is
// an error, never dropped from what the model is sent.
func TestChatRequestRefusesFiles(t *testing.T) {
	_, err := callErr(adapter.ChatRequest, `{"model":"command-a-03-2025"}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"read"},{"type":"file","file":{"filename":"a.pdf","file_data":"data:application/pdf;base64,JVBER"}}]}]}`)
	if err == nil || !strings.Contains(err.Error(), `not "file"`) {
		t.Fatalf("err %v", err)
	}
}

func TestChatResponse(t *testing.T) {
	ctx := `{"model":"command-a-03-2025"}`
	cases := map[string]map[string]string{
		"chat_response.json": {
			"object": "chat.completion", "model": "command-a-03-2025", "id": "c14c80c3-18eb-4519-9460-6c92edd8cfb4",
			"choices.0.message.content":      "LLMs stand for Large Language Models, which are a type of neural network model specialized in processing and generating human language.",
			"choices.0.finish_reason":        "stop",
			"choices.0.native_finish_reason": "COMPLETE",
			"usage.prompt_tokens":            "5", // billed units: what Cohere charges
			"usage.completion_tokens":        "418",
			"usage.total_tokens":             "423",
		},
		"chat_tool_call.json": {
			"choices.0.message.content":                         "",
			"choices.0.message.tool_calls.0.id":                 "get_weather_1byjy32y4hvq",
			"choices.0.message.tool_calls.0.function.name":      "get_weather",
			"choices.0.message.tool_calls.0.function.arguments": `{"location":"Toronto"}`,
			"choices.0.finish_reason":                           "tool_calls",
		},
		// Citations are the gateway's url_citation annotations, one per
		// cited source; a document without a url is named by its id.
		"chat_citations.json": {
			"choices.0.message.content":                                "The tallest penguins are the Emperor penguins. They only live in Antarctica.",
			"choices.0.message.annotations.#":                          "2",
			"choices.0.message.annotations.0.type":                     "url_citation",
			"choices.0.message.annotations.0.url_citation.url":         "doc:0",
			"choices.0.message.annotations.0.url_citation.title":       "Tall penguins",
			"choices.0.message.annotations.0.url_citation.content":     "Emperor penguins.",
			"choices.0.message.annotations.0.url_citation.start_index": "29",
			"choices.0.message.annotations.0.url_citation.end_index":   "46",
			"choices.0.message.annotations.1.url_citation.title":       "Penguin habitats",
			"choices.0.message.annotations.1.url_citation.start_index": "65",
			"choices.0.message.annotations.1.url_citation.end_index":   "76",
		},
		"chat_thinking.json": {
			"choices.0.message.reasoning": "The user asks which is larger; compare 9.8 and 9.11 digit by digit.",
			"choices.0.message.content":   "9.8 is larger.",
		},
	}
	for file, checks := range cases {
		t.Run(file, func(t *testing.T) {
			out := fixture.Call(t, translate.ChatResponse, ctx, string(fixture.Read(t, testdata(file))))
			fixture.Check(t, out[0], checks)
			if gjson.Get(out[0], "choices.0.message.tool_plan").Exists() {
				t.Errorf("tool_plan reached the client: %s", out[0])
			}
		})
	}
	if _, err := callErr(translate.ChatResponse, ctx, `{"message":"invalid request"}`); err == nil {
		t.Error("an error body was taken for an answer")
	}
}

func TestStream(t *testing.T) {
	ctx := `{"model":"command-a-03-2025"}`
	s := fixture.Assemble(t, fixture.Stream(t, translate.StreamEvent, ctx, fixture.Events(t, testdata("stream_text.sse"))))
	if s.Role != "assistant" || s.Content != "Hello world!" || s.Finish != "stop" || !s.IDs["29f14a5a-11de-4cae-9800-25e4747408ea"] || len(s.IDs) != 1 {
		t.Errorf("text stream %+v", s)
	}
	fixture.CheckUsage(t, s.Usage, 3, 3, 0)

	s = fixture.Assemble(t, fixture.Stream(t, translate.StreamEvent, ctx, fixture.Events(t, testdata("stream_tool.sse"))))
	c := s.Calls[0]
	if len(s.Calls) != 1 || c.ID != "get_weather_nsz5zm3w56q3" || c.Name != "get_weather" || c.Args != `{"location":"Toronto"}` || s.Finish != "tool_calls" || s.Content != "" {
		t.Errorf("tool stream %+v %+v", s, c)
	}
	fixture.CheckUsage(t, s.Usage, 37, 28, 0)

	// citation-start events are chunks of annotations; the indices are
	// code points of the answer (° is two bytes).
	s = fixture.Assemble(t, fixture.Stream(t, translate.StreamEvent, ctx, fixture.Events(t, testdata("stream_citations.sse"))))
	if s.Content != "It's 24°C in Toronto, says the forecast." || len(s.Annotations) != 2 || s.Finish != "stop" {
		t.Fatalf("citation stream %+v", s)
	}
	runes := []rune(s.Content)
	for i, want := range []struct{ url, title, text string }{
		{"get_weather_1byjy32y4hvq:0", "", "24°C"},
		{"https://weather.gc.ca/city/pages/on-143_metric_e.html", "Toronto weather forecast", "forecast"},
	} {
		a := s.Annotations[i].Get("url_citation")
		if s.Annotations[i].Get("type").Str != "url_citation" || a.Get("url").Str != want.url || a.Get("title").Str != want.title || a.Get("content").Str != want.text ||
			string(runes[a.Get("start_index").Int():a.Get("end_index").Int()]) != want.text {
			t.Errorf("annotation %d: %s", i, s.Annotations[i].Raw)
		}
	}

	// Thinking deltas are the gateway's reasoning.
	out := fixture.Call(t, translate.StreamEvent, ctx, `{"type":"content-delta","index":0,"delta":{"message":{"content":{"thinking":"compare"}}}}`, "id-1")
	if len(out) != 2 || gjson.Get(out[1], "choices.0.delta.reasoning").Str != "compare" || gjson.Get(out[1], "id").Str != "id-1" {
		t.Errorf("thinking delta %q", out)
	}
}

func TestEmbed(t *testing.T) {
	cases := []struct{ name, body, want string }{
		// https://docs.cohere.com/reference/embed (texts, input_type, embedding_types)
		{"texts", `{"model":"cohere/embed-v4","input":["hello","goodbye"],"encoding_format":"base64"}`,
			`{"model":"embed-v4.0","texts":["hello","goodbye"],"input_type":"search_document","embedding_types":["float"]}`},
		{"one string, the caller's input_type and dimensions", `{"model":"cohere/embed-v4","input":"what is an LLM?","input_type":"search_query","dimensions":256}`,
			`{"model":"embed-v4.0","texts":["what is an LLM?"],"input_type":"search_query","embedding_types":["float"],"output_dimension":256}`},
		// https://docs.cohere.com/docs/embeddings#image-embeddings (inputs with content parts, embed-v4)
		{"an image", `{"model":"cohere/embed-v4","input":[{"content":[{"type":"text","text":"a cat"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]},"plain"]}`,
			`{"model":"embed-v4.0","inputs":[{"content":[{"type":"text","text":"a cat"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]},{"content":[{"type":"text","text":"plain"}]}],"input_type":"search_document","embedding_types":["float"]}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := fixture.Call(t, adapter.EmbedRequest, `{"model":"embed-v4.0"}`, tc.body)
			if out[0] != "POST" || out[1] != "/v2/embed" {
				t.Fatalf("request line %q", out[:2])
			}
			if !fixture.JSONEqual(t, out[3], tc.want) {
				t.Errorf("body\n got %s\nwant %s", out[3], tc.want)
			}
		})
	}
	out := fixture.Call(t, translate.EmbedResponse, `{"model":"embed-v4.0"}`, string(fixture.Read(t, testdata("embed_response.json"))))
	fixture.Check(t, out[0], map[string]string{
		"object": "list", "data.#": "2", "data.1.index": "1", "data.1.object": "embedding",
		"data.0.embedding": "[0.016296387,-0.008354187,-0.04699707]", "usage.prompt_tokens": "2", "model": "embed-v4.0",
	})
}

func TestMapError(t *testing.T) {
	body := func(name string) string { return string(fixture.Read(t, testdata(name))) }
	fixture.CheckErrors(t, translate.MapError, []fixture.ErrorCase{
		{Status: "498", Body: body("error_invalid_token.json"), WantStatus: "502", WantMsg: "the provider rejected the gateway's credentials"},
		{Status: "401", Body: body("error_invalid_token.json"), WantStatus: "502", WantMsg: "the provider rejected the gateway's credentials"},
		{Status: "429", Body: body("error_rate_limit.json"), WantStatus: "429", WantMsg: gjson.Get(body("error_rate_limit.json"), "message").Str},
		{Status: "400", Body: `{"id":"x","message":"invalid request: message must be at least 1 token long or tool results must be specified."}`, WantStatus: "400", WantMsg: "invalid request: message must be at least 1 token long or tool results must be specified."},
		// The gateway's account with Cohere lacks credit: not the caller's money.
		{Status: "402", Body: `{"id":"x","message":"Please add or update your payment method at https://dashboard.cohere.com/billing?tab=payment to continue"}`, WantStatus: "503", WantMsg: "the provider refused for lack of credit on the gateway's account with it: Please add or update your payment method at https://dashboard.cohere.com/billing?tab=payment to continue"},
		{Status: "499", Body: `{"id":"x","message":"request cancelled"}`, WantStatus: "502", WantMsg: "cohere cancelled the request: request cancelled"},
		{Status: "503", Body: `{"id":"x","message":"service unavailable"}`, WantStatus: "503", WantMsg: "service unavailable"},
	})
}
