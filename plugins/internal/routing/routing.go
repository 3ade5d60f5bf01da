// Package routing is what the router modules (auto-router, pareto-router)
// share: the candidate models the host hands them (ctx.context.models:
// scores with sources, modalities, prices), model-id patterns, score
// percentiles, the request edit that puts a choice into model and models,
// and stickiness per session through the host's key-value store. It is
// plain Go, so the modules' logic is tested natively.
package routing

import (
	"encoding/json"
	"errors"
	"path"
	"sort"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// Score is one quality figure of a model with its source (the catalog's).
type Score struct {
	Value  float64 `json:"value"`
	Source string  `json:"source"`
	Date   string  `json:"date"`
}

// Price is in USD per million tokens; WeightedAvg is the traffic-weighted
// effective input price, nil without traffic data.
type Price struct {
	Prompt      float64  `json:"prompt"`
	Completion  float64  `json:"completion"`
	WeightedAvg *float64 `json:"weighted_avg"`
}

// Candidate is a model the request may be routed to (route.Candidate on
// the host side).
type Candidate struct {
	ID              string           `json:"id"`
	ContextLength   int              `json:"context_length"`
	InputModalities []string         `json:"input_modalities"`
	Scores          map[string]Score `json:"scores"`
	Price           Price            `json:"price"`
	// Demo: only the offline demo provider serves it.
	Demo bool `json:"demo"`
}

// Candidates reads ctx.context.models. By hand with gjson: encoding/json's
// reflection was half of a routing decision's time in the Wasm guest.
func Candidates(ctx []byte) ([]Candidate, error) {
	raw := gjson.GetBytes(ctx, "context.models")
	if !raw.IsArray() {
		return nil, nil
	}
	var out []Candidate
	var bad error
	raw.ForEach(func(_, m gjson.Result) bool {
		if !m.IsObject() || m.Get("id").Type != gjson.String {
			bad = errors.New("a candidate is not an object with a string id: " + m.Raw)
			return false
		}
		c := Candidate{ID: m.Get("id").Str, ContextLength: int(m.Get("context_length").Int()), Demo: m.Get("demo").Bool(), Scores: map[string]Score{}}
		m.Get("input_modalities").ForEach(func(_, x gjson.Result) bool {
			c.InputModalities = append(c.InputModalities, x.Str)
			return true
		})
		m.Get("scores").ForEach(func(k, v gjson.Result) bool {
			c.Scores[k.Str] = Score{Value: v.Get("value").Float(), Source: v.Get("source").Str, Date: v.Get("date").Str}
			return true
		})
		p := m.Get("price")
		c.Price = Price{Prompt: p.Get("prompt").Float(), Completion: p.Get("completion").Float()}
		if w := p.Get("weighted_avg"); w.Type == gjson.Number {
			x := w.Float()
			c.Price.WeightedAvg = &x
		}
		out = append(out, c)
		return true
	})
	return out, bad
}

// Accepts reports whether the model takes input modality m ("image").
func (c *Candidate) Accepts(m string) bool {
	for _, x := range c.InputModalities {
		if x == m {
			return true
		}
	}
	return false
}

// Quality is the model's score for family, or its overall score when it
// has none for that family; ok is false when it has neither.
func (c *Candidate) Quality(family string) (s Score, fam string, ok bool) {
	if s, ok := c.Scores[family]; ok && family != "" {
		return s, family, true
	}
	s, ok = c.Scores["overall"]
	return s, "overall", ok
}

// Blended is the price of a typical call: three input tokens to one output
// token, the mix public price comparisons use.
func (p Price) Blended() float64 { return (3*p.Prompt + p.Completion) / 4 }

// Match reports whether id matches pattern: an exact id, or a glob where *
// matches within one part (anthropic/*, */claude-*, openai/gpt-4o*).
func Match(pattern, id string) bool {
	if !strings.Contains(pattern, "*") && !strings.Contains(pattern, "?") && !strings.Contains(pattern, "[") {
		return pattern == id
	}
	ok, err := path.Match(pattern, id)
	return err == nil && ok
}

// MatchAny reports whether id matches one of patterns.
func MatchAny(patterns []string, id string) bool {
	for _, p := range patterns {
		if Match(p, id) {
			return true
		}
	}
	return false
}

// Percentiles maps each id to the share of the other models whose value is
// strictly lower (0 for the lowest, 1 for the highest; 1 when alone).
func Percentiles(values map[string]float64) map[string]float64 {
	out := make(map[string]float64, len(values))
	n := len(values)
	for id, v := range values {
		if n == 1 {
			out[id] = 1
			continue
		}
		lower := 0
		for _, w := range values {
			if w < v {
				lower++
			}
		}
		out[id] = float64(lower) / float64(n-1)
	}
	return out
}

// SetModels writes the choice into the request: model is the first, models
// all of them (the fallbacks after it), so the dispatcher tries them in
// order.
func SetModels(body []byte, ids []string) ([]byte, error) {
	b, err := sjson.SetBytes(body, "model", ids[0])
	if err != nil {
		return nil, err
	}
	return sjson.SetBytes(b, "models", ids)
}

// KV is the host's key-value store (sdk.KVGet, sdk.KVPut in the module).
type KV struct {
	Get func(key string) ([]byte, bool, error)
	Put func(key string, val []byte, ttlSeconds int) error
}

// Sticky is a session's earlier choice.
type Sticky struct {
	Models []string `json:"models"`
	Family string   `json:"family,omitempty"`
}

// Load returns the session's choice under key, if any (a store that fails
// is no choice: routing goes on without it).
func (kv KV) Load(key string) (*Sticky, bool) {
	if kv.Get == nil || key == "" {
		return nil, false
	}
	b, ok, err := kv.Get(key)
	if err != nil || !ok {
		return nil, false
	}
	var s Sticky
	if json.Unmarshal(b, &s) != nil || len(s.Models) == 0 {
		return nil, false
	}
	return &s, true
}

// Save keeps the session's choice for ttl seconds.
func (kv KV) Save(key string, s Sticky, ttl int) error {
	if kv.Put == nil || key == "" {
		return nil
	}
	b, _ := json.Marshal(s)
	return kv.Put(key, b, ttl)
}

// Available reports whether every id of s is among the candidates (a
// sticky choice whose model was dropped from the catalog, or that the
// request's preferences now exclude, is not reused).
func (s *Sticky) Available(cands []Candidate, allowed func(*Candidate) bool) bool {
	for _, id := range s.Models {
		found := false
		for i := range cands {
			if cands[i].ID == id && allowed(&cands[i]) {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// Stage is the router's service_metadata.pipeline entry: type "router",
// the strategy the host shows in service_metadata.strategy, a one-line
// summary and the decision's data.
func Stage(strategy, summary string, data any) []byte {
	b, _ := json.Marshal(map[string]any{"type": "router", "strategy": strategy, "summary": summary, "data": data})
	return b
}

// IDs returns the ids of cands, sorted.
func IDs(cands []Candidate) []string {
	out := make([]string, len(cands))
	for i := range cands {
		out[i] = cands[i].ID
	}
	sort.Strings(out)
	return out
}

// DefaultList is a router's default allowed list: the models with a score
// for family (use "overall" for any), the demo provider's only when no
// real model has one — a gateway with real providers configured does not
// route to canned answers unless a request allows them by name.
func DefaultList(cands []Candidate, family string) map[string]bool {
	out := map[string]bool{}
	real := false
	for _, c := range cands {
		if _, ok := c.Scores[family]; ok && !c.Demo {
			real = true
		}
	}
	for _, c := range cands {
		if _, ok := c.Scores[family]; ok && (!real || !c.Demo) {
			out[c.ID] = true
		}
	}
	return out
}

// SessionID is the request's session: ctx.context.session_id (the host
// puts the body's session_id or the X-Session-Id header there), else the
// body's session_id.
func SessionID(ctx, body []byte) string {
	if s := gjson.GetBytes(ctx, "context.session_id").Str; s != "" {
		return s
	}
	return gjson.GetBytes(body, "session_id").Str
}
