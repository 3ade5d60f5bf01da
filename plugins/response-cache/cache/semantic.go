package cache

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"math"
	"strconv"
	"strings"

	"github.com/switchyard/switchyard/sdk"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// Semantic mode (docs/response-cache.md): the last user turn is embedded
// (the embed host function, an embeddings sub-request charged to the
// caller) and looked up in the host's vector index among the entries of
// the same partition (account, or API key) and the same tag. The tag is
// the digest of everything else that determines the answer — the exact
// key of the request with the last user turn's text left out (model or
// routing choice, tools, sampling parameters, response format, seed, the
// conversation before it) — and the embedding model. So a hit needs a
// similar last question AND the rest of the request the same.

// semState is what post_response needs to index a miss's answer.
type semState struct {
	part, id, tag string
	vec           []float32
}

// state is the semantic member of the stage state (after the exact ones).
func (s *semState) state() string {
	return `,"semantic":{"part":` + sdk.Quote(s.part) + `,"id":` + sdk.Quote(s.id) + `,"tag":` + sdk.Quote(s.tag) +
		`,"vec":"` + base64.StdEncoding.EncodeToString(floatBytes(s.vec)) + `"}`
}

func floatBytes(v []float32) []byte {
	out := make([]byte, 0, 4*len(v))
	for _, f := range v {
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(f))
	}
	return out
}

func bytesFloats(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// LastUserTurn is the text of a chat request's last message when it is
// the user's (string content, or text parts joined by newlines), and the
// digest of the request without that text (Key of the body with the
// content emptied). ok is false when the last message is not a user turn
// of text only (a tool result, an image): such a request is looked up
// exactly only.
func LastUserTurn(body []byte) (text, rest string, ok bool) {
	msgs := gjson.GetBytes(body, "messages").Array()
	if len(msgs) == 0 {
		return "", "", false
	}
	last := msgs[len(msgs)-1]
	if last.Get("role").Str != "user" {
		return "", "", false
	}
	c := last.Get("content")
	switch {
	case c.Type == gjson.String:
		text = c.Str
	case c.IsArray():
		var parts []string
		for _, p := range c.Array() {
			if p.Get("type").Str != "text" {
				return "", "", false
			}
			parts = append(parts, p.Get("text").Str)
		}
		text = strings.Join(parts, "\n")
	default:
		return "", "", false
	}
	if strings.TrimSpace(text) == "" {
		return "", "", false
	}
	without, err := sjson.SetBytes(append([]byte(nil), body...), "messages."+strconv.Itoa(len(msgs)-1)+".content", "")
	if err != nil {
		return "", "", false
	}
	return text, Key(without), true
}

// tagOf is the vector index tag of a request: the rest of its key and the
// embedding model (vectors of two models are not comparable).
func tagOf(rest, model string) string {
	sum := sha256.Sum256([]byte(rest + "\x00" + model))
	return hex.EncodeToString(sum[:16])
}

// semantic looks the request up by meaning. It answers the request (a
// hit: nil, "") or returns what post_response needs to index its answer;
// nil and a reason when the request cannot be looked up by meaning.
func (h *Hooks) semantic(out *sdk.Out, o Options, body []byte, part, digest string) (*semState, string) {
	if o.EmbeddingModel == "" {
		return nil, "miss: semantic mode needs an embedding model (the embedding_model option or module_settings); looked up exactly only"
	}
	if h.Env.Embed == nil || h.Env.VectorSearch == nil {
		return nil, "miss: no embed or vector index here; looked up exactly only"
	}
	text, rest, ok := LastUserTurn(body)
	if !ok {
		return nil, "miss: the last message is not a user turn of text; looked up exactly only"
	}
	vec, why := h.embed(o.EmbeddingModel, text)
	if vec == nil {
		return nil, "miss: " + why
	}
	tag := tagOf(rest, o.EmbeddingModel)
	m, found, err := h.Env.VectorSearch(part, tag, vec, o.Threshold)
	if err == nil && found {
		if v, ok, err := h.Env.KVGet(part + ":" + m.ID); err == nil && ok {
			if e, ok := decodeEntry(v); ok {
				h.hit(out, "semantic", e, m.Similarity)
				return nil, ""
			}
		}
		// The answer expired or was evicted from the kv store before
		// its vector: the vector goes too.
		_, _ = h.Env.VectorPut(part, m.ID, tag, nil, 0)
	}
	return &semState{part: part, id: digest, tag: tag, vec: vec}, ""
}

// embed is the embedding of text by model, or nil and why not.
func (h *Hooks) embed(model, text string) ([]float32, string) {
	req := `{"model":` + sdk.Quote(model) + `,"input":` + sdk.Quote(text) + `}`
	status, resp, err := h.Env.Embed([]byte(req))
	switch {
	case err != nil:
		return nil, "embed: " + err.Error()
	case status != 200:
		msg := gjson.GetBytes(resp, "error.message").Str
		return nil, "embed: status " + strconv.Itoa(status) + " " + msg
	}
	emb := gjson.GetBytes(resp, "data.0.embedding")
	if !emb.IsArray() {
		return nil, "embed: no data[0].embedding in the answer"
	}
	arr := emb.Array()
	vec := make([]float32, len(arr))
	for i, x := range arr {
		vec[i] = float32(x.Num)
	}
	if len(vec) == 0 {
		return nil, "embed: an empty embedding"
	}
	return vec, ""
}

// storeVector indexes a stored answer's vector; it returns a note for the
// stage summary.
func (h *Hooks) storeVector(sem gjson.Result, ttl int) string {
	if h.Env.VectorPut == nil {
		return "; not indexed: no vector index here"
	}
	raw, err := base64.StdEncoding.DecodeString(sem.Get("vec").Str)
	if err != nil || len(raw) == 0 {
		return "; not indexed: no vector"
	}
	evicted, err := h.Env.VectorPut(sem.Get("part").Str, sem.Get("id").Str, sem.Get("tag").Str, bytesFloats(raw), ttl)
	if err != nil {
		return "; not indexed: " + err.Error()
	}
	if evicted > 0 {
		return "; indexed, " + strconv.Itoa(evicted) + " vector(s) evicted"
	}
	return "; indexed"
}
