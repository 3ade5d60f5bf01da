// Package moderate is the moderation plugin's logic, kept out of the
// module's main package so it builds and is tested natively: the engines
// (local, openai, llama-guard), the policy that turns what they find into
// an action (block, redact, flag), and the pre_request hook that applies it.
//
// The operator chooses engines and policy; a request cannot (spec 2.3:
// moderation has no options). The host passes the operator's settings for
// the caller's account, or for the provider that requires moderation, in
// the hook's ctx under "settings" (docs/plugins.md, "moderation").
package moderate

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/sdk"
	"github.com/tidwall/gjson"
)

// Actions of a policy, strongest first (block > redact > flag).
const (
	ActBlock  = "block"
	ActRedact = "redact"
	ActFlag   = "flag"
)

// Engine names.
const (
	EngineLocal      = "local"
	EngineOpenAI     = "openai"
	EngineLlamaGuard = "llama-guard"
)

// Host is what the module reaches through the host: outbound HTTP (the
// openai engine) and a chat sub-request (the llama-guard engine). Nil
// functions are engines this build cannot run.
type Host struct {
	HTTP func(method, url, headers string, body []byte) (status int, resp []byte, err error)
	Chat func(body []byte) (status int, resp []byte, err error)
}

// Settings are the operator's (ctx "settings"); zero values mean defaults.
type Settings struct {
	Engines []string          `json:"engines"`
	Policy  map[string]string `json:"policy"`
	// Scan is "all_messages" (default) or "user_only".
	Scan string `json:"scan"`
	// OnError is "fail" (default: an engine that cannot answer fails the
	// request with 502, so a required check is never skipped) or "allow"
	// (go on and record the error on the stage).
	OnError    string             `json:"on_error"`
	OpenAI     OpenAISettings     `json:"openai"`
	LlamaGuard LlamaGuardSettings `json:"llama_guard"`
}

// defaultAction is the policy for a category the operator did not name:
// personal data is redacted, everything else (prompt injection, what the
// classifiers flag) blocked.
func (s *Settings) action(cat string) string {
	if a, ok := s.Policy[cat]; ok {
		return a
	}
	switch cat {
	case CatEmail, CatPhone, CatCard, CatSSN, CatIP, CatIBAN, CatPassport, CatAddress, CatSecret:
		if a, ok := s.Policy["pii"]; ok {
			return a
		}
		return ActRedact
	}
	if a, ok := s.Policy["default"]; ok {
		return a
	}
	return ActBlock
}

// text is one piece of message text the engines look at.
type text struct {
	path string // sjson path of the string in the request
	role string
	s    string
	// at and raw locate the JSON string in the request body, so redaction
	// splices the body once instead of rewriting it per text.
	at  int
	raw int
}

// hit is a finding of one engine in one text.
type hit struct {
	Finding
	engine string
	text   int
	action string
}

// PreRequest is the pre_request hook: in ctx, request body; out action,
// body, summary.
func PreRequest(h Host, in *sdk.In, out *sdk.Out) error {
	ctx, body := in.Field(0), in.Field(1)
	var st Settings
	if s := gjson.GetBytes(ctx, "settings"); s.IsObject() {
		if err := json.Unmarshal([]byte(s.Raw), &st); err != nil {
			return sdk.Error("moderation: the operator's settings are invalid: " + err.Error())
		}
	}
	if len(st.Engines) == 0 {
		st.Engines = []string{EngineLocal}
	}
	model := gjson.GetBytes(ctx, "model").Str
	var requiredBy []string
	gjson.GetBytes(ctx, "required_by").ForEach(func(_, v gjson.Result) bool {
		requiredBy = append(requiredBy, v.Str)
		return true
	})
	scope := "request"
	switch {
	case len(requiredBy) > 0:
		scope = "provider"
	case gjson.GetBytes(ctx, "default").Bool():
		scope = gjson.GetBytes(ctx, "scope").Str // account or global
	}

	texts := collect(body, st.Scan == "user_only")
	var hits []hit
	var errs []string
	for _, eng := range st.Engines {
		var fs [][]Finding
		var err error
		switch eng {
		case EngineLocal:
			fs = make([][]Finding, len(texts))
			for i, t := range texts {
				fs[i] = Local(t.s)
			}
		case EngineOpenAI:
			fs, err = runOpenAI(h, &st.OpenAI, texts)
		case EngineLlamaGuard:
			fs, err = runLlamaGuard(h, &st.LlamaGuard, texts)
		default:
			err = sdk.Error("unknown engine " + strconv.Quote(eng) + " (local, openai, llama-guard)")
		}
		if err != nil {
			if st.OnError != "allow" {
				return sdk.Error("moderation engine " + eng + " failed: " + err.Error())
			}
			errs = append(errs, eng+": "+err.Error())
			continue
		}
		for i, f := range fs {
			for _, x := range f {
				hits = append(hits, hit{Finding: x, engine: eng, text: i, action: st.action(x.Category)})
			}
		}
	}

	action := ""
	for _, x := range hits {
		if rank(x.action) > rank(action) {
			action = x.action
		}
	}
	d := describe(hits, st.Engines, errs)
	switch action {
	case ActBlock:
		out.FieldString(abi.ActionBlock)
		out.Field(blockBody(hits, texts, model, requiredBy, d))
		out.Field(summary(scope, "blocked", d))
	case ActRedact:
		edited, err := redact(body, texts, hits)
		if err != nil {
			return sdk.Error("moderation: redacting: " + err.Error())
		}
		out.FieldString(abi.ActionContinue)
		out.Field(edited)
		out.Field(summary(scope, "redacted", d))
	default:
		out.FieldString(abi.ActionContinue)
		out.Field(nil)
		verdict := "allowed"
		if action == ActFlag {
			verdict = "flagged"
		}
		out.Field(summary(scope, verdict, d))
	}
	return nil
}

func rank(a string) int {
	switch a {
	case ActBlock:
		return 3
	case ActRedact:
		return 2
	case ActFlag:
		return 1
	}
	return 0
}

// collect lists the message texts: string contents and text parts.
func collect(body []byte, userOnly bool) []text {
	var ts []text
	i := -1
	gjson.GetBytes(body, "messages").ForEach(func(_, m gjson.Result) bool {
		i++
		role := m.Get("role").Str
		if userOnly && role != "user" {
			return true
		}
		c := m.Get("content")
		base := "messages." + strconv.Itoa(i) + ".content"
		switch {
		case c.Type == gjson.String:
			ts = append(ts, text{path: base, role: role, s: c.Str, at: c.Index, raw: len(c.Raw)})
		case c.IsArray():
			j := -1
			c.ForEach(func(_, p gjson.Result) bool {
				j++
				if t := p.Get("text"); p.Get("type").Str == "text" && t.Type == gjson.String {
					ts = append(ts, text{path: base + "." + strconv.Itoa(j) + ".text", role: role, s: t.Str, at: t.Index, raw: len(t.Raw)})
				}
				return true
			})
		}
		return true
	})
	return ts
}

// described is what a decision reports: on the stage and in a block.
type described struct {
	categories []string // distinct, in order of finding
	patterns   []string // injection rules and classifier categories
	engines    []string // engines that found something
	ran        []string
	errors     []string
}

func describe(hits []hit, ran, errs []string) described {
	d := described{ran: ran, errors: errs, categories: []string{}, patterns: []string{}, engines: []string{}}
	seen := map[string]bool{}
	for _, x := range hits {
		if !seen["c"+x.Category] {
			seen["c"+x.Category] = true
			d.categories = append(d.categories, x.Category)
		}
		p := x.Pattern
		if p == "" {
			p = x.Category
		}
		if !seen["p"+p] {
			seen["p"+p] = true
			d.patterns = append(d.patterns, p)
		}
		if !seen["e"+x.engine] {
			seen["e"+x.engine] = true
			d.engines = append(d.engines, x.engine)
		}
	}
	return d
}

// summary is the guardrail stage (spec 2.2: guardrail_id, guardrail_scope,
// data {action, detected, engines, patterns}).
func summary(scope, action string, d described) []byte {
	msg := "nothing detected"
	if len(d.categories) > 0 {
		msg = action + ": " + strings.Join(d.categories, ", ")
	}
	data := map[string]any{
		"action": action, "detected": len(d.categories) > 0, "engines": d.ran,
		"patterns": d.patterns, "categories": d.categories,
	}
	if len(d.errors) > 0 {
		data["errors"] = d.errors
	}
	b, _ := json.Marshal(map[string]any{
		"type": "guardrail", "guardrail_id": "moderation", "guardrail_scope": scope,
		"summary": msg, "data": data,
	})
	return b
}

// blockBody is the pipeline's block body: 403 with error.metadata holding
// the reasons, the flagged input (cut to 100 characters, the middle
// elided), the engine, the model and, when a provider required the check,
// the provider.
func blockBody(hits []hit, texts []text, model string, requiredBy []string, d described) []byte {
	var first *hit
	var reasons, labels []string
	seen := map[string]bool{}
	onlyInjection := true
	for i := range hits {
		x := &hits[i]
		if x.action != ActBlock {
			continue
		}
		if first == nil {
			first = x
		}
		if x.Category != CatInjection {
			onlyInjection = false
		}
		if !seen[x.Category] {
			seen[x.Category] = true
			reasons = append(reasons, reason(x))
			labels = append(labels, Label(x.Category))
		}
	}
	msg := "Request blocked by content filter: " + strings.Join(labels, ", ")
	if onlyInjection {
		msg = "Request blocked: the input matches prompt-injection patterns"
	}
	md := map[string]any{
		"reasons":       reasons,
		"flagged_input": Elide(maskSecrets(texts[first.text].s, hits, first.text), 100),
		"engine":        first.engine,
		"model_slug":    model,
	}
	if len(requiredBy) > 0 {
		md["provider_name"] = requiredBy[0]
	}
	if len(d.patterns) > 0 {
		md["patterns"] = d.patterns
	}
	b, _ := json.Marshal(map[string]any{"code": 403, "message": msg, "metadata": md})
	return b
}

func reason(x *hit) string {
	switch {
	case x.Pattern != "" && x.Category == CatInjection:
		return "prompt injection (" + x.Pattern + ")"
	case x.engine == EngineLocal:
		return strings.ReplaceAll(x.Category, "-", " ")
	case x.Pattern != "":
		return x.engine + ": " + x.Pattern
	}
	return x.engine + ": " + x.Category
}

// maskSecrets replaces the secrets found in text ti with their label: a
// block echoes the input back as flagged_input, and a key must never be
// in a response (nor in the logs that keep responses).
func maskSecrets(s string, hits []hit, ti int) string {
	var spans [][2]int
	for _, x := range hits {
		if x.text == ti && x.Category == CatSecret && !x.Spanless() {
			spans = append(spans, [2]int{x.Start, x.End})
		}
	}
	if len(spans) == 0 {
		return s
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i][0] < spans[j][0] })
	var b strings.Builder
	last := 0
	for _, sp := range spans {
		if sp[0] < last {
			continue
		}
		b.WriteString(s[last:sp[0]])
		b.WriteString(Label(CatSecret))
		last = sp[1]
	}
	b.WriteString(s[last:])
	return b.String()
}

// Elide cuts s to at most n characters (runes), eliding the middle with
// "...".
func Elide(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	head := (n - 3) / 2
	tail := n - 3 - head
	return string(r[:head]) + "..." + string(r[len(r)-tail:])
}

// redact replaces what the redact hits cover with their labels; a hit
// without a span (found only after decoding, or by a classifier) replaces
// its whole text. The body is rebuilt in one pass from the texts' offsets.
func redact(body []byte, texts []text, hits []hit) ([]byte, error) {
	by := map[int][]hit{}
	for _, x := range hits {
		if x.action == ActRedact {
			by[x.text] = append(by[x.text], x)
		}
	}
	out := make([]byte, 0, len(body))
	pos := 0
	for i, t := range texts { // in body order
		hs := by[i]
		if len(hs) == 0 {
			continue
		}
		if t.at < pos || t.at+t.raw > len(body) || body[t.at] != '"' {
			return nil, errorf("cannot locate " + t.path + " in the request")
		}
		s := ""
		for _, x := range hs {
			if x.Spanless() {
				s = Label(x.Category)
			}
		}
		if s == "" {
			s = replaceSpans(t.s, hs)
		}
		out = append(out, body[pos:t.at]...)
		out = sdk.AppendJSONString(out, s)
		pos = t.at + t.raw
	}
	out = append(out, body[pos:]...)
	if !gjson.ValidBytes(out) {
		return nil, errorf("the redacted request is not valid JSON")
	}
	return out, nil
}

// replaceSpans replaces non-overlapping spans (the first of overlapping
// ones wins) with labels.
func replaceSpans(s string, hs []hit) string {
	// sort by start; the hits of one text come sorted per engine only
	for i := 1; i < len(hs); i++ {
		for j := i; j > 0 && hs[j].Start < hs[j-1].Start; j-- {
			hs[j], hs[j-1] = hs[j-1], hs[j]
		}
	}
	var b strings.Builder
	pos := 0
	for _, x := range hs {
		if x.Start < pos {
			continue
		}
		b.WriteString(s[pos:x.Start])
		b.WriteString(Label(x.Category))
		pos = x.End
	}
	b.WriteString(s[pos:])
	return b.String()
}
