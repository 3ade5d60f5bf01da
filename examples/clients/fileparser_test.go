package clients

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/gjson"
)

// The `file-parser` plugin through the official Go SDK, unchanged: the PDF
// goes in as the SDK's own file content part (a data URL), the plugin as an
// extra body field; the upstream gets the extracted text and the answer's
// file annotation (a type the SDK does not model) is in the message's raw
// JSON, or on the finishing chunk of a stream.
func TestGoOpenAISDKFileParser(t *testing.T) {
	g := gateway(t)
	client := goClient(g, g.Key)
	pdf, err := os.ReadFile(filepath.Join(gatewaytest.Root(), "plugins", "file-parser", "testdata", "fpdf-multilingual.pdf"))
	if err != nil {
		t.Fatal(err)
	}
	params := openai.ChatCompletionNewParams{
		Model: "test/chat",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
			openai.TextContentPart("What does the report say?"),
			openai.FileContentPart(openai.ChatCompletionContentPartFileFileParam{
				Filename: openai.String("report.pdf"),
				FileData: openai.String("data:application/pdf;base64," + base64.StdEncoding.EncodeToString(pdf)),
			}),
		})},
	}
	plugin := option.WithJSONSet("plugins", []map[string]any{{"id": "file-parser", "pdf": map[string]any{"engine": "pdf-text"}}})

	// Streamed: the annotation arrives on the finishing chunk's delta (in
	// its raw JSON: the SDK's delta type has no annotations field).
	s := client.Chat.Completions.NewStreaming(context.Background(), params, plugin)
	var streamed gjson.Result
	for s.Next() {
		ch := s.Current()
		if len(ch.Choices) == 0 {
			continue
		}
		if a := gjson.Get(ch.Choices[0].Delta.RawJSON(), `annotations.#(type=="file")`); a.Exists() {
			streamed = a
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if streamed.Get("file.name").Str != "report.pdf" || !strings.Contains(streamed.Get("file.content.0.text").Str, "σαράντα δύο") {
		t.Fatalf("streamed annotation %s", streamed.Raw)
	}

	res, err := client.Chat.Completions.New(context.Background(), params, plugin)
	if err != nil {
		t.Fatal(err)
	}
	sent := gjson.ParseBytes(g.Upstreams["alpha"].Last().Body).Get("messages.0.content.1.text").Str
	if !strings.Contains(sent, "Отчёт о работе шлюза") {
		t.Fatalf("upstream got %q", sent)
	}
	ann := gjson.Get(res.Choices[0].Message.RawJSON(), `annotations.#(type=="file")`)
	if ann.Get("file.name").Str != "report.pdf" || len(ann.Get("file.hash").Str) != 64 {
		t.Fatalf("message %s", res.Choices[0].Message.RawJSON())
	}
}

// Engine vision through the Go SDK: a scanned PDF (page images, no text
// layer) as the SDK's file part; the operator's vision model (the demo's,
// on the fake upstream) transcribes each page in a sub-request, the
// answering model gets the text, and usage.cost includes the sub-requests.
func TestGoOpenAISDKFileParserVision(t *testing.T) {
	yml := gatewaytest.DefaultYAML([]string{"alpha"}) +
		"  - id: test/vision\n    kind: chat\n    context_length: 32768\n    input_modalities: [text, image]\n    endpoints:\n" +
		"      - {provider: alpha, upstream_model: echo-vision, max_output: 4096, price: {prompt: 5, completion: 10}}\n" +
		"module_settings:\n  file-parser: {vision: {model: test/vision}}\n"
	g, err := gatewaytest.Start(gatewaytest.Options{Quiet: true, ConfigYAML: yml})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	pdf, err := os.ReadFile(filepath.Join(gatewaytest.Root(), "plugins", "file-parser", "testdata", "scan-img2pdf.pdf"))
	if err != nil {
		t.Fatal(err)
	}
	client := goClient(g, g.Key)
	res, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "test/chat",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
			openai.TextContentPart("When was the note dated?"),
			openai.FileContentPart(openai.ChatCompletionContentPartFileFileParam{
				Filename: openai.String("scan.pdf"),
				FileData: openai.String("data:application/pdf;base64," + base64.StdEncoding.EncodeToString(pdf)),
			}),
		})},
	}, option.WithJSONSet("plugins", []map[string]any{{"id": "file-parser", "pdf": map[string]any{"engine": "vision"}}}))
	if err != nil {
		t.Fatal(err)
	}
	sent := gjson.ParseBytes(g.Upstreams["alpha"].Last().Body).Get("messages.0.content.1.text").Str
	if !strings.Contains(sent, "Note no. 4471, dated 2026-02-17") {
		t.Fatalf("upstream got %q", sent)
	}
	if sub := gjson.Get(res.Usage.RawJSON(), "cost_details.sub_requests").Float(); sub <= 0 || gjson.Get(res.Usage.RawJSON(), "cost").Float() <= sub {
		t.Fatalf("usage %s", res.Usage.RawJSON())
	}
}
