package fuse

import (
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"
)

const settings = `{"panel":["a/one","b/two","c/three"],"judge":"j/judge",
 "presets":{"general-fast":{"analysis_models":["f/fast","f/faster"],"model":"f/fast"},"general-budget":{"analysis_models":["b/cheap"]}}}`

func TestResolve(t *testing.T) {
	cases := []struct {
		name, config, settings string
		panel                  string
		judge                  string
		tools                  int
		err                    string
	}{
		{"settings", `{"id":"fusion"}`, settings, "a/one,b/two,c/three", "j/judge", 2, ""},
		{"explicit panel: its first judges", `{"analysis_models":["x/a","y/b"]}`, settings, "x/a,y/b", "x/a", 2, ""},
		{"explicit panel and judge", `{"analysis_models":["x/a"],"model":"z/j"}`, settings, "x/a", "z/j", 2, ""},
		{"preset", `{"preset":"general-fast"}`, settings, "f/fast,f/faster", "f/fast", 2, ""},
		{"preset without judge: its panel's first", `{"preset":"general-budget"}`, settings, "b/cheap", "b/cheap", 2, ""},
		{"explicit fields win over the preset", `{"preset":"general-fast","model":"z/j"}`, settings, "f/fast,f/faster", "z/j", 2, ""},
		{"explicit panel over the preset keeps its judge", `{"preset":"general-fast","analysis_models":["x/a"]}`, settings, "x/a", "f/fast", 2, ""},
		{"tools disabled", `{"tools":[]}`, settings, "a/one,b/two,c/three", "j/judge", 0, ""},
		{"one tool", `{"tools":[{"type":"service:web_fetch"}]}`, settings, "a/one,b/two,c/three", "j/judge", 1, ""},
		{"no panel anywhere", `{}`, `{}`, "", "", 0, "module_settings.fusion.panel"},
		{"unknown preset", `{"preset":"general-high"}`, settings, "", "", 0, `preset "general-high" is not configured`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o, err := Resolve(gjson.Parse(c.config), gjson.Parse(c.settings))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(o.Panel, ","); got != c.panel || o.Judge != c.judge || len(o.Tools) != c.tools {
				t.Fatalf("panel %s judge %s tools %d; want %s %s %d", got, o.Judge, len(o.Tools), c.panel, c.judge, c.tools)
			}
		})
	}
}

func TestParseAnalysis(t *testing.T) {
	valid := `{"consensus":["a"],"contradictions":[{"topic":"t","positions":["x: yes","y: no"]}],"unique_points":[{"model":"m","point":"p"}],"gaps":[]}`
	cases := []struct {
		name, text, reason string
	}{
		{"valid", valid, ""},
		{"fenced", "```json\n" + valid + "\n```", ""},
		{"prose", "The answers agree.", ReasonJudgeNotJSON},
		{"truncated", valid[:40], ReasonJudgeNotJSON},
		{"missing gaps", `{"consensus":[],"contradictions":[],"unique_points":[]}`, ReasonJudgeSchemaMismatch},
		{"wrong type", `{"consensus":"a","contradictions":[],"unique_points":[],"gaps":[]}`, ReasonJudgeSchemaMismatch},
		{"extra field", `{"consensus":[],"contradictions":[],"unique_points":[],"gaps":[],"verdict":"x"}`, ReasonJudgeSchemaMismatch},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, reason, err := parseAnalysis(c.text)
			if reason != c.reason || (err == nil) != (c.reason == "") {
				t.Fatalf("reason %q err %v, want %q", reason, err, c.reason)
			}
		})
	}
}

// fakeHost answers by model: panel members and the judge reply with
// replies[model] (status 200) or fail with statuses[model].
type fakeHost struct {
	mu       sync.Mutex
	reserve  int
	replies  map[string]string
	statuses map[string]int
	bodies   []string
	noChat   bool
}

func (h *fakeHost) host() Host {
	return Host{
		Reserve: func(plan []byte) (int, []byte, error) {
			if h.noChat {
				return 0, nil, ErrNoChat
			}
			if h.reserve != 0 {
				return h.reserve, []byte(`{"error":{"code":402,"message":"Insufficient credits","metadata":{"reason":"insufficient_credits"}}}`), nil
			}
			return 200, []byte(`{"held":0.5,"calls":5}`), nil
		},
		Batch: func(bodies [][]byte) ([]Result, error) {
			h.mu.Lock()
			defer h.mu.Unlock()
			out := make([]Result, len(bodies))
			for i, b := range bodies {
				h.bodies = append(h.bodies, string(b))
				m := gjson.GetBytes(b, "model").Str
				if st := h.statuses[m]; st != 0 {
					out[i] = Result{st, []byte(`{"error":{"code":` + strconv.Itoa(st) + `,"message":"` + m + ` failed"}}`)}
					continue
				}
				out[i] = Result{200, []byte(`{"id":"gen-` + m + `","choices":[{"message":{"content":` + strconv.Quote(h.replies[m]) +
					`},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"cost":0.001}}`)}
			}
			return out, nil
		},
	}
}

const analysis = `{"consensus":["yes"],"contradictions":[],"unique_points":[],"gaps":["none"]}`

func TestRun(t *testing.T) {
	ctx := []byte(`{"config":{"id":"fusion","tools":[]},"settings":` + settings + `}`)
	body := []byte(`{"model":"x/y","messages":[{"role":"user","content":"Is Pluto a planet?"}]}`)
	replies := map[string]string{"a/one": "one says", "b/two": "two says", "c/three": "three says", "j/judge": analysis}
	cases := []struct {
		name     string
		statuses map[string]int
		reserve  int
		judge    string
		action   string
		code     int64
		reason   string
	}{
		{"all answer", nil, 0, analysis, "respond", 0, ""},
		{"a member fails and is dropped", map[string]int{"b/two": 502}, 0, analysis, "respond", 0, ""},
		{"every member fails", map[string]int{"a/one": 502, "b/two": 429, "c/three": 500}, 0, analysis, "block", 502, ReasonAllPanelsFailed},
		// A request every member refuses (a tools entry, a parameter) is the
		// client's to fix: a 4xx, not a 502 upstream failure.
		{"every member refuses with 400", map[string]int{"a/one": 400, "b/two": 400, "c/three": 400}, 0, analysis, "block", 400, ReasonAllPanelsFailed},
		{"every member refuses, with different 4xx", map[string]int{"a/one": 400, "b/two": 404, "c/three": 413}, 0, analysis, "block", 400, ReasonAllPanelsFailed},
		{"every member rate-limited", map[string]int{"a/one": 429, "b/two": 429, "c/three": 429}, 0, analysis, "block", 429, ReasonAllPanelsFailed},
		{"cancelled", map[string]int{"a/one": 499}, 0, analysis, "block", 499, ReasonCancelled},
		{"judge not JSON", nil, 0, "I think they agree.", "block", 502, ReasonJudgeNotJSON},
		{"judge off schema", nil, 0, `{"consensus":[]}`, "block", 502, ReasonJudgeSchemaMismatch},
		{"judge upstream", map[string]int{"j/judge": 503}, 0, analysis, "block", 502, ReasonJudgeUpstream},
		{"cannot be covered", nil, 402, analysis, "block", 402, ReasonInsufficientCredits},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := map[string]string{}
			for k, v := range replies {
				r[k] = v
			}
			r["j/judge"] = c.judge
			h := &fakeHost{replies: r, statuses: c.statuses, reserve: c.reserve}
			o := Run(h.host(), ctx, body)
			if o.Action != c.action {
				t.Fatalf("action %s, want %s: %s", o.Action, c.action, o.Body)
			}
			sum := gjson.ParseBytes(o.Summary)
			if sum.Get("data.strategy").Str != "fusion" {
				t.Fatalf("summary %s", o.Summary)
			}
			if c.action == "block" {
				b := gjson.ParseBytes(o.Body)
				if b.Get("code").Int() != c.code || b.Get("metadata.reason").Str != c.reason {
					t.Fatalf("block %s", o.Body)
				}
				if c.reserve != 0 && len(h.bodies) != 0 {
					t.Fatalf("calls made although the fusion could not be covered: %v", h.bodies)
				}
				return
			}
			if got := gjson.GetBytes(o.Body, "choices.0.message.content").Str; got != c.judge {
				// The fake judge answers the final call with its reply too.
				t.Fatalf("final answer %q", got)
			}
			panel := sum.Get("data.panel").Array()
			if len(panel) != 3 {
				t.Fatalf("panel %s", sum.Raw)
			}
			for _, p := range panel {
				want := "ok"
				if c.statuses[p.Get("model").Str] != 0 {
					want = "failed"
				}
				if p.Get("status").Str != want {
					t.Fatalf("member %s", p.Raw)
				}
			}
			// The judge saw every answer that came, and only those.
			judge := h.bodies[3]
			if gjson.Get(judge, "response_format.json_schema.strict").Bool() != true || gjson.Get(judge, "temperature").Int() != 0 {
				t.Fatalf("judge body %s", judge)
			}
			for m, reply := range map[string]string{"a/one": "one says", "b/two": "two says", "c/three": "three says"} {
				if strings.Contains(judge, reply) == (c.statuses[m] != 0) {
					t.Fatalf("judge prompt and %s's answer: %s", m, judge)
				}
			}
			final := h.bodies[4]
			if !strings.Contains(final, `\"consensus\":[\"yes\"]`) || !strings.Contains(final, "Is Pluto a planet?") {
				t.Fatalf("final body %s", final)
			}
		})
	}
}

// The client's answer-shaping parameters reach the final call only, and
// its max_tokens bounds the final answer.
func TestRunClientParams(t *testing.T) {
	ctx := []byte(`{"config":{"id":"fusion","tools":[]},"settings":` + settings + `}`)
	h := &fakeHost{replies: map[string]string{"a/one": "1", "b/two": "2", "c/three": "3", "j/judge": analysis}}
	body := `{"messages":[{"role":"user","content":"hi"}],"max_tokens":100,"temperature":0.3,"response_format":{"type":"json_object"},"tools":[{"type":"function","function":{"name":"f"}}]}`
	if o := Run(h.host(), ctx, []byte(body)); o.Action != "respond" {
		t.Fatalf("%s", o.Body)
	}
	final := gjson.Parse(h.bodies[4])
	if final.Get("max_tokens").Int() != 100 || final.Get("temperature").Float() != 0.3 || final.Get("response_format.type").Str != "json_object" || final.Get("tools").Exists() {
		t.Fatalf("final body %s", final.Raw)
	}
	if p := gjson.Parse(h.bodies[0]); p.Get("temperature").Exists() || p.Get("tools").Exists() || p.Get("max_tokens").Int() != DefaultPanelTokens {
		t.Fatalf("panel body %s", p.Raw)
	}
}

func TestRunPanelTools(t *testing.T) {
	ctx := []byte(`{"config":{"id":"fusion","max_tool_calls":3},"settings":` + settings + `}`)
	h := &fakeHost{replies: map[string]string{"a/one": "1", "b/two": "2", "c/three": "3", "j/judge": analysis}}
	Run(h.host(), ctx, []byte(`{"messages":[{"role":"user","content":"hi"}]}`))
	p := gjson.Parse(h.bodies[0])
	if p.Get("tools.#").Int() != 2 || p.Get("tools.0.type").Str != "service:web_search" || p.Get("max_tool_calls").Int() != 3 {
		t.Fatalf("panel body %s", p.Raw)
	}
	if j := gjson.Parse(h.bodies[3]); j.Get("tools").Exists() {
		t.Fatalf("the judge got tools: %s", j.Raw)
	}
}

// In a sub-request the host offers no chat: the fusion steps aside.
func TestRunNested(t *testing.T) {
	h := &fakeHost{noChat: true}
	o := Run(h.host(), []byte(`{"config":{"id":"fusion"},"settings":`+settings+`}`), []byte(`{"messages":[{"role":"user","content":"hi"}]}`))
	if o.Action != "continue" || len(o.Body) != 0 || gjson.GetBytes(o.Summary, "data.skipped").Str != ReasonNested {
		t.Fatalf("%+v", o)
	}
}
