package clients

import (
	"context"
	"strings"
	"testing"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"
	"github.com/switchyard/switchyard/host/billing"
	"github.com/tidwall/gjson"
)

// The fusion plugin through the official Go SDK, unchanged: the plugin is
// an extra body field; the answer (JSON or streamed after keep-alive
// comments) decodes into the SDK's types, and its usage is every call's.
func TestGoOpenAISDKFusion(t *testing.T) {
	g := gateway(t)
	client := goClient(g, g.Key)
	ctx := context.Background()
	params := openai.ChatCompletionNewParams{
		Model:    "test/chat",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Is Pluto a planet?")},
	}
	fusion := option.WithJSONSet("plugins", []map[string]any{{"id": "fusion", "analysis_models": []string{"test/chat", "test/chat"}, "tools": []any{}}})
	// 2 members, the judge and the final answer: the records <id>-sub1…4.
	recorded := func(t *testing.T, id string) billing.Nanos {
		t.Helper()
		if err := g.Ledger.Sync(); err != nil {
			t.Fatal(err)
		}
		var sum billing.Nanos
		for i := 1; i <= 4; i++ {
			rec, err := g.Ledger.Generation(id + "-sub" + string(rune('0'+i)))
			if err != nil {
				t.Fatalf("record %d: %v", i, err)
			}
			sum += rec.Charged
		}
		return sum
	}

	t.Run("json", func(t *testing.T) {
		res, err := client.Chat.Completions.New(ctx, params, fusion)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(res.Choices[0].Message.Content, "You said: Is Pluto a planet?") || res.Usage.CompletionTokens == 0 {
			t.Fatalf("%+v", res)
		}
		cost, err := billing.ParseUSD(gjson.Get(res.RawJSON(), "usage.cost").Raw)
		if err != nil || cost != recorded(t, res.ID) {
			t.Fatalf("usage.cost %s (%v), records %s", gjson.Get(res.RawJSON(), "usage.cost").Raw, err, recorded(t, res.ID))
		}
	})

	t.Run("stream", func(t *testing.T) {
		s := client.Chat.Completions.NewStreaming(ctx, params, fusion)
		var text strings.Builder
		var id, usage string
		for s.Next() {
			ch := s.Current()
			id = ch.ID
			if len(ch.Choices) > 0 {
				text.WriteString(ch.Choices[0].Delta.Content)
			}
			if u := gjson.Get(ch.RawJSON(), "usage"); u.Exists() {
				usage = u.Raw
			}
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		cost, err := billing.ParseUSD(gjson.Get(usage, "cost").Raw)
		if !strings.Contains(text.String(), "You said") || err != nil || cost != recorded(t, id) {
			t.Fatalf("text %q usage %s", text.String(), usage)
		}
	})
}
