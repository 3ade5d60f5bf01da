// Package clients runs the official OpenAI SDKs, unchanged, against a real
// gateway on loopback: npm `openai` (through node --test) and Go
// github.com/openai/openai-go.
package clients

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"
	"github.com/switchyard/switchyard/host/gatewaytest"
)

func gateway(t *testing.T) *gatewaytest.Gateway {
	t.Helper()
	g, err := gatewaytest.Start(gatewaytest.Options{Quiet: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	return g
}

func TestNodeOpenAISDK(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is required for the npm client tests (make test installs it in CI)")
	}
	dir := filepath.Join(gatewaytest.Root(), "examples", "clients", "node")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "openai")); err != nil {
		t.Fatal("npm dependencies missing: run `make clients` (part of `make test`)")
	}
	g := gateway(t)
	cmd := exec.Command(node, "--test", "test/")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SWITCHYARD_URL="+g.URL, "SWITCHYARD_KEY="+g.Key)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test failed: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "# fail 0") {
		t.Fatalf("unexpected node test output:\n%s", out)
	}
}

func goClient(g *gatewaytest.Gateway, key string) openai.Client {
	return openai.NewClient(option.WithBaseURL(g.URL+"/"), option.WithAPIKey(key), option.WithMaxRetries(0))
}

func TestGoOpenAISDK(t *testing.T) {
	g := gateway(t)
	client := goClient(g, g.Key)
	ctx := context.Background()

	t.Run("chat", func(t *testing.T) {
		res, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model:    "test/chat",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello from go")},
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.Model != "test/chat" || !strings.Contains(res.Choices[0].Message.Content, "You said: hello from go") {
			t.Fatalf("unexpected completion: %+v", res)
		}
		if res.Usage.TotalTokens == 0 {
			t.Fatal("no usage")
		}
	})

	t.Run("streaming", func(t *testing.T) {
		stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
			Model:    "test/chat",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("stream from go")},
		})
		acc := openai.ChatCompletionAccumulator{}
		for stream.Next() {
			acc.AddChunk(stream.Current())
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if len(acc.Choices) == 0 || !strings.Contains(acc.Choices[0].Message.Content, "You said: stream from go") {
			t.Fatalf("accumulated %+v", acc.ChatCompletion)
		}
		if acc.Usage.CompletionTokens == 0 {
			t.Fatal("no usage on the final chunk")
		}
	})

	t.Run("embeddings", func(t *testing.T) {
		res, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{
			Model: "test/embed",
			Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"a", "b"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Data) != 2 || len(res.Data[1].Embedding) != 16 || res.Data[1].Index != 1 {
			t.Fatalf("embeddings %+v", res.Data)
		}
	})

	t.Run("errors", func(t *testing.T) {
		bad := goClient(g, "sk-wrong-000000000000000000")
		_, err := bad.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model:    "test/chat",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")},
		})
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 {
			t.Fatalf("want a 401 openai.Error, got %v", err)
		}
	})
}
