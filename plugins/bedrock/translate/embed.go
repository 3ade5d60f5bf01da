package translate

import (
	"net/url"
	"strings"

	"github.com/switchyard/switchyard/sdk"
	"github.com/tidwall/gjson"
)

// Embeddings on Bedrock are InvokeModel calls (POST /model/{id}/invoke)
// whose body is the model family's own: Converse has no embeddings. The
// family is read from the model id, which names it (amazon.titan-embed-…,
// cohere.embed-…, or an inference profile ending in one).
const (
	titan  = "titan-embed"
	cohere = "cohere.embed"
)

func embedFamily(model string) string {
	switch {
	case strings.Contains(model, titan):
		return titan
	case strings.Contains(model, cohere):
		return cohere
	}
	return ""
}

// EmbedRequest is the embed_request hook: an InvokeModel request with the
// body of Titan Text Embeddings (one inputText, dimensions, normalize;
// https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-titan-embed-text.html)
// or of Cohere Embed on Bedrock (texts, input_type, embedding_types;
// https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-embed.html).
func (a *Adapter) EmbedRequest(in *sdk.In, out *sdk.Out) error {
	ctx, req := in.Field(0), gjson.ParseBytes(in.Field(1))
	model := sdk.Get(ctx, "model").Str
	texts, err := embedTexts(req.Get("input"))
	if err != nil {
		return err
	}
	var body string
	switch embedFamily(model) {
	case titan:
		// Titan embeds one text a call: the manifest's embed_inputs has
		// the host send a longer request one input a call; a list that
		// still arrives (a host that does not split) is refused, not cut.
		if len(texts) != 1 {
			return sdk.Error("Titan Text Embeddings on Bedrock embeds one input per request, not " + itoa(int64(len(texts))))
		}
		body = `{"inputText":` + texts[0]
		if d := req.Get("dimensions"); d.Type == gjson.Number {
			body += `,"dimensions":` + d.Raw
		}
		body += `,"normalize":true}`
	case cohere:
		inputType := "search_document"
		if t := req.Get("input_type"); t.Type == gjson.String {
			inputType = t.Str
		}
		body = `{"texts":[` + strings.Join(texts, ",") + `],"input_type":` + sdk.Quote(inputType) + `,"embedding_types":["float"]}`
	default:
		return sdk.Error("bedrock embeddings: the model family of " + model + " is not known (Titan Text Embeddings, Cohere Embed)")
	}
	out.FieldString("POST")
	out.FieldString("/model/" + url.PathEscape(model) + "/invoke")
	out.FieldString(headers + "X-Switchyard-Adapter: " + a.Build + "\n")
	out.FieldString(body)
	return nil
}

// embedTexts is the input as JSON strings: a string, or a list of strings
// and text-only items (their parts joined by newlines). Images are refused:
// these models embed text.
func embedTexts(input gjson.Result) ([]string, error) {
	if input.Type == gjson.String {
		return []string{input.Raw}, nil
	}
	var texts []string
	var err error
	input.ForEach(func(_, item gjson.Result) bool {
		switch {
		case item.Type == gjson.String:
			texts = append(texts, item.Raw)
		case item.IsObject():
			item.Get("content").ForEach(func(_, p gjson.Result) bool {
				if p.Get("type").Str != "text" {
					err = sdk.Error("bedrock embeddings take text, not " + sdk.Quote(p.Get("type").Str))
				}
				return err == nil
			})
			texts = append(texts, sdk.Quote(sdk.ContentText(item.Get("content"))))
		default:
			err = sdk.Error("bedrock embeddings take text, not token ids")
		}
		return err == nil
	})
	return texts, err
}

// EmbedResponse is the embed_response hook: Titan's embedding (with its
// input token count) or Cohere's float embeddings as an OpenAI list.
// Cohere on Bedrock reports no token count in the body.
func EmbedResponse(in *sdk.In, out *sdk.Out) error {
	ctx, r := in.Field(0), gjson.ParseBytes(in.Field(1))
	var vecs []string
	usage := ""
	switch embedFamily(sdk.Get(ctx, "model").Str) {
	case titan:
		if e := r.Get("embedding"); e.IsArray() {
			vecs = append(vecs, e.Raw)
		}
		n := r.Get("inputTextTokenCount").Int()
		usage = `,"usage":{"prompt_tokens":` + itoa(n) + `,"total_tokens":` + itoa(n) + `}`
	case cohere:
		e := r.Get("embeddings")
		if f := e.Get("float"); f.IsArray() { // embeddings_by_type
			e = f
		}
		e.ForEach(func(_, v gjson.Result) bool {
			vecs = append(vecs, v.Raw)
			return true
		})
	}
	if len(vecs) == 0 {
		return sdk.Error("upstream response holds no embeddings")
	}
	var b strings.Builder
	b.WriteString(`{"object":"list","data":[`)
	for i, v := range vecs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"object":"embedding","index":` + itoa(int64(i)) + `,"embedding":` + v + `}`)
	}
	b.WriteString(`],"model":` + sdk.Quote(sdk.Get(ctx, "model").Str) + usage + `}`)
	out.FieldString(b.String())
	return nil
}
