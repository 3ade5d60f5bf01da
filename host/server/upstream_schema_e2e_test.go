package server_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"
	"github.com/tidwall/gjson"
)

// schemaBreaker is an OpenAI-style upstream whose answers break the schema:
// a content that is a number, a choices object, a delta string, bytes that
// are not UTF-8 — between well-formed pieces "hello ", "caf\xe9" and " end".
func schemaBreaker(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if !gjson.GetBytes(body, "stream").Bool() {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"x","object":"chat.completion","created":1,"model":"echo","choices":[`+
			`{"index":0,"message":{"role":"assistant","content":"hello caf`+"\xe9"+` end"},"finish_reason":"stop"},`+
			`{"index":1,"message":{"role":"assistant","content":123},"finish_reason":"stop"}],`+
			`"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}`)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	head := `{"id":"x","object":"chat.completion.chunk","created":1,"model":"echo","choices":`
	for _, ch := range []string{
		head + `[{"index":0,"delta":{"role":"assistant","content":"hello "},"finish_reason":null}]}`,
		head + `[{"index":0,"delta":{"content":123},"finish_reason":null}]}`,
		head + `{"index":0,"delta":{"content":"LOST"}}}`,
		head + `[{"index":0,"delta":"oops","finish_reason":null}]}`,
		head + `[{"index":0,"delta":{"content":"caf` + "\xe9" + `"},"finish_reason":null}]}`,
		head + `[{"index":0,"delta":{"content":" end"},"finish_reason":"stop"}]}`,
		head + `[],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}`,
		`[DONE]`,
	} {
		_, _ = io.WriteString(w, "data: "+ch+"\n\n")
	}
}

// checkClientShape asserts what a client reads is UTF-8 and has the
// documented types: choices an array of objects, delta/message objects,
// content a string or null.
func checkClientShape(t *testing.T, doc []byte, msgField string) {
	t.Helper()
	if !utf8.Valid(doc) {
		t.Fatalf("the gateway sent bytes that are not UTF-8: %q", doc)
	}
	choices := gjson.GetBytes(doc, "choices")
	if !choices.IsArray() {
		t.Fatalf("choices is not an array: %s", doc)
	}
	for _, c := range choices.Array() {
		m := c.Get(msgField)
		if !c.IsObject() || !m.IsObject() {
			t.Fatalf("a choice or its %s is not an object: %s", msgField, doc)
		}
		if ct := m.Get("content"); ct.Exists() && ct.Type != gjson.String && ct.Type != gjson.Null {
			t.Fatalf("%s.content is %s, not a string: %s", msgField, ct.Raw, doc)
		}
	}
}

// TestUpstreamSchemaBreaksRepaired: chunks and results with wrong-typed
// fields or invalid UTF-8 are repaired or dropped before a client sees them,
// and the official Go SDK reads the answer.
func TestUpstreamSchemaBreaksRepaired(t *testing.T) {
	g := rawGateway(t, http.HandlerFunc(schemaBreaker), false)
	const want = "hello caf\uFFFD end"

	t.Run("stream", func(t *testing.T) {
		resp, raw, err := g.Request(http.MethodPost, "/chat/completions", `{"model":"test/raw","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("status %v err %v: %s", resp.StatusCode, err, raw)
		}
		sc := bufio.NewScanner(bytes.NewReader(raw))
		sc.Buffer(nil, 1<<20)
		var text strings.Builder
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok || data == "[DONE]" {
				continue
			}
			checkClientShape(t, []byte(data), "delta")
			text.WriteString(gjson.Get(data, "choices.0.delta.content").Str)
		}
		if text.String() != want {
			t.Fatalf("streamed text %q, want %q", text.String(), want)
		}

		client := openai.NewClient(option.WithBaseURL(g.URL+"/"), option.WithAPIKey(g.Key), option.WithMaxRetries(0))
		stream := client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
			Model: "test/raw", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
		})
		acc := openai.ChatCompletionAccumulator{}
		for stream.Next() {
			acc.AddChunk(stream.Current())
		}
		if err := stream.Err(); err != nil {
			t.Fatalf("the Go SDK could not read the stream: %v", err)
		}
		if len(acc.Choices) != 1 || acc.Choices[0].Message.Content != want {
			t.Fatalf("the Go SDK read %+v, want content %q", acc.Choices, want)
		}
	})

	t.Run("json", func(t *testing.T) {
		resp, raw, err := g.Request(http.MethodPost, "/chat/completions", `{"model":"test/raw","messages":[{"role":"user","content":"hi"}]}`)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("status %v err %v: %s", resp.StatusCode, err, raw)
		}
		checkClientShape(t, raw, "message")
		client := openai.NewClient(option.WithBaseURL(g.URL+"/"), option.WithAPIKey(g.Key), option.WithMaxRetries(0))
		res, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			Model: "test/raw", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
		})
		if err != nil {
			t.Fatalf("the Go SDK could not read the result: %v", err)
		}
		if len(res.Choices) != 2 || res.Choices[0].Message.Content != want || res.Choices[1].Message.Content != "" {
			t.Fatalf("the Go SDK read %+v", res.Choices)
		}
	})
}

// TestUpstreamEmbeddingsSchemaBreaks: an embedding that is not numbers (or
// base64) is refused with a 502, not handed to the client.
func TestUpstreamEmbeddingsSchemaBreaks(t *testing.T) {
	for _, emb := range []string{`["a","b"]`, `[0.1,{"x":1}]`, `"not base64!"`, `"caf` + "\xe9" + `"`} {
		g := rawGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":`+emb+`}],"model":"embed","usage":{"prompt_tokens":2,"total_tokens":2}}`)
		}), false)
		resp, body := post(t, g, "/embeddings", `{"model":"test/raw-embed","input":"hi"}`)
		wantError(t, resp, body, http.StatusBadGateway, "not an embeddings list")
	}
}
