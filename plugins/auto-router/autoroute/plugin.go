// Package autoroute is the auto-router module's logic (spec 2.3,
// auto-router): classify the conversation into a task family, rank the
// allowed models by their quality for it against their price at the
// request's cost/quality trade-off, and route to the best with the next
// ones as fallbacks. Plain Go, so it is tested and evaluated natively; the
// module's main package wires it to the host.
package autoroute

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/plugins/internal/routing"
	"github.com/switchyard/switchyard/sdk"
	"github.com/tidwall/gjson"
)

// DefaultTradeoff is cost_quality_tradeoff when the request omits it.
const DefaultTradeoff = 7

// Fallbacks is how many next-best models follow the choice in models.
const Fallbacks = 2

// stickyTTL is how long a session keeps its models (seconds).
const stickyTTL = 30 * 60

// Host is what the module reaches through the host: a chat sub-request
// (the optional classifier model) and the key-value store (stickiness).
type Host struct {
	Chat func(body []byte) (status int, resp []byte, err error)
	KV   routing.KV
}

// Settings are the operator's (module_settings.auto-router).
type Settings struct {
	// AllowedModels replace the default allowed list (the catalog's
	// models that have scores).
	AllowedModels []string `json:"allowed_models"`
	// Classifier, when its model is set, asks that model for the task
	// family; the local classifier answers when it fails.
	Classifier struct {
		Model string `json:"model"`
	} `json:"classifier"`
}

// Decision is what the router decided, shown in its stage.
type Decision struct {
	Family     string   `json:"task_family"`
	Classifier string   `json:"classifier"`
	Features   Features `json:"features"`
	Tradeoff   int      `json:"cost_quality_tradeoff"`
	Candidates []Ranked `json:"candidates"`
	Chosen     string   `json:"chosen"`
	Fallbacks  []string `json:"fallbacks"`
	Sticky     bool     `json:"sticky"`
	Note       string   `json:"note,omitempty"`
}

// PreRequest routes the request: in ctx and the request body; out the
// action, the edited body and the stage.
func PreRequest(h Host, in *sdk.In, out *sdk.Out) error {
	ctx, body := in.Field(0), in.Field(1)
	edited, d, blocked := Route(h, ctx, body)
	if blocked != nil {
		out.FieldString(abi.ActionBlock)
		out.Field(blocked)
		out.Field(routing.Stage("auto", "auto-router: no model to route to", map[string]any{"task_family": d.Family}))
		return nil
	}
	summary := "auto: " + d.Family + " → " + d.Chosen + " (trade-off " + strconv.Itoa(d.Tradeoff) + ", " + strconv.Itoa(len(d.Candidates)) + " candidates"
	if d.Sticky {
		summary += ", sticky session"
	}
	summary += ")"
	out.FieldString(abi.ActionContinue)
	out.Field(edited)
	out.Field(routing.Stage("auto", summary, d))
	return nil
}

// Route decides: the edited request and the decision, or the body of a
// block (404 when no allowed model remains).
func Route(h Host, ctx, body []byte) ([]byte, Decision, []byte) {
	var st Settings
	if s := gjson.GetBytes(ctx, "settings"); s.IsObject() {
		_ = json.Unmarshal([]byte(s.Raw), &st)
	}
	cfg := gjson.GetBytes(ctx, "config")
	d := Decision{Tradeoff: DefaultTradeoff, Classifier: "local"}
	if t := cfg.Get("cost_quality_tradeoff"); t.Exists() {
		d.Tradeoff = min(max(int(t.Int()), 0), 10)
	}
	var patterns []string
	cfg.Get("allowed_models").ForEach(func(_, p gjson.Result) bool {
		patterns = append(patterns, p.Str)
		return true
	})
	if len(patterns) == 0 {
		patterns = st.AllowedModels
	}
	cands, err := routing.Candidates(ctx)
	if err != nil {
		return nil, d, blockBody(502, "auto-router: the host's candidate models are not readable: "+err.Error(), nil)
	}
	d.Family, d.Features = Classify(body)
	if st.Classifier.Model != "" && h.Chat != nil && !d.Features.Images && !d.Features.Tools {
		if fam, ok := askClassifier(h, st.Classifier.Model, body); ok {
			d.Family, d.Classifier = fam, "model:"+st.Classifier.Model
		} else {
			d.Note = "the classifier model did not answer with a family; the local classifier decided"
		}
	}
	defaults := routing.DefaultList(cands, "overall") // the models the catalog scores
	allowed := func(c *routing.Candidate) bool {
		if len(patterns) > 0 && !routing.MatchAny(patterns, c.ID) {
			return false
		}
		if len(patterns) == 0 && !defaults[c.ID] {
			return false
		}
		return !d.Features.Images || c.Accepts("image")
	}
	var eligible []routing.Candidate
	for i := range cands {
		if allowed(&cands[i]) {
			eligible = append(eligible, cands[i])
		}
	}
	key := stickyKey(routing.SessionID(ctx, body), patterns, d.Tradeoff)
	if s, ok := h.KV.Load(key); ok && s.Available(cands, allowed) {
		d.Sticky, d.Family = true, s.Family
		d.Chosen, d.Fallbacks = s.Models[0], s.Models[1:]
		d.Candidates = Rank(eligible, d.Family, d.Tradeoff)
		b, err := routing.SetModels(body, s.Models)
		if err != nil {
			return nil, d, blockBody(400, "auto-router: "+err.Error(), nil)
		}
		return b, d, nil
	}
	d.Candidates = Rank(eligible, d.Family, d.Tradeoff)
	if len(d.Candidates) == 0 {
		msg := "auto-router: no allowed model can serve this request"
		switch {
		case len(patterns) > 0:
			msg += ": allowed_models " + strings.Join(patterns, ", ") + " match no model with quality scores that the request's provider preferences leave (GET /api/v1/models lists the models)"
		case d.Features.Images:
			msg += ": it has images and no scored model that takes images is available"
		default:
			msg += ": the catalog has no model with quality scores that the request's provider preferences leave"
		}
		return nil, d, blockBody(404, msg, map[string]any{"allowed_models": patterns, "task_family": d.Family})
	}
	ids := []string{}
	for i := 0; i < len(d.Candidates) && i <= Fallbacks; i++ {
		ids = append(ids, d.Candidates[i].Model)
	}
	d.Chosen, d.Fallbacks = ids[0], ids[1:]
	b, err := routing.SetModels(body, ids)
	if err != nil {
		return nil, d, blockBody(400, "auto-router: "+err.Error(), nil)
	}
	_ = h.KV.Save(key, routing.Sticky{Models: ids, Family: d.Family}, stickyTTL)
	return b, d, nil
}

// stickyKey is the session's key, or "" without a session. The options
// are part of it: a session that changes its trade-off or allowed models
// is routed anew.
func stickyKey(session string, patterns []string, t int) string {
	if session == "" {
		return ""
	}
	h := sha256.Sum256([]byte(session + "\x00" + strings.Join(patterns, "\x00") + "\x00" + strconv.Itoa(t)))
	return "auto:" + hex.EncodeToString(h[:12])
}

// askClassifier asks the operator's classifier model for the family of the
// last user message; ok is false when it did not answer with one.
func askClassifier(h Host, model string, body []byte) (string, bool) {
	last, _, _ := Text(body)
	if len(last) > 4000 {
		last = last[:4000]
	}
	req, _ := json.Marshal(map[string]any{
		"model":      model,
		"max_tokens": 5,
		"messages": []map[string]string{
			{"role": "system", "content": "Classify the user's message into one task family. Answer with exactly one word from: " + strings.Join(Families[:len(Families)-1], ", ") + ", general."},
			{"role": "user", "content": last},
		},
	})
	status, resp, err := h.Chat(req)
	if err != nil || status != 200 {
		return "", false
	}
	ans := strings.ToLower(strings.TrimSpace(gjson.GetBytes(resp, "choices.0.message.content").Str))
	ans = strings.Trim(ans, " .\"'`\n")
	for _, f := range Families {
		if ans == f || ans == strings.ReplaceAll(f, "_", " ") {
			return f, true
		}
	}
	return "", false
}

func blockBody(code int, msg string, md map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{"code": code, "message": msg, "metadata": md})
	return b
}
