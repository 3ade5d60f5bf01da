package cache

import (
	"errors"
	"testing"
	"time"

	"github.com/switchyard/switchyard/sdk"
	"github.com/tidwall/gjson"
)

func TestKeyIgnoresOrderWhitespaceAndDelivery(t *testing.T) {
	base := `{"model":"openai/gpt-4o","messages":[{"role":"user","content":"hi"}],"temperature":0,"response_format":{"type":"json_object"}}`
	same := []string{
		`{"temperature":0,"response_format":{"type":"json_object"},"model":"openai/gpt-4o","messages":[{"content":"hi","role":"user"}]}`,
		"{ \"model\" : \"openai/gpt-4o\",\n \"messages\": [ {\"role\": \"user\", \"content\": \"hi\"} ],\t\"temperature\": 0.0, \"response_format\": {\"type\": \"json_object\"} }",
		`{"model":"openai/gpt-4o","messages":[{"role":"user","content":"h\u0069"}],"temperature":0,"response_format":{"type":"json_object"},"stream":true,"user":"u1","plugins":[{"id":"response-cache","ttl":5}]}`,
	}
	differ := []string{
		`{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"hi"}],"temperature":0,"response_format":{"type":"json_object"}}`,
		`{"model":"openai/gpt-4o","messages":[{"role":"user","content":"hi!"}],"temperature":0,"response_format":{"type":"json_object"}}`,
		`{"model":"openai/gpt-4o","messages":[{"role":"user","content":"hi"}],"temperature":0}`,
		`{"model":"openai/gpt-4o","messages":[{"role":"user","content":"hi"}],"temperature":0,"response_format":{"type":"json_object"},"seed":1}`,
		`{"model":"openai/gpt-4o","messages":[{"role":"user","content":"hi"}],"temperature":0,"response_format":{"type":"json_object"},"max_tokens":5}`,
		`{"model":"openai/gpt-4o","messages":[{"role":"user","content":"hi"}],"temperature":0,"response_format":{"type":"json_object"},"tools":[{"type":"function","function":{"name":"f"}}]}`,
		`{"model":"openai/gpt-4o","messages":[{"role":"user","content":"hi"}],"temperature":0,"response_format":{"type":"json_object"},"provider":{"order":["openai"]}}`,
		`{"model":"openai/gpt-4o","messages":[{"role":"system","content":"hi"}],"temperature":0,"response_format":{"type":"json_object"}}`,
	}
	want := Key([]byte(base))
	for _, s := range same {
		if got := Key([]byte(s)); got != want {
			t.Errorf("%s\n canonical %s\n differs from %s", s, Canonical([]byte(s)), Canonical([]byte(base)))
		}
	}
	for _, s := range differ {
		if Key([]byte(s)) == want {
			t.Errorf("%s has the key of %s", s, base)
		}
	}
}

func TestSampled(t *testing.T) {
	for body, want := range map[string]bool{
		`{}`:                            true, // the provider's default temperature
		`{"temperature":null}`:          true,
		`{"temperature":0.7}`:           true,
		`{"temperature":0}`:             false,
		`{"temperature":0.7,"seed":42}`: false,
		`{"seed":42}`:                   false,
	} {
		if got := Sampled([]byte(body)); got != want {
			t.Errorf("Sampled(%s) = %v", body, got)
		}
	}
}

func TestStorable(t *testing.T) {
	for result, ok := range map[string]bool{
		`{"choices":[{"finish_reason":"stop","message":{"content":"a"}}]}`:          true,
		`{"choices":[{"finish_reason":"tool_calls","message":{"tool_calls":[]}}]}`:  true,
		`{"choices":[{"finish_reason":"length","message":{"content":"a"}}]}`:        false,
		`{"choices":[{"finish_reason":"content_filter","message":{"content":""}}]}`: false,
		`{"choices":[{"finish_reason":"stop"},{"finish_reason":"length"}]}`:         false,
		`{"choices":[]}`: false,
		`{"choices":[{"finish_reason":"error"}]}`:                                                  false,
		`{"error":{"message":"x"},"choices":[{"finish_reason":"stop","message":{"content":"a"}}]}`: false,
	} {
		if got := Storable([]byte(result)) == ""; got != ok {
			t.Errorf("Storable(%s): %q", result, Storable([]byte(result)))
		}
	}
}

// memKV is the kv host function over a map, with TTLs on a fake clock and
// a quota of entries.
type memKV struct {
	now  time.Time
	data map[string][]byte
	exp  map[string]time.Time
	max  int
}

func newKV() *memKV {
	return &memKV{now: time.Unix(1_800_000_000, 0), data: map[string][]byte{}, exp: map[string]time.Time{}, max: 100}
}

func (m *memKV) env() Env {
	return Env{
		KVGet: func(k string) ([]byte, bool, error) {
			v, ok := m.data[k]
			if !ok || !m.now.Before(m.exp[k]) {
				return nil, false, nil
			}
			return v, true, nil
		},
		KVPut: func(k string, v []byte, ttl int) (int, error) {
			if _, ok := m.data[k]; !ok && len(m.data) >= m.max {
				return 0, ErrFull // the whole quota is smaller than the entry
			}
			m.data[k], m.exp[k] = append([]byte(nil), v...), m.now.Add(time.Duration(ttl)*time.Second)
			return 0, nil
		},
		Now: func() time.Time { return m.now },
	}
}

const answer = `{"id":"gen-1","object":"chat.completion","model":"openai/gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"Paris"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`

// round runs pre_request and, on a miss, post_response with result.
func round(t *testing.T, h *Hooks, ctx, body, result string) (action string, out, summary gjson.Result) {
	t.Helper()
	pre, err := sdk.Run(h.PreRequest, []byte(ctx), []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	action, summary = string(pre[0]), gjson.ParseBytes(pre[2])
	if action == "respond" {
		return action, gjson.ParseBytes(pre[1]), summary
	}
	state := ""
	if len(pre) > 3 {
		state = string(pre[3])
	}
	pctx := ctx
	if state != "" {
		pctx = ctx[:len(ctx)-1] + `,"state":` + state + `}`
	}
	post, err := sdk.Run(h.PostResponse, []byte(pctx), []byte(result))
	if err != nil {
		t.Fatal(err)
	}
	if len(post) > 2 {
		summary = gjson.ParseBytes(post[2])
	}
	return action, gjson.Result{}, summary
}

func TestHooks(t *testing.T) {
	const q = `{"model":"openai/gpt-4o","messages":[{"role":"user","content":"Capital of France?"}],"temperature":0}`
	const qSpaced = `{ "temperature": 0, "messages": [ { "content": "Capital of France?", "role": "user" } ], "model": "openai/gpt-4o" }`
	ctx := func(cfg string) string {
		return `{"config":{"id":"response-cache"` + cfg + `},"model":"openai/gpt-4o","scope":"global","key":"k1"}`
	}
	t.Run("miss stores, hit answers", func(t *testing.T) {
		kv := newKV()
		h := &Hooks{Env: kv.env()}
		a, _, s := round(t, h, ctx(``), q, answer)
		if a != "continue" || !s.Get("data.stored").Bool() {
			t.Fatalf("first: %s %s", a, s.Raw)
		}
		kv.now = kv.now.Add(90 * time.Second)
		a, res, s := round(t, h, ctx(``), qSpaced, answer)
		if a != "respond" {
			t.Fatalf("second: %s %s", a, s.Raw)
		}
		if res.Get("choices.0.message.content").Str != "Paris" || res.Get("usage.prompt_tokens").Int() != 12 || res.Get("usage.cost").Raw != "0" {
			t.Errorf("hit result %s", res.Raw)
		}
		d := s.Get("data")
		if d.Get("status").Str != "hit" || d.Get("age_seconds").Int() != 90 || d.Get("original_generation").Str != "gen-1" || d.Get("similarity").Float() != 1 {
			t.Errorf("hit summary %s", s.Raw)
		}
		// Past the TTL (default 3600 s) it is a miss again.
		kv.now = kv.now.Add(time.Hour)
		if a, _, _ := round(t, h, ctx(``), q, answer); a != "continue" {
			t.Errorf("after the TTL: %s", a)
		}
	})
	cases := []struct {
		name, cfg, body, result string
		storedKeys              int
	}{
		{"sampled without option", ``, `{"model":"m","messages":[]}`, answer, 0},
		{"sampled with option", `,"cache_sampled":true`, `{"model":"m","messages":[]}`, answer, 1},
		{"seeded", ``, `{"model":"m","messages":[],"temperature":1,"seed":3}`, answer, 1},
		{"no_store", `,"no_store":true`, q, answer, 0},
		{"bypass", `,"bypass":true`, q, answer, 0},
		{"cut answer", ``, q, `{"id":"g","choices":[{"message":{"content":"Par"},"finish_reason":"length"}]}`, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			kv := newKV()
			h := &Hooks{Env: kv.env()}
			round(t, h, ctx(c.cfg), c.body, c.result)
			if len(kv.data) != c.storedKeys {
				t.Errorf("stored %d entries, want %d", len(kv.data), c.storedKeys)
			}
		})
	}
	t.Run("scope key keeps keys apart", func(t *testing.T) {
		kv := newKV()
		h := &Hooks{Env: kv.env()}
		k1 := ctx(`,"scope":"key"`)
		k2 := `{"config":{"id":"response-cache","scope":"key"},"model":"m","scope":"global","key":"k2"}`
		round(t, h, k1, q, answer)
		if a, _, _ := round(t, h, k2, q, answer); a != "continue" {
			t.Errorf("key k2 got key k1's answer")
		}
		if a, _, _ := round(t, h, k1, q, answer); a != "respond" {
			t.Errorf("key k1 missed its own answer")
		}
		// Scope account does not see per-key entries either.
		if a, _, _ := round(t, h, ctx(``), q, answer); a != "continue" {
			t.Errorf("scope account read a key-scoped entry")
		}
	})
	t.Run("entry bound", func(t *testing.T) {
		kv := newKV()
		h := &Hooks{Env: kv.env()}
		c := `{"config":{"id":"response-cache"},"model":"m","scope":"global","settings":{"max_entry_bytes":100}}`
		_, _, s := round(t, h, c, q, answer)
		if len(kv.data) != 0 || s.Get("data.stored").Bool() {
			t.Errorf("stored over the bound: %s", s.Raw)
		}
	})
	t.Run("full store", func(t *testing.T) {
		kv := newKV()
		kv.max = 0
		h := &Hooks{Env: kv.env()}
		if _, _, s := round(t, h, ctx(``), q, answer); s.Get("summary").Str != "not stored: larger than the account's whole cache" {
			t.Errorf("summary %s", s.Raw)
		}
	})
	t.Run("default-on by model", func(t *testing.T) {
		kv := newKV()
		h := &Hooks{Env: kv.env()}
		def := func(model string) string {
			return `{"config":{"id":"response-cache"},"model":"` + model + `","scope":"global","default":true,"settings":{"models":["openai/*","test/chat"]}}`
		}
		for model, runs := range map[string]bool{"openai/gpt-4o": true, "test/chat": true, "anthropic/claude": false, "test/chat-2": false} {
			_, _, s := round(t, h, def(model), q, answer)
			if got := s.Get("type").Str == "cache"; got != runs {
				t.Errorf("%s: %s", model, s.Raw)
			}
		}
		// Named in the request, it runs whatever the list says.
		named := `{"config":{"id":"response-cache"},"model":"anthropic/claude","scope":"global","settings":{"models":["openai/*"]}}`
		if _, _, s := round(t, h, named, q, answer); s.Get("type").Str != "cache" {
			t.Errorf("named: %s", s.Raw)
		}
	})
	t.Run("kv failure is a miss", func(t *testing.T) {
		e := newKV().env()
		e.KVGet = func(string) ([]byte, bool, error) { return nil, false, errors.New("down") }
		h := &Hooks{Env: e}
		if a, _, _ := round(t, h, ctx(``), q, answer); a != "continue" {
			t.Errorf("action %s", a)
		}
	})
}

// LastUserTurn takes the text of the last message when it is the user's;
// the rest of the key differs with anything else in the request, never
// with that text.
func TestLastUserTurn(t *testing.T) {
	req := func(system, last string) string {
		return `{"model":"m","temperature":0,"messages":[{"role":"system","content":` + system + `},` + last + `]}`
	}
	cases := []struct {
		name, body, text string
		ok               bool
	}{
		{"string", req(`"s"`, `{"role":"user","content":"What is X?"}`), "What is X?", true},
		{"text parts", req(`"s"`, `{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}`), "a\nb", true},
		{"an image", req(`"s"`, `{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"data:,"}}]}`), "", false},
		{"last is a tool result", req(`"s"`, `{"role":"tool","tool_call_id":"c","content":"42"}`), "", false},
		{"empty", req(`"s"`, `{"role":"user","content":"  "}`), "", false},
	}
	for _, c := range cases {
		text, _, ok := LastUserTurn([]byte(c.body))
		if text != c.text || ok != c.ok {
			t.Errorf("%s: %q %v, want %q %v", c.name, text, ok, c.text, c.ok)
		}
	}
	_, r1, _ := LastUserTurn([]byte(req(`"s"`, `{"role":"user","content":"What is X?"}`)))
	_, r2, _ := LastUserTurn([]byte(req(`"s"`, `{"role":"user","content":"Tell me X"}`)))
	_, r3, _ := LastUserTurn([]byte(req(`"other"`, `{"role":"user","content":"What is X?"}`)))
	if r1 != r2 || r1 == r3 {
		t.Errorf("rest of the key: same text-only change %v, other system prompt %v", r1 == r2, r1 != r3)
	}
}
