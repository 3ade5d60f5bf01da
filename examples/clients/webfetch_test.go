package clients

import (
	"context"
	"strings"
	"testing"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"
	"github.com/tidwall/gjson"
)

// TestGoOpenAISDKWebFetch: the official Go SDK, unchanged, sends a request
// with the web-fetch plugin (an extra body field) that links the offline
// demo page; the model is given the page, JSON and streaming.
func TestGoOpenAISDKWebFetch(t *testing.T) {
	g := gateway(t)
	client := goClient(g, g.Key)
	ctx := context.Background()
	params := openai.ChatCompletionNewParams{
		Model:    "test/chat",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What does https://switchyard.demo/web-fetch/tides say about Dover?")},
	}
	plugin := option.WithJSONSet("plugins", []map[string]any{{"id": "web-fetch", "max_content_tokens": 4000}})
	given := func(t *testing.T) {
		t.Helper()
		sent := gjson.ParseBytes(g.Upstreams["alpha"].Last().Body).Get("messages.0")
		if sent.Get("role").Str != "system" || !strings.Contains(sent.Get("content").Str, "| Dover | 06:12 | 6.4 m |") {
			t.Fatalf("the model was not given the page: %s", sent.Raw)
		}
	}

	t.Run("json", func(t *testing.T) {
		res, err := client.Chat.Completions.New(ctx, params, plugin, option.WithHeader("X-Service-Metadata", "enabled"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(res.Choices[0].Message.Content, "You said: What does https://switchyard.demo/web-fetch/tides say") {
			t.Fatalf("completion %+v", res)
		}
		given(t)
		stage := gjson.Get(res.RawJSON(), `service_metadata.pipeline.#(name=="web-fetch")`)
		if stage.Get("data.fetched").Int() != 1 {
			t.Fatalf("pipeline %s", gjson.Get(res.RawJSON(), "service_metadata.pipeline").Raw)
		}
	})

	t.Run("streaming", func(t *testing.T) {
		stream := client.Chat.Completions.NewStreaming(ctx, params, plugin)
		acc := openai.ChatCompletionAccumulator{}
		for stream.Next() {
			acc.AddChunk(stream.Current())
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if len(acc.Choices) == 0 || !strings.Contains(acc.Choices[0].Message.Content, "You said: What does") {
			t.Fatalf("accumulated %+v", acc.ChatCompletion)
		}
		given(t)
	})
}
