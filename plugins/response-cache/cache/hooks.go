package cache

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/sdk"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// Env is what the hooks need from the host: the kv host functions and a
// clock. main.go fills it with the sdk's; tests with a map.
type Env struct {
	KVGet func(key string) ([]byte, bool, error)
	// KVPut stores with eviction (sdk.KVPutEvicting): a full store makes
	// room by evicting the entries that expire soonest; it answers how many.
	KVPut func(key string, val []byte, ttlSeconds int) (evicted int, err error)
	Now   func() time.Time
	// Embed, VectorPut and VectorSearch are semantic mode's (sdk.Embed,
	// sdk.VectorPut, sdk.VectorSearch): an embeddings sub-request, and the
	// host's vector index for the request's account.
	Embed        func(body []byte) (status int, resp []byte, err error)
	VectorPut    func(partition, id, tag string, v []float32, ttlSeconds int) (evicted int, err error)
	VectorSearch func(partition, tag string, v []float32, min float64) (m sdk.VectorMatch, ok bool, err error)
}

// Defaults of the options (docs/response-cache.md).
const (
	DefaultTTL = 3600 // seconds
	// DefaultMaxEntryBytes bounds one stored answer; the kv store's own
	// cap (modules.kv.max_value_bytes, 1 MiB by default) is the ceiling.
	DefaultMaxEntryBytes = 256 << 10
	// DefaultThreshold is semantic mode's least similarity of a hit: high,
	// since a wrong hit answers a different question (a paraphrase of one
	// sentence scores 0.9–0.98 with OpenAI's text-embedding-3 models; two
	// different questions on one topic can score 0.85–0.9).
	DefaultThreshold = 0.95
)

// Options are the plugin item's options, with the operator's settings
// (ctx.settings) under them.
type Options struct {
	Mode    string // "exact" (only exact is built: see docs/response-cache.md)
	TTL     int    // seconds
	Scope   string // "account" or "key"
	NoStore bool   // look up, but do not store this request's answer
	Bypass  bool   // neither look up nor store
	// Sampled caches a request that samples (temperature > 0, or absent,
	// which is the provider's default of 1) without a seed.
	Sampled       bool
	MaxEntryBytes int
	// Threshold is semantic mode's least cosine similarity of a hit;
	// EmbeddingModel the model that embeds the last user turn.
	Threshold      float64
	EmbeddingModel string
}

func options(ctx gjson.Result) Options {
	cfg, st := ctx.Get("config"), ctx.Get("settings")
	pick := func(name string) gjson.Result {
		if v := cfg.Get(name); v.Exists() {
			return v
		}
		return st.Get(name)
	}
	o := Options{Mode: "exact", TTL: DefaultTTL, Scope: "account", MaxEntryBytes: DefaultMaxEntryBytes, Threshold: DefaultThreshold}
	if v := pick("mode"); v.Str != "" {
		o.Mode = v.Str
	}
	if v := pick("ttl"); v.Int() > 0 {
		o.TTL = int(v.Int())
	}
	if v := pick("scope"); v.Str != "" {
		o.Scope = v.Str
	}
	if v := pick("threshold"); v.Exists() && v.Num > 0 && v.Num <= 1 {
		o.Threshold = v.Num
	}
	if v := pick("embedding_model"); v.Str != "" {
		o.EmbeddingModel = v.Str
	}
	o.NoStore = cfg.Get("no_store").Bool()
	o.Bypass = cfg.Get("bypass").Bool()
	o.Sampled = pick("cache_sampled").Bool()
	// The entry bound is the operator's alone: a caller cannot raise it.
	if v := st.Get("max_entry_bytes"); v.Int() > 0 {
		o.MaxEntryBytes = int(v.Int())
	}
	return o
}

// forModel reports whether a default-on cache runs for model: always
// without a models list, else when the list names it or a prefix of it
// ending in "/" or "*" ("openai/*").
func forModel(models gjson.Result, model string) bool {
	if !models.IsArray() {
		return true
	}
	for _, m := range models.Array() {
		p := m.Str
		if p == model || strings.HasSuffix(p, "*") && strings.HasPrefix(model, strings.TrimSuffix(p, "*")) {
			return true
		}
	}
	return false
}

// Sampled reports whether a request's answer is drawn at random: a
// temperature above zero (absent: the provider's default, 1 for OpenAI)
// and no seed. Such an answer is one of many, so it is cached only when
// the caller says so (cache_sampled).
func Sampled(body []byte) bool {
	if gjson.GetBytes(body, "seed").Exists() {
		return false
	}
	t := gjson.GetBytes(body, "temperature")
	return !t.Exists() || t.Type == gjson.Null || t.Num > 0
}

// storeKey is the kv key of a request: the scope's prefix and the
// request's digest. Accounts are apart already (the host partitions the
// kv store by account); scope "key" adds the API key's id.
func storeKey(o Options, ctx gjson.Result, digest string) (string, bool) {
	part, ok := partition(o, ctx)
	return part + ":" + digest, ok
}

// partition is the part of the account's entries a request may read: "a"
// (the account's) or "k:<key id>" (scope key). It prefixes kv keys and
// names the vector index's partition.
func partition(o Options, ctx gjson.Result) (string, bool) {
	if o.Scope == "key" {
		k := ctx.Get("key").Str
		if k == "" {
			return "", false // no key to partition by: never shared
		}
		return "k:" + k, true
	}
	return "a", true
}

// ErrFull is KVPut's error when an entry does not fit in the store of this
// module and account even after eviction (the host's HostQuota).
var ErrFull = errors.New("response-cache: the account's cache is full")

// Hooks are the module's hooks over an Env.
type Hooks struct{ Env Env }

// entry is what is stored: the answer and where it came from.
type entry struct {
	Created int64  // unix seconds
	Gen     string // the generation that produced it
	Result  []byte // the chat result
}

func encodeEntry(e entry) []byte {
	out := []byte(`{"created":` + strconv.FormatInt(e.Created, 10) + `,"gen":` + sdk.Quote(e.Gen) + `,"result":`)
	out = append(out, e.Result...)
	return append(out, '}')
}

func decodeEntry(b []byte) (entry, bool) {
	r := gjson.ParseBytes(b)
	res := r.Get("result")
	if !res.IsObject() || !res.Get("choices").IsArray() {
		return entry{}, false
	}
	return entry{Created: r.Get("created").Int(), Gen: r.Get("gen").Str, Result: []byte(res.Raw)}, true
}

// PreRequest looks the request up. A hit answers it (respond) with the
// stored result, its stage summary saying hit, the mode, the similarity,
// the age and the original generation; a miss goes on, carrying the key to
// post_response in the state.
func (h *Hooks) PreRequest(in *sdk.In, out *sdk.Out) error {
	ctx, body := gjson.ParseBytes(in.Field(0)), in.Field(1)
	o := options(ctx)
	miss := func(status, why, state string) {
		out.FieldString(abi.ActionContinue)
		out.Field(nil)
		out.FieldString(`{"type":"cache","summary":` + sdk.Quote(why) + `,"data":{"status":` + sdk.Quote(status) + `,"mode":` + sdk.Quote(o.Mode) + `}}`)
		if state != "" {
			out.FieldString(state)
		}
	}
	if ctx.Get("default").Bool() && !forModel(ctx.Get("settings.models"), ctx.Get("model").Str) {
		// On by default, but not for this model (module_settings
		// .response-cache.models): as if it did not run.
		out.FieldString(abi.ActionContinue)
		out.Field(nil)
		out.FieldString(`{"type":"plugin","summary":"default-on, not for this model (module_settings.response-cache.models)"}`)
		return nil
	}
	if o.Mode != "exact" && o.Mode != "semantic" {
		miss("bypass", "unknown mode "+o.Mode+"; nothing cached", "")
		return nil
	}
	if o.Bypass {
		miss("bypass", "bypass: not looked up, not stored", "")
		return nil
	}
	if Sampled(body) && !o.Sampled {
		miss("bypass", "sampled (temperature > 0 or absent, no seed): not cached without cache_sampled", "")
		return nil
	}
	digest := Key(body)
	key, ok := storeKey(o, ctx, digest)
	if !ok {
		miss("bypass", "scope key without a key id: not cached", "")
		return nil
	}
	// An identical request is a hit in either mode, without an embedding.
	if v, found, err := h.Env.KVGet(key); err == nil && found {
		if e, ok := decodeEntry(v); ok {
			h.hit(out, o.Mode, e, 1)
			return nil
		}
	}
	state := ""
	if !o.NoStore {
		state = `{"key":` + sdk.Quote(key) + `,"ttl":` + strconv.Itoa(o.TTL) + `,"max":` + strconv.Itoa(o.MaxEntryBytes)
	}
	if o.Mode == "semantic" {
		part, _ := partition(o, ctx)
		sem, why := h.semantic(out, o, body, part, digest)
		if sem == nil {
			if why == "" {
				return nil // answered (hit)
			}
			miss("miss", why, closeState(state, ""))
			return nil
		}
		miss("miss", "miss", closeState(state, sem.state()))
		return nil
	}
	miss("miss", "miss", closeState(state, ""))
	return nil
}

// closeState ends the state object begun in PreRequest, with more members
// (",\"semantic\":…") when there are; "" stays "".
func closeState(state, more string) string {
	if state == "" {
		return ""
	}
	return state + more + "}"
}

// hit answers the request (respond) with a stored entry.
func (h *Hooks) hit(out *sdk.Out, mode string, e entry, similarity float64) {
	age := max(h.Env.Now().Unix()-e.Created, 0)
	result, _ := sjson.SetBytes(e.Result, "usage.cost", 0)
	out.FieldString(abi.ActionRespond)
	out.Field(result)
	out.FieldString(`{"type":"cache","summary":"hit","data":{"status":"hit","mode":` + sdk.Quote(mode) + `,"similarity":` +
		strconv.FormatFloat(similarity, 'f', -1, 64) + `,"age_seconds":` +
		strconv.FormatInt(age, 10) + `,"original_generation":` + sdk.Quote(e.Gen) + `}}`)
}

// Storable reports why a chat result must not be stored ("" when it may):
// only a complete answer is, every choice finished by "stop" or
// "tool_calls". "length" is an answer cut at max_tokens; a repeat of the
// request would be cut the same way, but a caller who raises max_tokens
// gets a different key anyway, and serving a cut answer from the cache
// would hide a truncation the caller may retry on. "content_filter",
// "error" and anything else are not answers to keep.
func Storable(result []byte) string {
	r := gjson.ParseBytes(result)
	if r.Get("error").Exists() {
		return "an error"
	}
	choices := r.Get("choices").Array()
	if len(choices) == 0 {
		return "no choices"
	}
	for _, c := range choices {
		switch fr := c.Get("finish_reason").Str; fr {
		case "stop", "tool_calls":
		default:
			return "finish_reason " + strconv.Quote(fr)
		}
	}
	return ""
}

// PostResponse stores a complete answer under the key pre_request chose.
// The answer is never changed; the stage says whether it was stored.
func (h *Hooks) PostResponse(in *sdk.In, out *sdk.Out) error {
	ctx, result := gjson.ParseBytes(in.Field(0)), in.Field(1)
	st := ctx.Get("state")
	out.FieldString(abi.ActionContinue)
	out.Field(nil)
	key := st.Get("key").Str
	if key == "" {
		return nil // not looked up, or no_store: nothing to say twice
	}
	note := func(stored bool, why string) {
		out.FieldString(`{"type":"cache","summary":` + sdk.Quote(why) + `,"data":{"stored":` + strconv.FormatBool(stored) + `}}`)
	}
	if why := Storable(result); why != "" {
		note(false, "not stored: "+why)
		return nil
	}
	// What is stored is the answer without what belongs to this
	// request alone: its service_metadata (a hit gets its own) and the
	// provider that served it (no provider serves a hit).
	res := bytes.Clone(result)
	res, _ = sjson.DeleteBytes(res, "service_metadata")
	res, _ = sjson.DeleteBytes(res, "provider")
	v := encodeEntry(entry{Created: h.Env.Now().Unix(), Gen: gjson.GetBytes(result, "id").Str, Result: res})
	if max := int(st.Get("max").Int()); max > 0 && len(v) > max {
		note(false, "not stored: "+strconv.Itoa(len(v))+" bytes, over the entry bound of "+strconv.Itoa(max))
		return nil
	}
	evicted, err := h.Env.KVPut(key, v, int(st.Get("ttl").Int()))
	if err != nil {
		if errors.Is(err, ErrFull) {
			note(false, "not stored: larger than the account's whole cache")
			return nil
		}
		note(false, "not stored: "+err.Error())
		return nil
	}
	vecNote := ""
	if sem := st.Get("semantic"); sem.IsObject() {
		vecNote = h.storeVector(sem, int(st.Get("ttl").Int()))
	}
	out.FieldString(`{"type":"cache","summary":` + sdk.Quote("stored"+vecNote) + `,"data":{"stored":true,"bytes":` + strconv.Itoa(len(v)) + `,"evicted":` + strconv.Itoa(evicted) + `}}`)
	return nil
}
