package fuse

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/switchyard/switchyard/sdk"
	"github.com/tidwall/gjson"
)

// Result is one chat sub-request's answer: its HTTP status and body.
type Result struct {
	Status int
	Body   []byte
}

// Host is what the fusion needs from the gateway (the module's main wires
// abi chat_reserve and chat_batch).
type Host struct {
	// Reserve holds the worst case of the planned calls before any runs.
	Reserve func(plan []byte) (status int, body []byte, err error)
	// Batch runs chat bodies as sub-requests, concurrently.
	Batch func(bodies [][]byte) ([]Result, error)
}

// ErrNoChat is what Host functions return when the host offers no chat
// sub-requests to this call: the request is itself a sub-request (a
// fusion's panel member asking for a fusion) — no fusion inside a fusion.
var ErrNoChat = errors.New("no chat sub-requests here")

// Outcome is the pre_request hook's answer: action respond (Body is the
// chat result) or block (Body is {"code","message","metadata"}), with the
// stage summary for service_metadata.
type Outcome struct {
	Action  string
	Body    []byte
	Summary []byte
}

// call is one sub-request of the fusion, as service_metadata lists it.
type call struct {
	Model string `json:"model"`
	ID    string `json:"id,omitempty"` // the sub-request's generation id

	Status           string          `json:"status"` // ok, failed
	HTTPStatus       int             `json:"http_status,omitempty"`
	Error            string          `json:"error,omitempty"`
	PromptTokens     int64           `json:"prompt_tokens"`
	CompletionTokens int64           `json:"completion_tokens"`
	Cost             json.RawMessage `json:"cost"`
	ToolCalls        int64           `json:"tool_calls,omitempty"`
	answer           string
	finish           string
}

// fusion is one run.
type fusion struct {
	h        Host
	o        *Options
	messages string // the conversation, as the request's messages JSON
	client   gjson.Result
	panel    []*call
	judge    *call
	final    *call
	analysis any
	held     json.RawMessage
}

// Run answers the request body (the unified chat request) with a fusion
// run with the plugin's ctx (config: the plugins[] item; settings:
// module_settings.fusion).
func Run(h Host, ctx, body []byte) Outcome {
	c := gjson.ParseBytes(ctx)
	o, err := Resolve(c.Get("config"), c.Get("settings"))
	if err != nil {
		return block(400, "fusion: "+err.Error(), ReasonConfig, nil, nil)
	}
	messages := gjson.GetBytes(body, "messages")
	if !messages.IsArray() || len(messages.Array()) == 0 {
		return block(400, "fusion needs the conversation in messages", ReasonConfig, nil, nil)
	}
	f := &fusion{h: h, o: o, messages: messages.Raw, client: gjson.ParseBytes(body)}
	if n := max(f.client.Get("max_completion_tokens").Int(), f.client.Get("max_tokens").Int()); n > 0 {
		o.FinalTokens = min(o.FinalTokens, int(n)) // the client's bound is on the answer it gets
	}
	return f.run()
}

// finalParams are the client's parameters that shape the answer it gets,
// passed to the final call (the panel and the judge answer the module).
var finalParams = []string{"response_format", "temperature", "top_p", "stop", "seed", "user"}

func (f *fusion) run() Outcome {
	if out, ok := f.reserve(); !ok {
		return out
	}
	// 1. The panel, in parallel.
	bodies := make([][]byte, len(f.o.Panel))
	for i, m := range f.o.Panel {
		bodies[i] = f.panelBody(m)
		f.panel = append(f.panel, &call{Model: m})
	}
	results, err := f.h.Batch(bodies)
	if err != nil {
		return f.hostFailure(err)
	}
	ok, cancelled, credits, refused := 0, 0, 0, 0
	for i, r := range results {
		p := f.panel[i]
		p.read(r)
		switch {
		case p.Status == "ok":
			ok++
		case r.Status == 499:
			cancelled++
		case r.Status == 402:
			credits++
		}
		if p.Status != "ok" && r.Status >= 400 && r.Status < 500 {
			refused++
		}
	}
	switch {
	case cancelled > 0:
		return f.fail(499, "the fusion was cancelled: the client closed the request", ReasonCancelled)
	case ok == 0 && credits == len(results):
		return f.fail(402, "fusion: every panel member was refused for insufficient credits", ReasonInsufficientCredits)
	case ok == 0 && refused == len(results):
		// Every member refused the request as it was asked (a 400 on its
		// parameters, a 404, a 413): the client's to change, not an
		// upstream failure, so the status is the members' own (400 when
		// they differ).
		return f.fail(f.refusedStatus(), "fusion: every panel member refused the request ("+f.panelErrors()+")", ReasonAllPanelsFailed)
	case ok == 0:
		return f.fail(502, "fusion: every panel member failed ("+f.panelErrors()+")", ReasonAllPanelsFailed)
	}
	// 2. The judge's analysis.
	f.judge = &call{Model: f.o.Judge}
	if out, ok := f.single(f.judge, f.judgeBody(), ReasonJudgeUpstream); !ok {
		return out
	}
	if strings.TrimSpace(f.judge.answer) == "" {
		return f.fail(502, "fusion: the judge "+f.o.Judge+" returned an empty analysis", ReasonJudgeEmpty)
	}
	analysis, reason, err := parseAnalysis(f.judge.answer)
	if err != nil {
		f.judge.Status, f.judge.Error = "failed", err.Error()
		return f.fail(502, "fusion: "+err.Error()+" (judge "+f.o.Judge+")", reason)
	}
	f.analysis = analysis
	// 3. The final answer, written from the analysis by the judge model.
	f.final = &call{Model: f.o.Judge}
	if out, ok := f.single(f.final, f.finalBody(), ReasonFinalUpstream); !ok {
		return out
	}
	return Outcome{Action: "respond", Body: f.result(), Summary: f.summary("")}
}

// refusedStatus is the panel's common 4xx status, or 400 when the members
// were refused with different ones.
func (f *fusion) refusedStatus() int {
	st := f.panel[0].HTTPStatus
	for _, p := range f.panel[1:] {
		if p.HTTPStatus != st {
			return 400
		}
	}
	return st
}

// reserve holds the whole fusion's worst case before any call.
func (f *fusion) reserve() (Outcome, bool) {
	status, body, err := f.h.Reserve(f.plan())
	if err != nil {
		return f.hostFailure(err), false
	}
	switch {
	case status == 200:
		f.held = json.RawMessage(gjson.GetBytes(body, "held").Raw)
		return Outcome{}, true
	case status == 402:
		md := map[string]any{}
		if m := gjson.GetBytes(body, "error.metadata"); m.IsObject() {
			_ = json.Unmarshal([]byte(m.Raw), &md)
		}
		if r, _ := md["reason"].(string); r != "" && r != ReasonInsufficientCredits {
			md["hold_reason"] = r
		}
		return block(402, "fusion: the whole fusion cannot be covered, nothing was called or charged. "+sdk.ErrorMessage(body), ReasonInsufficientCredits, md, f.summary(ReasonInsufficientCredits)), false
	case status == 400 || status == 404:
		return block(status, "fusion: "+sdk.ErrorMessage(body), ReasonInvalidModel, nil, f.summary(ReasonInvalidModel)), false
	}
	return block(status, "fusion: "+sdk.ErrorMessage(body), "reserve_failed", nil, f.summary("reserve_failed")), false
}

// plan is the chat_reserve plan: every call the fusion may make, at its
// max tokens. Prompts are estimated the way the host bounds a hold (one
// token per byte of the body): the panel's conversation; with tools, up to
// max_tool_calls + 1 turns whose prompts hold on average half the results
// (tool_result_tokens each); the judge's with every answer (max_tokens
// each, four bytes a token); the final's with the analysis too. The host
// caps each at the model's context.
func (f *fusion) plan() []byte {
	o := f.o
	base := len(f.messages) + 256
	var calls []map[string]any
	turns, prompt := 1, base
	if len(o.Tools) > 0 {
		turns = o.MaxToolCalls + 1
		prompt = base + o.MaxToolCalls*o.ToolTokens/2 // on average half the results are in
	}
	for _, m := range o.Panel {
		calls = append(calls, map[string]any{"model": m, "prompt_tokens": prompt, "max_tokens": o.PanelTokens, "turns": turns})
	}
	judge := base + 2048 + len(o.Panel)*o.PanelTokens*4
	calls = append(calls, map[string]any{"model": o.Judge, "prompt_tokens": judge, "max_tokens": o.JudgeTokens})
	calls = append(calls, map[string]any{"model": o.Judge, "prompt_tokens": judge + o.JudgeTokens*4, "max_tokens": o.FinalTokens})
	b, _ := json.Marshal(map[string]any{"calls": calls})
	return b
}

// panelBody asks model for its answer to the conversation, with the server
// tools the fusion allows.
func (f *fusion) panelBody(model string) []byte {
	var b strings.Builder
	b.WriteString(`{"model":` + sdk.Quote(model) + `,"messages":` + f.messages + `,"max_tokens":` + strconv.Itoa(f.o.PanelTokens))
	if len(f.o.Tools) > 0 {
		t, _ := json.Marshal(f.o.Tools)
		b.WriteString(`,"tools":` + string(t) + `,"max_tool_calls":` + strconv.Itoa(f.o.MaxToolCalls))
	}
	b.WriteString(`}`)
	return []byte(b.String())
}

const judgeInstructions = `You are the analyst of a panel of AI models that answered the same conversation independently. Compare their answers to the user's last message and return only a JSON object with:
- consensus: the points most answers agree on;
- contradictions: where answers disagree, as {"topic", "positions"}, each position naming its model;
- unique_points: a point only one answer made, as {"model", "point"};
- gaps: what no answer covered or verified.
Be brief and factual; judge the content, not the style.`

const finalInstructions = `Write the final answer to the user's last message. A panel of models answered it independently and an analyst compared their answers; both are below. Keep what they agree on, resolve contradictions (say so when it stays uncertain), include the valuable unique points and acknowledge the gaps. Answer the user directly; do not mention the panel or the analysis unless asked.`

// judgeBody asks the judge for the analysis, as structured output at
// temperature 0.
func (f *fusion) judgeBody() []byte {
	user := "Conversation:\n" + transcript(f.messages) + "\n\nPanel answers:\n" + f.answers()
	sch := `{"type":"json_schema","json_schema":{"name":"fusion_analysis","strict":true,"schema":` + compact(AnalysisSchema) + `}}`
	return []byte(`{"model":` + sdk.Quote(f.o.Judge) + `,"messages":[{"role":"system","content":` + sdk.Quote(judgeInstructions) +
		`},{"role":"user","content":` + sdk.Quote(user) + `}],"response_format":` + sch +
		`,"temperature":0,"max_tokens":` + strconv.Itoa(f.o.JudgeTokens) + `}`)
}

// finalBody asks the judge model for the answer: the instructions, the
// analysis and the answers first, then the client's conversation as it was.
func (f *fusion) finalBody() []byte {
	a, _ := json.Marshal(f.analysis)
	sys := finalInstructions + "\n\nAnalysis (JSON):\n" + string(a) + "\n\nPanel answers:\n" + f.answers()
	msgs := `[{"role":"system","content":` + sdk.Quote(sys) + `}`
	gjson.Parse(f.messages).ForEach(func(_, m gjson.Result) bool {
		msgs += "," + m.Raw
		return true
	})
	msgs += "]"
	b := `{"model":` + sdk.Quote(f.o.Judge) + `,"messages":` + msgs + `,"max_tokens":` + strconv.Itoa(f.o.FinalTokens)
	for _, p := range finalParams {
		if v := f.client.Get(p); v.Exists() && v.Type != gjson.Null {
			b += `,"` + p + `":` + v.Raw
		}
	}
	return []byte(b + `}`)
}

// answers lists the panel's answers, numbered and attributed.
func (f *fusion) answers() string {
	var b strings.Builder
	n := 0
	for _, p := range f.panel {
		if p.Status != "ok" {
			continue
		}
		n++
		fmt.Fprintf(&b, "### Answer %d (%s)\n%s\n\n", n, p.Model, p.answer)
	}
	return b.String()
}

// single runs one call (the judge or the final answer).
func (f *fusion) single(c *call, body []byte, reason string) (Outcome, bool) {
	rs, err := f.h.Batch([][]byte{body})
	if err != nil {
		return f.hostFailure(err), false
	}
	c.read(rs[0])
	switch {
	case rs[0].Status == 499:
		return f.fail(499, "the fusion was cancelled: the client closed the request", ReasonCancelled), false
	case rs[0].Status == 402:
		return f.fail(402, "fusion: "+c.Error, ReasonInsufficientCredits), false
	case c.Status != "ok":
		return f.fail(502, "fusion: "+c.Model+" failed: "+c.Error, reason), false
	}
	return Outcome{}, true
}

// read fills c from its sub-request's answer.
func (c *call) read(r Result) {
	b := gjson.ParseBytes(r.Body)
	c.ID = b.Get("id").Str
	c.Cost = json.RawMessage("0")
	if u := b.Get("usage"); u.IsObject() {
		c.PromptTokens, c.CompletionTokens = u.Get("prompt_tokens").Int(), u.Get("completion_tokens").Int()
		if v := u.Get("cost"); v.Type == gjson.Number {
			c.Cost = json.RawMessage(v.Raw)
		}
		c.ToolCalls = u.Get("server_tool_use_details.tool_calls_executed").Int()
	}
	if r.Status != 200 {
		c.Status, c.HTTPStatus = "failed", r.Status
		c.Error = sdk.ErrorMessage(r.Body)
		if c.Error == "" {
			c.Error = "HTTP " + strconv.Itoa(r.Status)
		}
		return
	}
	c.Status = "ok"
	c.answer = sdk.ContentText(b.Get("choices.0.message.content"))
	c.finish = b.Get("choices.0.finish_reason").Str
	if c.answer == "" && c.finish != "length" {
		c.Status, c.Error = "failed", "empty answer"
	}
}

// result is the chat result the request is answered with. The host writes
// its id, model and usage (every sub-request's, summed).
func (f *fusion) result() []byte {
	finish := f.final.finish
	if finish == "" {
		finish = "stop"
	}
	return []byte(`{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":` +
		sdk.Quote(f.final.answer) + `},"finish_reason":` + sdk.Quote(finish) + `}]}`)
}

// summary is the stage's service_metadata entry: strategy fusion, every
// call with its status, tokens and cost, and the analysis.
func (f *fusion) summary(reason string) []byte {
	ok := 0
	for _, p := range f.panel {
		if p.Status == "ok" {
			ok++
		}
	}
	data := map[string]any{"strategy": "fusion", "panel": orEmpty(f.panel), "tools": len(f.o.Tools), "max_tool_calls": f.o.MaxToolCalls}
	if f.o.Preset != "" {
		data["preset"] = f.o.Preset
	}
	if f.held != nil {
		data["held"] = f.held
	}
	if f.judge != nil {
		data["judge"] = f.judge
	}
	if f.final != nil {
		data["final"] = f.final
	}
	if f.analysis != nil {
		data["analysis"] = f.analysis
	}
	s := fmt.Sprintf("fusion: %d of %d panel answers, judged by %s", ok, len(f.o.Panel), f.o.Judge)
	if dropped := len(f.panel) - ok; dropped > 0 && reason == "" {
		s += fmt.Sprintf("; %d failed and dropped (%s)", dropped, f.panelErrors())
	}
	if reason != "" {
		s += "; failed: " + reason
		data["reason"] = reason
	}
	b, _ := json.Marshal(map[string]any{"type": "router", "summary": s, "data": data})
	return b
}

func orEmpty(c []*call) []*call {
	if c == nil {
		return []*call{}
	}
	return c
}

func (f *fusion) panelErrors() string {
	var parts []string
	for _, p := range f.panel {
		if p.Status != "ok" {
			parts = append(parts, p.Model+": "+p.Error)
		}
	}
	return strings.Join(parts, "; ")
}

// fail ends the fusion with an error whose metadata says why and lists the
// panel.
func (f *fusion) fail(status int, msg, reason string) Outcome {
	md := map[string]any{"panel": orEmpty(f.panel)}
	if f.judge != nil {
		md["judge"] = f.judge
	}
	return block(status, msg, reason, md, f.summary(reason))
}

// hostFailure is a host call that did not run: in a sub-request there are
// none (no fusion inside a fusion); otherwise the request's chat budget
// or the host failed.
func (f *fusion) hostFailure(err error) Outcome {
	if errors.Is(err, ErrNoChat) {
		// A sub-request (a panel member of another fusion, whose account
		// turns fusion on by default): no fusion inside a fusion, the
		// request goes on as it is.
		b, _ := json.Marshal(map[string]any{"type": "router", "summary": "fusion skipped: no fusion inside a sub-request",
			"data": map[string]any{"strategy": "direct", "skipped": ReasonNested}})
		return Outcome{Action: "continue", Summary: b}
	}
	return f.fail(502, "fusion: "+err.Error(), "host_error")
}

// block is a block action with the error's status, message and metadata.
func block(status int, msg, reason string, md map[string]any, summary []byte) Outcome {
	if md == nil {
		md = map[string]any{}
	}
	md["reason"] = reason
	b, _ := json.Marshal(map[string]any{"code": status, "message": msg, "metadata": md})
	return Outcome{Action: "block", Body: b, Summary: summary}
}

// transcript renders the conversation as text for the judge.
func transcript(messages string) string {
	var b strings.Builder
	gjson.Parse(messages).ForEach(func(_, m gjson.Result) bool {
		t := sdk.ContentText(m.Get("content"))
		if t == "" {
			return true
		}
		b.WriteString(m.Get("role").Str + ": " + t + "\n")
		return true
	})
	return b.String()
}

func compact(doc string) string {
	var v any
	_ = json.Unmarshal([]byte(doc), &v)
	b, _ := json.Marshal(v)
	return string(b)
}
