package translate_test

import (
	"testing"

	"github.com/switchyard/switchyard/plugins/bedrock/translate"
	"github.com/switchyard/switchyard/plugins/internal/fixture"
	"github.com/switchyard/switchyard/sdk"
)

func TestEmbedRequest(t *testing.T) {
	a := &translate.Adapter{Build: "bedrock/test"}
	cases := []struct{ name, model, body, path, want string }{
		// model-parameters-titan-embed-text.html: inputText, dimensions, normalize
		{"titan", "amazon.titan-embed-text-v2:0", `{"model":"amazon/titan-embed-v2","input":"What are the different services that you offer?","dimensions":512,"encoding_format":"base64"}`,
			"/model/amazon.titan-embed-text-v2:0/invoke", `{"inputText":"What are the different services that you offer?","dimensions":512,"normalize":true}`},
		{"titan, a list of one", "amazon.titan-embed-text-v2:0", `{"input":["hello"]}`,
			"/model/amazon.titan-embed-text-v2:0/invoke", `{"inputText":"hello","normalize":true}`},
		// model-parameters-embed.html: texts, input_type, embedding_types
		{"cohere", "cohere.embed-english-v3", `{"input":["hello",{"content":[{"type":"text","text":"good"},{"type":"text","text":"bye"}]}],"input_type":"search_query"}`,
			"/model/cohere.embed-english-v3/invoke", `{"texts":["hello","good\nbye"],"input_type":"search_query","embedding_types":["float"]}`},
		{"cohere through an inference profile", "us.cohere.embed-v4:0", `{"input":"hello"}`,
			"/model/us.cohere.embed-v4:0/invoke", `{"texts":["hello"],"input_type":"search_document","embedding_types":["float"]}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := fixture.Call(t, a.EmbedRequest, `{"model":"`+tc.model+`"}`, tc.body)
			if out[0] != "POST" || out[1] != tc.path {
				t.Fatalf("request line %q", out[:2])
			}
			if !fixture.JSONEqual(t, out[3], tc.want) {
				t.Errorf("body\n got %s\nwant %s", out[3], tc.want)
			}
		})
	}
	// What these models cannot take is refused, never cut or dropped.
	for _, tc := range []struct{ model, body string }{
		{"amazon.titan-embed-text-v2:0", `{"input":["a","b"]}`},
		{"cohere.embed-english-v3", `{"input":[{"content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AA=="}}]}]}`},
		{"cohere.embed-english-v3", `{"input":[[1,2,3]]}`},
		{"meta.llama3-8b-instruct-v1:0", `{"input":"a"}`},
	} {
		if _, err := sdk.Run(a.EmbedRequest, []byte(`{"model":"`+tc.model+`"}`), []byte(tc.body)); err == nil {
			t.Errorf("%s %s: no error", tc.model, tc.body)
		}
	}
}

func TestEmbedResponse(t *testing.T) {
	out := fixture.Call(t, translate.EmbedResponse, `{"model":"amazon.titan-embed-text-v2:0"}`, string(fixture.Read(t, testdata("titan_embed_response.json"))))
	fixture.Check(t, out[0], map[string]string{
		"object": "list", "data.#": "1", "data.0.embedding": "[0.0175781,-0.0224609,0.0283203,-0.0123291]",
		"usage.prompt_tokens": "6", "usage.total_tokens": "6",
	})
	out = fixture.Call(t, translate.EmbedResponse, `{"model":"cohere.embed-english-v3"}`, string(fixture.Read(t, testdata("cohere_embed_response.json"))))
	fixture.Check(t, out[0], map[string]string{
		"data.#": "2", "data.1.index": "1", "data.1.embedding": "[-0.0305786,0.0136795,0.0037155]", "usage": "",
	})
	// Without embedding_types, Cohere answers a bare list (embeddings_floats).
	out = fixture.Call(t, translate.EmbedResponse, `{"model":"cohere.embed-english-v3"}`, `{"id":"x","embeddings":[[0.5,0.25]],"response_type":"embeddings_floats","texts":["a"]}`)
	fixture.Check(t, out[0], map[string]string{"data.0.embedding": "[0.5,0.25]"})
}
