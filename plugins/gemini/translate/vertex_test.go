package translate_test

import (
	"testing"

	"github.com/switchyard/switchyard/plugins/gemini/translate"
	"github.com/switchyard/switchyard/plugins/internal/fixture"
	"github.com/switchyard/switchyard/sdk"
)

// TestVertexEmbed: with api vertex, embeddings are Vertex AI's :predict
// (text-embeddings-api reference), not the Gemini API's batchEmbedContents.
func TestVertexEmbed(t *testing.T) {
	a := &translate.Adapter{Build: "gemini/test"}
	ctx := `{"model":"text-embedding-004","api":"vertex"}`
	out := fixture.Call(t, a.EmbedRequest, ctx, `{"model":"google/text-embedding-004","input":["What is life?",{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}],"dimensions":256,"encoding_format":"base64"}`)
	if out[0] != "POST" || out[1] != "/models/text-embedding-004:predict" {
		t.Fatalf("request line %q", out[:2])
	}
	if want := `{"instances":[{"content":"What is life?"},{"content":"a\nb"}],"parameters":{"outputDimensionality":256}}`; !fixture.JSONEqual(t, out[3], want) {
		t.Errorf("body\n got %s\nwant %s", out[3], want)
	}
	out = fixture.Call(t, a.EmbedRequest, ctx, `{"input":"one"}`)
	if want := `{"instances":[{"content":"one"}]}`; !fixture.JSONEqual(t, out[3], want) {
		t.Errorf("body %s", out[3])
	}
	if _, err := sdk.Run(a.EmbedRequest, []byte(ctx), []byte(`{"input":[{"content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AA=="}}]}]}`)); err == nil {
		t.Error("an image was taken by a text embedding model")
	}

	out = fixture.Call(t, translate.EmbedResponse, ctx, string(fixture.Read(t, testdata("vertex_embed_response.json"))))
	fixture.Check(t, out[0], map[string]string{
		"object": "list", "data.#": "2", "data.1.index": "1", "data.0.embedding": "[0.0058424035,0.011647085,-0.024440108]",
		"usage.prompt_tokens": "10", "usage.total_tokens": "10",
	})
	// Without the form it is the Gemini API's batchEmbedContents, as before.
	out = fixture.Call(t, a.EmbedRequest, `{"model":"gemini-embedding-001"}`, `{"input":"x"}`)
	if out[1] != "/models/gemini-embedding-001:batchEmbedContents" {
		t.Errorf("path %s", out[1])
	}
}
