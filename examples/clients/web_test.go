package clients

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"
	"github.com/tidwall/gjson"
)

// The `web` plugin through the official Go SDK, unchanged: the plugin goes
// in as an extra body field, and the answer's url_citation annotations
// decode into the SDK's own types (JSON) or arrive on the finishing
// chunk's delta (stream), with spans inside the content.
func TestGoOpenAISDKWebPlugin(t *testing.T) {
	g := gateway(t)
	client := goClient(g, g.Key)
	ctx := context.Background()
	params := openai.ChatCompletionNewParams{
		Model:    "test/chat",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("How does the gateway bill a stream?")},
	}
	web := option.WithJSONSet("plugins", []map[string]any{{"id": "web", "max_results": 3}})

	t.Run("json", func(t *testing.T) {
		res, err := client.Chat.Completions.New(ctx, params, web)
		if err != nil {
			t.Fatal(err)
		}
		msg := res.Choices[0].Message
		n := int64(utf8.RuneCountInString(msg.Content))
		if len(msg.Annotations) != 3 {
			t.Fatalf("want 3 citations, got %+v", msg.Annotations)
		}
		for _, a := range msg.Annotations {
			c := a.URLCitation
			if a.Type != "url_citation" || !strings.Contains(c.URL, "switchyard.demo") || !strings.HasSuffix(c.Title, "(demo search engine)") ||
				c.StartIndex < 0 || c.EndIndex > n || c.StartIndex > c.EndIndex {
				t.Fatalf("%+v (content %d characters)", a, n)
			}
		}
	})

	t.Run("stream", func(t *testing.T) {
		s := client.Chat.Completions.NewStreaming(ctx, params, web)
		var text strings.Builder
		var anns gjson.Result
		for s.Next() {
			ch := s.Current()
			if len(ch.Choices) == 0 {
				continue
			}
			text.WriteString(ch.Choices[0].Delta.Content)
			// The SDK's delta type has no annotations field; they are in
			// its raw JSON, as for any field it does not model.
			if a := gjson.Get(ch.Choices[0].Delta.RawJSON(), "annotations"); a.Exists() {
				anns = a
			}
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		if len(anns.Array()) != 3 || !strings.Contains(text.String(), "You said") {
			t.Fatalf("annotations %s, text %q", anns.Raw, text.String())
		}
		for _, a := range anns.Array() {
			if e := a.Get("url_citation.end_index").Int(); e > int64(utf8.RuneCountInString(text.String())) {
				t.Fatalf("%s", a.Raw)
			}
		}
	})
}
