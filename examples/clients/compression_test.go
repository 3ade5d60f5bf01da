package clients

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"
	"github.com/tidwall/gjson"
)

// The context-compression plugin through the official Go SDK, unchanged:
// a conversation of about 10,000 tokens to test/chat (a context of 8,192
// tokens) is compressed by default, JSON and stream; with the plugin
// turned off it is the SDK's 400 error, whose message says what to do.
func TestGoOpenAISDKContextCompression(t *testing.T) {
	g := gateway(t)
	client := goClient(g, g.Key)
	ctx := context.Background()
	const last = "So what did we decide?"
	msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You keep the minutes.")}
	for i := range 40 {
		msgs = append(msgs, openai.UserMessage(strings.Repeat("point "+strconv.Itoa(i)+" of the agenda, discussed at length. ", 20)),
			openai.AssistantMessage(strings.Repeat("noted "+strconv.Itoa(i)+", with the details recorded. ", 20)))
	}
	msgs = append(msgs, openai.UserMessage(last))
	params := openai.ChatCompletionNewParams{Model: "test/chat", Messages: msgs}
	up := g.Upstreams["alpha"]
	sent := func() gjson.Result {
		s := gjson.GetBytes(up.Last().Body, "messages")
		n := len(s.Array())
		if n >= len(msgs) || s.Get("0.content").Str != "You keep the minutes." || s.Get(strconv.Itoa(n-1)+".content").Str != last {
			t.Fatalf("upstream got %d of %d messages: first %s", n, len(msgs), s.Get("0").Raw)
		}
		return s
	}

	t.Run("json", func(t *testing.T) {
		res, err := client.Chat.Completions.New(ctx, params, option.WithHeader("X-Service-Metadata", "enabled"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(res.Choices[0].Message.Content, last) {
			t.Fatalf("content %q", res.Choices[0].Message.Content)
		}
		s := sent()
		var stage gjson.Result
		for _, st := range gjson.Get(res.RawJSON(), "service_metadata.pipeline").Array() {
			if st.Get("name").Str == "context-compression" {
				stage = st
			}
		}
		if stage.Get("data.engine").Str != "middle-out" || stage.Get("data.compressed_count").Int() != int64(len(s.Array())) ||
			stage.Get("data.original_count").Int() != int64(len(msgs)) {
			t.Fatalf("stage %s", stage.Raw)
		}
	})

	t.Run("stream", func(t *testing.T) {
		s := client.Chat.Completions.NewStreaming(ctx, params)
		var text strings.Builder
		for s.Next() {
			if ch := s.Current(); len(ch.Choices) > 0 {
				text.WriteString(ch.Choices[0].Delta.Content)
			}
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(text.String(), last) {
			t.Fatalf("text %q", text.String())
		}
		sent()
	})

	t.Run("turned off", func(t *testing.T) {
		_, err := client.Chat.Completions.New(ctx, params, option.WithJSONSet("plugins", []map[string]any{{"id": "context-compression", "enabled": false}}))
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.Message, "largest context available for test/chat: 8192 tokens") ||
			!strings.Contains(apiErr.Message, "context-compression") {
			t.Fatalf("%v", err)
		}
	})
}
