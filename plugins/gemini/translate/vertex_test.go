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

// TestVertexMultimodalEmbed: multimodalembedding takes text or an image
// per instance (multimodal-embeddings reference) and answers each with
// textEmbedding or imageEmbedding, in input order.
func TestVertexMultimodalEmbed(t *testing.T) {
	a := &translate.Adapter{Build: "gemini/test"}
	ctx := `{"model":"multimodalembedding@001","api":"vertex"}`
	out := fixture.Call(t, a.EmbedRequest, ctx, `{"model":"google/multimodalembedding","input":[`+
		`{"content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]},`+
		`"Colosseum",`+
		`{"content":[{"type":"image_url","image_url":{"url":"gs://cloud-samples-data/vertex-ai/llm/prompts/landmark1.png"}}]},`+
		`{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}],"dimensions":512}`)
	if out[0] != "POST" || out[1] != "/models/multimodalembedding@001:predict" {
		t.Fatalf("request line %q", out[:2])
	}
	want := `{"instances":[{"image":{"bytesBase64Encoded":"iVBORw0KGgo=","mimeType":"image/png"}},{"text":"Colosseum"},` +
		`{"image":{"gcsUri":"gs://cloud-samples-data/vertex-ai/llm/prompts/landmark1.png"}},{"text":"a\nb"}],"parameters":{"dimension":512}}`
	if !fixture.JSONEqual(t, out[3], want) {
		t.Errorf("body\n got %s\nwant %s", out[3], want)
	}
	for name, input := range map[string]string{
		"text and image in one item": `[{"content":[{"type":"text","text":"a cat"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AA=="}}]}]`,
		"two images":                 `[{"content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AA=="}},{"type":"image_url","image_url":{"url":"gs://b/o.png"}}]}]`,
		"an http image":              `[{"content":[{"type":"image_url","image_url":{"url":"https://example.com/cat.png"}}]}]`,
		"token ids":                  `[[1,2,3]]`,
	} {
		if _, err := sdk.Run(a.EmbedRequest, []byte(ctx), []byte(`{"input":`+input+`}`)); err == nil {
			t.Errorf("%s: taken", name)
		}
	}

	out = fixture.Call(t, translate.EmbedResponse, ctx, string(fixture.Read(t, testdata("vertex_multimodal_embed_response.json"))))
	fixture.Check(t, out[0], map[string]string{
		"object": "list", "data.#": "2", "data.1.index": "1",
		"data.0.embedding": "[-0.0123147098,0.0727171078,-0.0239018705]",
		"data.1.embedding": "[0.00230263756,0.0278981831,-0.0106530199]",
		"usage":            "", // none reported: the gateway counts
	})
	if _, err := sdk.Run(translate.EmbedResponse, []byte(ctx), []byte(`{"predictions":[{"videoEmbeddings":[]}]}`)); err == nil {
		t.Error("a prediction without an embedding was taken")
	}
}
