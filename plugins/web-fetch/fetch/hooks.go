package fetch

import (
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/sdk"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// Module is the web-fetch module's two hooks over one Env.
type Module struct{ Env *Env }

// options reads the plugin's options from a hook's ctx: the plugins[] item
// under "config", overridden by the server tool's "parameters" from the
// request's tools entry.
func options(ctx []byte) Options {
	o := Options{model: sdk.Get(ctx, "model").Str}
	c := sdk.Get(ctx, "config")
	if c.IsObject() {
		_ = json.Unmarshal([]byte(c.Raw), &o)
	}
	if p := sdk.Get(ctx, "parameters"); p.IsObject() {
		var q Options
		if json.Unmarshal([]byte(p.Raw), &q) == nil {
			if q.AllowedDomains != nil {
				o.AllowedDomains = q.AllowedDomains
			}
			if q.BlockedDomains != nil {
				o.BlockedDomains = q.BlockedDomains
			}
			if q.MaxContentTokens > 0 {
				o.MaxContentTokens = q.MaxContentTokens
			}
			if q.MaxUses > 0 {
				o.MaxUses = q.MaxUses
			}
		}
	}
	return o
}

// ToolCall is the tool_call hook of service:web_fetch: in: ctx, tool name,
// arguments {"url": "..."}; out: the Result as JSON, and no cost (fetching
// is free; the model's tokens are billed as usual). Every failure is a
// failed Result the model sees, never a failed hook.
func (m *Module) ToolCall(in *sdk.In, out *sdk.Out) error {
	ctx := in.Field(0)
	args := in.Field(2)
	u := gjson.GetBytes(args, "url")
	var r Result
	switch {
	case !gjson.ValidBytes(args) || u.Type != gjson.String || strings.TrimSpace(u.Str) == "":
		r = failed(u.Str, `the arguments must be {"url": "<an http(s) URL>"}`)
	default:
		o := options(ctx)
		if now, err := time.Parse(time.RFC3339Nano, sdk.Get(ctx, "now").Str); err == nil {
			m.Env.Now = func() time.Time { return now }
		}
		if n, ok, err := m.Env.use(ctx, o.maxUses()); err != nil && o.MaxUses > 0 {
			// An explicit max_uses that cannot be counted is not ignored.
			r = failed(u.Str, "cannot count this request's fetches for max_uses: "+err.Error())
		} else if !ok {
			r = failed(u.Str, "max_uses reached: this request may fetch at most "+strconv.Itoa(n)+" pages")
		} else {
			r = m.Env.Fetch(o, u.Str)
		}
	}
	b, _ := json.Marshal(r.public())
	out.Field(b)
	out.FieldString("")
	return nil
}

// public is the result as the model sees it: the spec's fields only.
func (r Result) public() Result {
	r.HTTPStatus, r.Truncated = 0, false
	if r.Status == StatusFailed {
		r.Title, r.Content, r.RetrievedAt = "", "", ""
	}
	return r
}

func (o Options) maxUses() int {
	if o.MaxUses > 0 {
		return o.MaxUses
	}
	return DefaultMaxUses
}

func requestID(ctx []byte) string {
	if id := sdk.Get(ctx, "request_id").Str; id != "" {
		return id
	}
	return sdk.Get(ctx, "id").Str
}

// use counts one fetch of the request against limit and reports false
// when the limit is spent. The count is ctx.calls (how many times the tool
// already ran in this request) when the host gives it: the host orders a
// turn's parallel calls, which the module cannot. Otherwise the module
// counts in its kv store under ctx.request_id (calls of one request may run
// on different instances) — exact for calls in sequence, but two parallel
// calls may both read the same count (kv has no atomic increment). Without
// either, nothing is counted.
func (env *Env) use(ctx []byte, limit int) (int, bool, error) {
	if c := sdk.Get(ctx, "calls"); c.Exists() {
		return limit, int(c.Int()) < limit, nil
	}
	id := requestID(ctx)
	if id == "" || env.KVGet == nil || env.KVPut == nil {
		return limit, true, errors.New("the host gives neither a call count nor a request id with a kv store")
	}
	key := "uses:" + id
	n := 0
	v, ok, err := env.KVGet(key)
	if err != nil {
		return limit, true, err
	}
	if ok {
		n, _ = strconv.Atoi(string(v))
	}
	if n >= limit {
		return limit, false, nil
	}
	// An hour outlives any request (the gateway's request deadline is far
	// shorter), and the key then expires on its own.
	if err := env.KVPut(key, []byte(strconv.Itoa(n+1)), 3600); err != nil {
		return limit, true, err
	}
	return limit, true, nil
}

var urlRe = regexp.MustCompile(`https?://[^\s<>"'\x60]+`)

// URLs returns the distinct http(s) URLs in text, in order, without the
// punctuation that ends a sentence or closes a bracket around them.
func URLs(text string) []string {
	var out []string
	seen := map[string]bool{}
	for _, u := range urlRe.FindAllString(text, -1) {
		u = strings.TrimRight(u, ".,;:!?")
		for strings.HasSuffix(u, ")") && strings.Count(u, "(") < strings.Count(u, ")") {
			u = strings.TrimSuffix(u, ")")
		}
		u = strings.TrimRight(u, "]}.,;:!?")
		if !seen[u] {
			seen[u] = true
			out = append(out, u)
		}
	}
	return out
}

// InjectLead is the first line of the system message the plugin adds.
const InjectLead = "The user's message links to the web pages below. They were fetched just now by the web-fetch plugin; use their content to answer, and cite the URL of a page you use."

// PreRequest is the web-fetch plugin: it fetches the http(s) URLs in the
// last user message (at most max_uses, default PluginMaxURLs) and inserts
// one system message with their content right before that user message.
// Pages that fail are listed with their error, so the model can say so.
func (m *Module) PreRequest(in *sdk.In, out *sdk.Out) error {
	ctx, body := in.Field(0), in.Field(1)
	o := options(ctx)
	last := -1
	var text string
	gjson.GetBytes(body, "messages").ForEach(func(k, msg gjson.Result) bool {
		if msg.Get("role").Str == "user" {
			last = int(k.Int())
			text = contentText(msg.Get("content"))
		}
		return true
	})
	urls := URLs(text)
	limit := PluginMaxURLs
	if o.MaxUses > 0 {
		limit = o.MaxUses
	}
	skipped := 0
	if len(urls) > limit {
		skipped = len(urls) - limit
		urls = urls[:limit]
	}
	out.FieldString(abi.ActionContinue)
	if len(urls) == 0 {
		out.FieldString("")
		out.FieldString(`{"type":"plugin","summary":"no URL in the last user message","data":{"fetched":0}}`)
		return nil
	}
	var b strings.Builder
	b.WriteString(InjectLead)
	type item struct {
		URL    string `json:"url"`
		Status string `json:"status"`
		Error  string `json:"error,omitempty"`
		HTTP   int    `json:"http_status,omitempty"`
		Chars  int    `json:"chars,omitempty"`
		// Truncated: cut by max_content_tokens, the page-size bounds or
		// the model's context; Fitted: cut (or left out) for the context.
		Truncated bool `json:"truncated,omitempty"`
		Fitted    bool `json:"fitted_to_context,omitempty"`
	}
	pages := make([]Result, len(urls))
	for i, u := range urls {
		pages[i] = m.Env.Fetch(o, u)
	}
	budget, bounded := m.Env.contextBudget(ctx, body, o.model, len(pages))
	fitted := 0
	if bounded {
		fitted = m.Env.fitPages(pages, o.model, budget)
	}
	var items []item
	ok := 0
	for i, u := range urls {
		r := pages[i]
		items = append(items, item{URL: u, Status: r.Status, Error: r.Error, HTTP: r.HTTPStatus, Chars: len(r.Content), Truncated: r.Truncated, Fitted: r.fitted})
		b.WriteString("\n\n<page url=")
		b.WriteString(strconv.Quote(u))
		if r.Status == StatusCompleted {
			ok++
			if r.Title != "" {
				b.WriteString(" title=")
				b.WriteString(strconv.Quote(r.Title))
			}
			b.WriteString(" retrieved_at=\"" + r.RetrievedAt + "\">\n")
			b.WriteString(r.Content)
		} else {
			b.WriteString(" status=\"failed\">\n")
			b.WriteString("Not fetched: " + r.Error)
		}
		b.WriteString("\n</page>")
	}
	if skipped > 0 {
		b.WriteString("\n\n(" + strconv.Itoa(skipped) + " more URL(s) in the message were not fetched: max_uses)")
	}
	msg, _ := json.Marshal(map[string]string{"role": "system", "content": b.String()})
	edited, err := insertMessage(body, last, msg)
	if err != nil {
		return sdk.Error("web-fetch: " + err.Error())
	}
	out.Field(edited)
	d := map[string]any{"fetched": ok, "failed": len(urls) - ok, "skipped": skipped, "pages": items}
	summary := "fetched " + strconv.Itoa(ok) + " of " + strconv.Itoa(len(urls)) + " URL(s) from the last user message"
	if bounded {
		d["context_budget_tokens"] = max(budget, 0)
	}
	if fitted > 0 {
		d["fitted_to_context"] = fitted
		summary += "; " + strconv.Itoa(fitted) + " cut to fit the model's context"
	}
	data, _ := json.Marshal(d)
	sum, _ := json.Marshal(summary)
	out.FieldString(`{"type":"plugin","summary":` + string(sum) + `,"data":` + string(data) + `}`)
	return nil
}

// Context fitting (the plugin form). The pages go into the prompt, so the
// prompt with them must fit the model: ctx.context.max_context is the
// largest context among the endpoints the request may be routed to (the
// host routes a prompt that fits one of them there, and answers 400 when
// none fits).
const (
	// pageFraming is what one <page …> wrapper and its attributes add, in
	// tokens (a URL, a title, a date).
	pageFraming = 64
	// defaultAnswerTokens is the room kept for the answer when the request
	// does not say (max_tokens): a quarter of the context at most.
	defaultAnswerTokens = 4096
)

// contextBudget is how many tokens the pages' content may take: the
// largest context, less the request's prompt, the answer's room (the
// request's max_tokens, else the smaller of defaultAnswerTokens, a quarter
// of the context and the endpoints' max output) and the framing, with 5%
// kept back for the difference between tokenizers (the upstream's may
// count more than the host's estimate). bounded is false when the host
// gives no context.
func (env *Env) contextBudget(ctx, body []byte, model string, pages int) (budget int, bounded bool) {
	w := sdk.Get(ctx, "context")
	c := int(w.Get("max_context").Int())
	if c <= 0 {
		return 0, false
	}
	answer := int(max(gjson.GetBytes(body, "max_completion_tokens").Int(), gjson.GetBytes(body, "max_tokens").Int()))
	if answer <= 0 {
		answer = min(defaultAnswerTokens, c/4)
		if mo := int(w.Get("max_output").Int()); mo > 0 {
			answer = min(answer, mo)
		}
	}
	prompt := env.tokens(model, string(body))
	framing := env.tokens(model, InjectLead) + pages*pageFraming
	return (c*95)/100 - prompt - answer - framing, true
}

// fitPages cuts the completed pages' content so that together they hold
// at most budget tokens: each gets an equal share, and what a short page
// leaves of its share goes to the longer ones (so a small page is never
// cut for a large one's sake). Cuts end at a block boundary and are
// marked. It returns how many pages it cut.
func (env *Env) fitPages(pages []Result, model string, budget int) int {
	type sized struct{ i, tokens int }
	var order []sized
	for i, p := range pages {
		if p.Status == StatusCompleted {
			order = append(order, sized{i, env.tokens(model, p.Content)})
		}
	}
	// Shortest first: each takes what it needs up to an equal share of
	// what is left. Pages are few (max_uses), so sorting is nothing.
	slices.SortFunc(order, func(a, b sized) int { return a.tokens - b.tokens })
	left, cut := max(budget, 0), 0
	for k, s := range order {
		share := left / (len(order) - k)
		if s.tokens <= share {
			left -= s.tokens
			continue
		}
		p := &pages[s.i]
		c := ""
		if share > 0 { // fit takes 0 for no limit
			c, _ = env.fit(strings.TrimSuffix(p.Content, truncMark), model, share)
		}
		if strings.TrimSpace(c) == "" {
			p.Content = "[content left out: the model's context has no room left for this page]"
		} else {
			p.Content = c + fitMark
		}
		p.Truncated, p.fitted = true, true
		left -= share // it holds at most that
		cut++
	}
	return cut
}

// contentText is a message's text: the string, or its text parts joined.
func contentText(c gjson.Result) string {
	if c.Type == gjson.String {
		return c.Str
	}
	var parts []string
	c.ForEach(func(_, p gjson.Result) bool {
		if p.Get("type").Str == "text" {
			parts = append(parts, p.Get("text").Str)
		}
		return true
	})
	return strings.Join(parts, "\n")
}

// insertMessage inserts msg into body's messages at index at.
func insertMessage(body []byte, at int, msg []byte) ([]byte, error) {
	msgs := gjson.GetBytes(body, "messages").Array()
	var b strings.Builder
	b.WriteByte('[')
	for i, m := range msgs {
		if i == at {
			b.Write(msg)
			b.WriteByte(',')
		}
		b.WriteString(m.Raw)
		if i < len(msgs)-1 {
			b.WriteByte(',')
		}
	}
	b.WriteByte(']')
	return sjson.SetRawBytes(append([]byte(nil), body...), "messages", []byte(b.String()))
}
