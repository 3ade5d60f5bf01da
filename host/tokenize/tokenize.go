// Package tokenize counts tokens offline with OpenAI's BPE vocabularies
// (cl100k_base and o200k_base through github.com/pkoukk/tiktoken-go; the
// vocabulary files are embedded in the binary by tiktoken-go-loader, so
// nothing is downloaded at run time).
//
// Two kinds of figure, for two moments of a request:
//
//   - EstimatePrompt is for the hold before the upstream call. It must cost
//     microseconds, so it does not run the tokenizer (which runs at about
//     3-4 MB/s, ~1 ms for a 4 KB prompt); it bounds the count by the text's
//     size instead (see EstimatePrompt).
//   - CountChatPrompt, CountEmbeddingInput and Count run the real tokenizer.
//     They are for billing when the upstream reports no usage, after the
//     response, where a millisecond does not delay the call.
//
// Vocabularies are loaded on first use (≈150 ms for cl100k, ≈300 ms for
// o200k); call Warm at start-up to pay that before the first request.
package tokenize

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	tiktoken "github.com/pkoukk/tiktoken-go"
	"github.com/tidwall/gjson"
)

// Encoding names.
const (
	CL100K = "cl100k_base"
	O200K  = "o200k_base"
)

// Chat framing, from OpenAI's published counting method for its chat
// models: every message costs 3 tokens beyond its content, a name 1 more,
// and the reply is primed with 3.
const (
	tokensPerMessage = 3
	tokensPerName    = 1
	tokensReplyStart = 3
	// ImageTokens is what an input image adds to a counted prompt when the
	// upstream reports no usage: the fixed base cost of one image at OpenAI's
	// low detail. Images are also counted separately, for per-image prices.
	ImageTokens = 85
)

// vocabularies reads the embedded vocabulary files instead of fetching
// them (this is the only tiktoken user in the binary), and keeps their rank
// maps for the counter in bpe.go.
var vocabularies = &capturingLoader{inner: embeddedRanks{}, ranks: map[string]map[string]int{}}

func init() { tiktoken.SetBpeLoader(vocabularies) }

type lazy struct {
	once sync.Once
	bpe  *bpe
	err  error

	// tiktoken's own encoder is loaded only to decode: its decoding tables
	// (≈7 MB for cl100k_base) are not needed to count, and the counter
	// below shares its rank map.
	encOnce sync.Once
	enc     *tiktoken.Tiktoken
	encErr  error
}

// tiktoken returns the vocabulary's tiktoken encoder, loading it on first
// use.
func (l *lazy) tiktoken(name string) (*tiktoken.Tiktoken, error) {
	l.encOnce.Do(func() { l.enc, l.encErr = tiktoken.GetEncoding(name) })
	return l.enc, l.encErr
}

var encodings = map[string]*lazy{CL100K: {}, O200K: {}}

// Encoder counts tokens of one vocabulary; safe for concurrent use.
type Encoder struct {
	name string
	l    *lazy // tiktoken's own encoder, loaded to decode
	bpe  *bpe  // the counter: tiktoken's tokens in O(n log n) (bpe.go)
}

// Get returns the encoder of a vocabulary, loading it on first use.
func Get(name string) (*Encoder, error) {
	l, ok := encodings[name]
	if !ok {
		name, l = CL100K, encodings[CL100K]
	}
	l.once.Do(func() { l.bpe, l.err = load(name) })
	if l.err != nil {
		return nil, l.err
	}
	return &Encoder{name: name, l: l, bpe: l.bpe}, nil
}

func load(name string) (*bpe, error) {
	ranks, err := vocabularies.ranksOf(name)
	if err != nil {
		return nil, err
	}
	piece := map[string]func(string, int) int{CL100K: cl100kPiece, O200K: o200kPiece}[name]
	if piece == nil {
		return nil, fmt.Errorf("no pre-tokenizer for vocabulary %s", name)
	}
	return &bpe{ranks: ranks, piece: piece}, nil
}

// WarmFor loads the vocabularies of models (EncodingFor each) and returns
// their names. A gateway calls it once it serves, off the request path: a
// vocabulary is otherwise loaded by the first request that needs a count
// (≈15 ms, and every concurrent request needing the same one waits for
// it) — and every stream longer than a few seconds needs one for its
// checkpoints. A vocabulary no model uses stays unloaded.
func WarmFor(models ...string) ([]string, error) {
	var names []string
	for _, m := range models {
		if name := EncodingFor(m); !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		if _, err := Get(name); err != nil {
			return names, err
		}
	}
	return names, nil
}

// EncodingFor picks the vocabulary for a model id ("openai/gpt-4o" or
// "gpt-4o"): o200k_base for OpenAI's models since GPT-4o (gpt-4o, gpt-4.1,
// gpt-5, o1, o3, o4, chatgpt-4o), cl100k_base for everything else — older
// OpenAI models, OpenAI's embeddings, and other vendors' models, whose own
// tokenizers are not available offline and usually produce counts closer to
// cl100k's than to o200k's.
func EncodingFor(model string) string {
	if i := strings.LastIndexByte(model, '/'); i >= 0 {
		model = model[i+1:]
	}
	for _, p := range []string{"gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "chatgpt-4o", "o1", "o3", "o4", "gpt-oss"} {
		if strings.HasPrefix(model, p) {
			return O200K
		}
	}
	return CL100K
}

// ForModel returns the encoder for a model id (see EncodingFor).
func ForModel(model string) (*Encoder, error) { return Get(EncodingFor(model)) }

// Name is the vocabulary's name.
func (e *Encoder) Name() string { return e.name }

// Count returns the number of tokens of text. Special-token markers in the
// text ("<|endoftext|>") are counted as ordinary text, as an API does for
// user content. The count is tiktoken's exactly, in O(n log n) time on any
// input (see bpe.go): a megabyte of one repeated character takes well under
// a second, not the hours of a quadratic merge.
func (e *Encoder) Count(text string) int {
	n, _ := e.countIn(context.Background(), text, segmentBytes)
	return n
}

// CountContext is Count for a caller with a deadline (a module's
// count_tokens host call, inside the module's time limit): it counts in
// segments of ctxSegmentBytes and stops with ctx's error between two
// segments once ctx is done. A text with no cut past a point (64 KiB
// without a space between letters) is counted whole from there.
func (e *Encoder) CountContext(ctx context.Context, text string) (int, error) {
	return e.countIn(ctx, text, ctxSegmentBytes)
}

// countIn counts text in segments of about seg bytes, cut where counting
// the parts apart gives the same tokens (segmentCut), checking ctx before
// each.
func (e *Encoder) countIn(ctx context.Context, text string, seg int) (int, error) {
	n := 0
	for len(text) > seg {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		cut := segmentCut(text, seg)
		if cut < 0 {
			break
		}
		n += e.bpe.encode(text[:cut], nil, nil)
		text = text[cut:]
	}
	if err := ctx.Err(); err != nil {
		return n, err
	}
	if text == "" {
		return n, nil
	}
	return n + e.bpe.encode(text, nil, nil), nil
}

// ctxSegmentBytes is CountContext's segment: about a millisecond of prose.
const ctxSegmentBytes = 64 << 10

// segmentBytes bounds the text encoded at once. It was for regexp2, which
// held its whole input as []rune plus a match per piece (a 30 MB
// completion cost about 400 MB); the splitters hold nothing, and the cut
// is kept as a bound on what an invalid-UTF-8 text is copied in at once.
const segmentBytes = 1 << 20

// segmentCut returns a cut at or after from where counting the two halves
// apart gives the same tokens as counting text whole: a space between two
// ASCII letters. In both cl100k's and o200k's patterns no piece crosses
// such a space (a letter run ends before it, and the next piece starts at
// it), so the pieces, and so the tokens, are the same. -1: none within
// 64 KiB (the rest is counted whole).
func segmentCut(text string, from int) int {
	letter := func(b byte) bool { return b|0x20 >= 'a' && b|0x20 <= 'z' }
	for i := from; i+1 < len(text) && i < from+64<<10; i++ {
		if text[i] == ' ' && letter(text[i-1]) && letter(text[i+1]) {
			return i
		}
	}
	return -1
}

// Count counts text with the model's encoder.
func Count(model, text string) (int64, error) {
	e, err := ForModel(model)
	if err != nil {
		return 0, err
	}
	return int64(e.Count(text)), nil
}

// CountWithin is Count that gives up with ctx's error once ctx is done
// (Encoder.CountContext).
func CountWithin(ctx context.Context, model, text string) (int64, error) {
	e, err := ForModel(model)
	if err != nil {
		return 0, err
	}
	n, err := e.CountContext(ctx, text)
	return int64(n), err
}

// CountChatPrompt counts the prompt tokens of a chat request body and its
// input images: message contents (strings and text parts), roles, names,
// tool calls, the tool definitions' JSON and a JSON response schema, with
// the chat framing above and ImageTokens per image part.
func CountChatPrompt(model string, body []byte) (tokens, images int64, err error) {
	e, err := ForModel(model)
	if err != nil {
		return 0, 0, err
	}
	n, images := walkChat(body, func(r gjson.Result) int { return e.Count(r.String()) })
	return n + images*ImageTokens, images, nil
}

// CountEmbeddingInput counts the tokens of an embedding request's input
// (a string, an array of strings, token arrays, or multimodal items) and its
// images.
func CountEmbeddingInput(model string, body []byte) (tokens, images int64, err error) {
	e, err := ForModel(model)
	if err != nil {
		return 0, 0, err
	}
	n, images := walkEmbedding(body, func(r gjson.Result) int { return e.Count(r.String()) })
	return n + images*ImageTokens, images, nil
}

// ImageTokensBound is what EstimatePrompt allows per input image: about the
// most a large high-detail image costs at the major vendors.
const ImageTokensBound = 1600

// EstimatePrompt is the prompt figure for a hold, from a chat or embedding
// request body, in microseconds: one gjson pass, no tokenizer. It is an
// upper bound, not a guess: every token of a byte-level BPE vocabulary
// (OpenAI's, Llama 3's, ...) or of a SentencePiece vocabulary with byte
// fallback covers at least one byte of UTF-8, so a text has at most as many
// tokens as bytes; the JSON-escaped length used here is longer still. The
// chat framing is added as in CountChatPrompt (roles count as bytes too,
// which covers other vendors' longer message templates), and
// ImageTokensBound per image. Real counts are 2 to 4.5 times smaller, so
// pass the endpoint's context length in billing.Request.ContextLength: the
// hold is capped there, which is the true worst case for a long prompt.
//
// For speed, a chat body that never mentions an image counts as its whole
// raw JSON (keys, punctuation and the other fields included: a few hundred
// bytes more than its texts) plus the framing for each "role" key, found
// with bytes.Count — about 100 ns for 4 KB. Only a body that mentions an
// image is walked part by part (about 2 ns a byte), so an image's base64
// data is not taken for text.
func EstimatePrompt(body []byte) (tokens, images int64) {
	size := func(r gjson.Result) int { return len(r.Raw) }
	if !bytes.Contains(body, []byte(`"messages"`)) {
		tokens, images = walkEmbedding(body, size)
		return tokens + images*ImageTokensBound, images
	}
	if !bytes.Contains(body, []byte("image")) {
		return ChatTextBound(len(body), bytes.Count(body, []byte(`"role"`))), 0
	}
	tokens, images = walkChat(body, size)
	return tokens + images*ImageTokensBound, images
}

// ChatTextBound is EstimatePrompt of a chat body of size bytes whose
// messages (at most messages of them) hold no image: the whole raw JSON
// and each message's framing. The request validator, which has walked the
// body and counted them, calls it instead of searching the body again.
func ChatTextBound(size, messages int) int64 {
	return int64(size) + int64(messages)*(tokensPerMessage+tokensPerName) + tokensReplyStart
}

// walkChat sums count over the countable parts of a chat request, with the
// framing, in one pass over the body.
func walkChat(body []byte, count func(gjson.Result) int) (tokens, images int64) {
	n := 0
	messages := 0
	gjson.ParseBytes(body).ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "messages":
			v.ForEach(func(_, m gjson.Result) bool {
				messages++
				n += tokensPerMessage
				m.ForEach(func(f, fv gjson.Result) bool {
					switch f.Str {
					case "role":
						n += count(fv)
					case "name":
						n += tokensPerName + count(fv)
					case "content":
						n += walkContent(fv, count, &images)
					case "reasoning":
						if fv.Type == gjson.String {
							n += count(fv)
						}
					case "tool_calls":
						fv.ForEach(func(_, tc gjson.Result) bool {
							n += count(tc.Get("function.name")) + count(tc.Get("function.arguments"))
							return true
						})
					}
					return true
				})
				return true
			})
		case "tools":
			if v.IsArray() {
				n += count(gjson.Result{Type: gjson.String, Str: v.Raw, Raw: v.Raw})
			}
		case "response_format":
			if js := v.Get("json_schema"); js.Exists() {
				n += count(gjson.Result{Type: gjson.String, Str: js.Raw, Raw: js.Raw})
			}
		}
		return true
	})
	if messages > 0 {
		n += tokensReplyStart
	}
	return int64(n), images
}

// walkContent counts a content value: a string or an array of parts.
func walkContent(c gjson.Result, count func(gjson.Result) int, images *int64) int {
	if c.Type == gjson.String {
		return count(c)
	}
	n := 0
	c.ForEach(func(_, p gjson.Result) bool {
		var text gjson.Result
		isImage := false
		p.ForEach(func(k, v gjson.Result) bool {
			switch k.Str {
			case "type":
				isImage = v.Str == "image_url" || v.Str == "input_image"
			case "text":
				text = v
			}
			return true
		})
		if isImage {
			*images++
		} else if text.Type == gjson.String {
			n += count(text)
		}
		return true
	})
	return n
}

// walkEmbedding counts an embedding request's input.
func walkEmbedding(body []byte, count func(gjson.Result) int) (tokens, images int64) {
	n := 0
	item := func(v gjson.Result) {
		switch {
		case v.Type == gjson.String:
			n += count(v)
		case v.Type == gjson.Number:
			n++ // one token id of a token array
		case v.IsArray(): // an array of token ids
			v.ForEach(func(_, _ gjson.Result) bool { n++; return true })
		case v.IsObject():
			n += walkContent(v.Get("content"), count, &images)
		}
	}
	in := gjson.GetBytes(body, "input")
	if in.IsArray() {
		in.ForEach(func(_, v gjson.Result) bool { item(v); return true })
	} else {
		item(in)
	}
	return int64(n), images
}
