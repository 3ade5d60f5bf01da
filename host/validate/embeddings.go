package validate

import (
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/route"
	"github.com/switchyard/switchyard/host/tokenize"
	"github.com/tidwall/gjson"
)

// MaxEmbeddingInputs caps one embeddings batch (docs/interface-choices.md):
// a longer input array is a 400, not a silent split.
const MaxEmbeddingInputs = 2048

// Embeddings validates the body of POST /embeddings against spec 2.6, with
// provider preferences as in 2.4:
//   - model (required): a model id <vendor>/<model_name>;
//   - input (required): a non-empty string; or 1 to 2048 non-empty strings;
//     or 1 to 2048 multimodal items {"content": [part, …]} whose parts are
//     {"type": "text", "text": …} or {"type": "image_url", "image_url":
//     {"url": …}}; or token ids: an array of 1 to 2048 integers (one
//     input), or 1 to 2048 such arrays (OpenAI's SDKs and LangChain's
//     OpenAIEmbeddings send these). Token ids go as they are to providers
//     that take them and are decoded to text for the others
//     (docs/interface-choices.md). Kinds are not mixed in one array;
//   - encoding_format: float or base64; dimensions: integer >= 1;
//     user: string; provider: as for chat.
//
// Other top-level fields are accepted, as for chat. The request returned
// aliases body, which must not change after.
func Embeddings(body []byte) (*EmbeddingsRequest, *apierr.Error) {
	req := &EmbeddingsRequest{Body: body}
	var provider gjson.Result
	if err := checkEmbeddings(body, req, &provider); err != nil {
		return nil, err
	}
	prefs, err := route.ParsePreferences(provider, gjson.Result{})
	if err != nil {
		return nil, err
	}
	req.Prefs = prefs
	req.PromptBound, req.Images = tokenize.EstimatePrompt(body)
	return req, nil
}

func checkEmbeddings(body []byte, req *EmbeddingsRequest, provider *gjson.Result) *apierr.Error {
	root, v, err := parse(body)
	if err != nil {
		return err
	}
	defer v.done()
	hasModel, hasInput := false, false
	if err := v.each(root, func(k string, x gjson.Result) *apierr.Error {
		req.collect(k, x)
		switch k {
		case "model":
			hasModel = true
			return v.requestModel(x)
		case "input":
			hasInput = true
			return v.embeddingInput(x)
		case "encoding_format":
			return v.nullEnum(x, encodings)
		case "dimensions":
			return v.integer(x, 1, 1<<31-1)
		case "user":
			if isNull(x) {
				return nil
			}
			return v.str(x)
		case "provider":
			*provider = x
			return v.provider(x)
		}
		return nil
	}); err != nil {
		return err
	}
	if !hasModel {
		return apierr.BadRequest("model", "required: an embedding model id such as openai/text-embedding-3-small")
	}
	if !hasInput {
		return apierr.BadRequest("input", "required: a string, an array of strings, or an array of multimodal items")
	}
	return nil
}

// embeddingInput checks input (the path is already input).
func (v *validator) embeddingInput(x gjson.Result) *apierr.Error {
	switch {
	case x.Type == gjson.String:
		if x.Raw == `""` {
			return v.fail("must not be empty")
		}
		return nil
	case !x.IsArray():
		return v.fail("must be a string, an array of strings, or an array of multimodal items, got %s (or token ids: an array of integers)", describe(x))
	}
	if v.first(x).Type == gjson.Number {
		return v.tokenIDs(x) // one input as token ids
	}
	var kind string // of the first item: a string, an array or an object
	return v.items(x, 1, -1, func(i int, it gjson.Result) *apierr.Error {
		switch {
		case i == MaxEmbeddingInputs:
			v.out() // name input, not the item
			err := v.fail("at most %d inputs per request, got %d; split the batch", MaxEmbeddingInputs, v.Count(x))
			v.at(i)
			return err
		case it.Type != gjson.String && !it.IsObject() && !it.IsArray():
			return v.fail("must be a string or a multimodal item {\"content\": [...]}, got %s", describe(it))
		}
		if i == 0 {
			kind = describe(it)
		} else if describe(it) != kind {
			return v.fail("mixes strings and multimodal items (or token-id arrays); send one kind per request")
		}
		if it.IsArray() {
			return v.tokenIDs(it)
		}
		if it.Type == gjson.String {
			if it.Raw == `""` {
				return v.fail("must not be empty")
			}
			return nil
		}
		return v.multimodalItem(it)
	})
}

// multimodalItem checks {"content": [part, …]} with at least one part.
func (v *validator) multimodalItem(it gjson.Result) *apierr.Error {
	if err := v.strict(it, func(k string, c gjson.Result) *apierr.Error {
		if k != "content" {
			return v.fail("unknown field; a multimodal item has only content")
		}
		return v.items(c, 1, -1, func(_ int, p gjson.Result) *apierr.Error { return v.embeddingPart(p) })
	}); err != nil {
		return err
	}
	if !v.Get(it, "content").Exists() {
		return v.failAt("content", "required: an array of text and image_url parts")
	}
	return nil
}

// embeddingPart checks {"type": "text", "text"} or {"type": "image_url", "image_url": {"url"}}.
func (v *validator) embeddingPart(p gjson.Result) *apierr.Error {
	if err := v.object(p); err != nil {
		return err
	}
	t := v.Get(p, "type")
	switch {
	case t.Type == gjson.String && text(t) == "text":
		return v.field("text", v.Get(p, "text"), v.nonEmpty)
	case t.Type == gjson.String && text(t) == "image_url":
		return v.imageURL(v.Get(p, "image_url"))
	}
	return v.failAt("type", "must be text or image_url, got %s", shown(t))
}

// MaxTokenID bounds a token id: far above any vocabulary (o200k has about
// 200,000 ids), within every tokenizer's integer type.
const MaxTokenID = 1<<31 - 1

// tokenIDs checks one input given as token ids: 1 to 2048 integers.
func (v *validator) tokenIDs(x gjson.Result) *apierr.Error {
	return v.items(x, 1, MaxEmbeddingInputs, func(_ int, id gjson.Result) *apierr.Error {
		return v.integer(id, 0, MaxTokenID)
	})
}

// first is the first element of array x, or a Result that does not exist.
func (d *validator) first(x gjson.Result) gjson.Result {
	var out gjson.Result
	d.Elements(x, func(_ int, y gjson.Result) bool { out = y; return false })
	return out
}
