package pipeline_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/switchyard/switchyard/abi/manifest"
	"github.com/switchyard/switchyard/host/modules"
	"github.com/switchyard/switchyard/host/pipeline"
	"github.com/switchyard/switchyard/host/store"
	"github.com/switchyard/switchyard/host/wasm"
	"github.com/tidwall/gjson"
)

// The contract of a request's plugin pipeline, driven through real modules:
// build/testdata/testplugin.wasm (make wasm), whose behaviour each request
// chooses with its "mode" option, published under several names so that a
// pipeline has several stages.

var root = func() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}()

// env is a registry with testplugin published as each of names (plus the
// versions in extra), and a runner over it.
type env struct {
	reg *modules.Registry
	run *pipeline.Runner
	bin []byte
	mf  string
}

func newEnv(t *testing.T, names ...string) *env {
	t.Helper()
	v, closeEnv, err := openEnv(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeEnv)
	for _, n := range names {
		if err := v.publish(n, "1.0.0"); err != nil {
			t.Fatal(err)
		}
	}
	return v
}

func openEnv(dir string) (*env, func(), error) {
	bin, err := os.ReadFile(filepath.Join(root, "build", "testdata", "testplugin.wasm"))
	if err != nil {
		return nil, nil, fmt.Errorf("%w (run make wasm)", err)
	}
	mf, err := os.ReadFile(filepath.Join(root, "host", "pipeline", "testdata", "testplugin", "manifest.json"))
	if err != nil {
		return nil, nil, err
	}
	db, err := store.OpenBolt(filepath.Join(dir, "sy.db"))
	if err != nil {
		return nil, nil, err
	}
	quiet := slog.New(slog.DiscardHandler)
	e := wasm.NewEngine(wasm.Config{CacheDir: filepath.Join(os.TempDir(), "switchyard-test-wazero-cache"), Log: quiet})
	reg, err := modules.Open(db, e, quiet)
	if err != nil {
		return nil, nil, err
	}
	closeEnv := func() { reg.Close(); _ = e.Close(context.Background()); _ = db.Close() }
	return &env{reg: reg, run: &pipeline.Runner{Modules: reg}, bin: bin, mf: string(mf)}, closeEnv, nil
}

// shared is one registry with alpha and beta, for the tests that change
// nothing in it: each module's publication costs seconds under -race.
var shared struct {
	once  sync.Once
	env   *env
	err   error
	close func()
	dir   string
}

func sharedEnv(t *testing.T) *env {
	t.Helper()
	shared.once.Do(func() {
		if shared.dir, shared.err = os.MkdirTemp("", "pipeline-test"); shared.err != nil {
			return
		}
		if shared.env, shared.close, shared.err = openEnv(shared.dir); shared.err != nil {
			return
		}
		for _, n := range []string{"alpha", "beta"} {
			if shared.err = shared.env.publish(n, "1.0.0"); shared.err != nil {
				return
			}
		}
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.env
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.close != nil {
		shared.close()
	}
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// publish installs testplugin as name@version, active. One named
// moderation declares the moderation role, as the first-party one does:
// the host finds it by that, not by its name.
func (v *env) publish(name, version string) error {
	var roles []string
	if name == "moderation" {
		roles = []string{manifest.RoleModeration}
	}
	return v.publishAs("", name, version, roles...)
}

// publishAs installs testplugin as name@version in scope ("" the
// gateway's, else an account's), active, declaring roles.
func (v *env) publishAs(scope, name, version string, roles ...string) error {
	m := strings.Replace(v.mf, `"name": "testplugin"`, `"name": "`+name+`"`, 1)
	m = strings.Replace(m, `"version": "1.0.0"`, `"version": "`+version+`"`, 1)
	if len(roles) > 0 {
		r, _ := json.Marshal(roles)
		m = strings.Replace(m, `"kind": "plugin",`, `"kind": "plugin", "roles": `+string(r)+`,`, 1)
	}
	_, err := v.reg.PublishAndActivate(context.Background(), scope, []byte(m), v.bin, "test")
	return err
}

// names are the plugins of a pipeline's stage entries, in order.
func names(p *pipeline.Pipeline) []string {
	var out []string
	for _, s := range p.Stages {
		out = append(out, s["name"].(string))
	}
	return out
}

const chat = `{"model":"v/m","messages":[{"role":"user","content":"hello"}]}`

// TestBuildOrder: which plugins run, and in which order: the configured
// defaults, then the request's list in its order, then the host's own
// defaults for the request, then the moderation a provider requires; a
// plugin disabled with "enabled": false, or already run (Skip), is left
// out, and a plugin runs once however often it is named.
func TestBuildOrder(t *testing.T) {
	v := newEnv(t, "alpha", "beta", "gamma", "delta", "moderation")
	if err := v.reg.SetDefault("gamma", true); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		plugins string
		extra   pipeline.Extra
		want    []string
	}{
		{"configured default only", `[]`, pipeline.Extra{}, []string{"gamma"}},
		{"default first, then the list in order", `[{"id":"beta"},{"id":"alpha"}]`, pipeline.Extra{},
			[]string{"gamma", "beta", "alpha"}},
		{"a listed default keeps its place as a default", `[{"id":"alpha"},{"id":"gamma","mode":"none"}]`, pipeline.Extra{},
			[]string{"gamma", "alpha"}},
		{"a default disabled", `[{"id":"gamma","enabled":false},{"id":"alpha"}]`, pipeline.Extra{}, []string{"alpha"}},
		{"named twice runs once", `[{"id":"alpha"},{"id":"alpha"}]`, pipeline.Extra{}, []string{"gamma", "alpha"}},
		{"host defaults after the list", `[{"id":"alpha"}]`, pipeline.Extra{Defaults: []string{"delta"}},
			[]string{"gamma", "alpha", "delta"}},
		{"a host default the request disables", `[{"id":"delta","enabled":false}]`, pipeline.Extra{Defaults: []string{"delta"}},
			[]string{"gamma"}},
		{"a host default not installed is skipped", `[]`, pipeline.Extra{Defaults: []string{"nosuch"}}, []string{"gamma"}},
		{"required moderation last", `[{"id":"alpha"}]`, pipeline.Extra{ModeratedBy: []string{"prov"}, Defaults: []string{"delta"}},
			[]string{"gamma", "alpha", "delta", "moderation"}},
		{"skipped: ran already", `[{"id":"alpha"},{"id":"beta"}]`, pipeline.Extra{Skip: []string{"alpha", "gamma"}}, []string{"beta"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, aerr := v.run.BuildWith("", "v/m", gjson.Parse(tc.plugins), tc.extra)
			if aerr != nil {
				t.Fatalf("build: %d %s", aerr.Status, aerr.Message)
			}
			defer p.Release()
			if _, aerr := p.Pre(context.Background(), []byte(chat)); aerr != nil {
				t.Fatalf("pre: %d %s", aerr.Status, aerr.Message)
			}
			if got := names(p); !slices.Equal(got, tc.want) {
				t.Fatalf("stages ran %v, want %v", got, tc.want)
			}
		})
	}
}

// TestBuildRefuses: what a request's plugins array gets refused for, with
// the status and the field a client is pointed at.
func TestBuildRefuses(t *testing.T) {
	v := sharedEnv(t)
	cases := []struct {
		name    string
		plugins string
		extra   pipeline.Extra
		status  int
		field   string // the field the message starts with, "" when none
		msg     string
	}{
		{"unknown plugin", `[{"id":"alpha"},{"id":"nosuch"}]`, pipeline.Extra{}, http.StatusBadRequest, "plugins[1].id: ", `unknown plugin "nosuch"`},
		{"another account's module by path", `[{"id":"acct_x/alpha"}]`, pipeline.Extra{}, http.StatusBadRequest, "plugins[0].id: ", "unknown plugin"},
		{"option outside the schema", `[{"id":"alpha","mode":"loud"}]`, pipeline.Extra{}, http.StatusBadRequest, "plugins[0].mode: ", "invalid option of plugin alpha"},
		{"unknown option", `[{"id":"alpha","colour":"red"}]`, pipeline.Extra{}, http.StatusBadRequest, "plugins[0].colour: ", "unknown option of plugin alpha"},
		{"moderation required, none installed", `[]`, pipeline.Extra{ModeratedBy: []string{"p1", "p2"}}, http.StatusServiceUnavailable, "provider",
			"provider p1, p2 requires moderation"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, aerr := v.run.BuildWith("", "v/m", gjson.Parse(tc.plugins), tc.extra)
			if aerr == nil {
				p.Release()
				t.Fatalf("built a pipeline of %s", tc.plugins)
			}
			if aerr.Status != tc.status || !strings.HasPrefix(aerr.Message, tc.field) || !strings.Contains(aerr.Message, tc.msg) {
				t.Fatalf("error %d %q, want %d starting %q and containing %q", aerr.Status, aerr.Message, tc.status, tc.field, tc.msg)
			}
		})
	}
}

// TestPre: what the pre_request hooks make of a request: edited, answered
// (no later stage runs), blocked (the plugin's status and metadata, no
// later stage), and a plugin's failure or malformed output as a 502
// naming it.
func TestPre(t *testing.T) {
	v := sharedEnv(t)
	cases := []struct {
		name      string
		plugins   string
		wantBody  string // the request content after the plugins ("": unchanged)
		respond   string // the answer's content when the plugins answered
		status    int    // error status; 0 none
		msg       string
		ran       []string
		fees      []pipeline.Fee
		sameSlice bool
	}{
		{name: "nothing to do: the same request", plugins: `[{"id":"alpha"},{"id":"beta"}]`, ran: []string{"alpha", "beta"}, sameSlice: true},
		{name: "each edit is the next one's input", plugins: `[{"id":"alpha","mode":"rewrite"},{"id":"beta","mode":"rewrite"}]`,
			wantBody: "[checked] [checked] hello", ran: []string{"alpha", "beta"}},
		{name: "an answer ends the pipeline", plugins: `[{"id":"alpha","mode":"respond"},{"id":"beta","mode":"rewrite"}]`,
			respond: "answered by testplugin", ran: []string{"alpha"}},
		{name: "a block ends the pipeline", plugins: `[{"id":"alpha","mode":"block"},{"id":"beta"}]`,
			status: http.StatusForbidden, msg: "blocked by testplugin: forbidden topic", ran: []string{"alpha"}},
		{name: "a trap is an error", plugins: `[{"id":"alpha","mode":"trap"}]`, status: http.StatusBadGateway, msg: "alpha"},
		{name: "a fee is collected", plugins: `[{"id":"alpha","mode":"cost","cost":"0.005"},{"id":"beta","mode":"cost","cost":"0.25"}]`,
			ran: []string{"alpha", "beta"}, fees: []pipeline.Fee{{Plugin: "alpha", Cost: "0.005"}, {Plugin: "beta", Cost: "0.25"}}},
		{name: "a negative fee is the plugin's fault", plugins: `[{"id":"alpha","mode":"cost","cost":"-1"}]`,
			status: http.StatusBadGateway, msg: "plugin alpha (alpha@1.0.0) reported an invalid cost"},
		{name: "a fee that is a number is the plugin's fault", plugins: `[{"id":"alpha","mode":"cost","cost":0.5}]`,
			status: http.StatusBadGateway, msg: "reported an invalid cost 0.5"},
		{name: "an answer out of shape", plugins: `[{"id":"alpha","mode":"badtypes"}]`,
			status: http.StatusBadGateway, msg: "plugin alpha (alpha@1.0.0) returned a chat result out of shape"},
		{name: "an answer's invalid UTF-8 is replaced", plugins: `[{"id":"alpha","mode":"badbytes"}]`,
			respond: "answered \uFFFD by testplugin", ran: []string{"alpha"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, aerr := v.run.Build("", "v/m", gjson.Parse(tc.plugins))
			if aerr != nil {
				t.Fatalf("build: %s", aerr.Message)
			}
			defer p.Release()
			body := []byte(chat)
			res, aerr := p.Pre(context.Background(), body)
			if tc.status != 0 {
				if aerr == nil || aerr.Status != tc.status || !strings.Contains(aerr.Message, tc.msg) {
					t.Fatalf("error %+v, want %d containing %q", aerr, tc.status, tc.msg)
				}
				if tc.status == http.StatusForbidden && aerr.Metadata["plugin"] != "alpha" {
					t.Errorf("block metadata %v does not name the plugin", aerr.Metadata)
				}
			} else if aerr != nil {
				t.Fatalf("error %d %s", aerr.Status, aerr.Message)
			}
			if tc.ran != nil && !slices.Equal(names(p), tc.ran) {
				t.Errorf("stages %v, want %v", names(p), tc.ran)
			}
			if tc.status != 0 {
				return
			}
			if tc.respond != "" {
				if got := gjson.GetBytes(res.Respond, "choices.0.message.content").Str; got != tc.respond {
					t.Fatalf("answered %q (%s), want %q", got, res.Respond, tc.respond)
				}
				return
			}
			if res.Respond != nil {
				t.Fatalf("answered %s, want the request sent on", res.Respond)
			}
			want := tc.wantBody
			if want == "" {
				want = "hello"
			}
			if got := gjson.GetBytes(res.Body, "messages.0.content").Str; got != want {
				t.Errorf("request content %q, want %q", got, want)
			}
			if tc.sameSlice && &res.Body[0] != &body[0] {
				t.Errorf("an unchanged request was copied")
			}
			if !slices.Equal(p.Fees, tc.fees) {
				t.Errorf("fees %v, want %v", p.Fees, tc.fees)
			}
		})
	}
}

// TestPostAndChunks: post_response edits a complete result, post_chunk
// each stream chunk (into zero or more); a stage with nothing to say
// passes them through, and a result out of shape is the plugin's fault.
func TestPostAndChunks(t *testing.T) {
	v := sharedEnv(t)
	const result = `{"id":"g","object":"chat.completion","created":1,"model":"v/m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`
	const chunk = `{"id":"g","object":"chat.completion.chunk","created":1,"model":"v/m","choices":[{"index":0,"delta":{"content":"hi"}}]}`
	cases := []struct {
		name       string
		plugins    string
		post       string   // the result's content after post_response
		postStatus int      // post_response's error status; 0 none
		chunks     []string // each chunk out: its content, or its raw text when not a chunk
	}{
		{"pass through", `[{"id":"alpha"}]`, "hi", 0, []string{"hi"}},
		{"edited", `[{"id":"alpha","mode":"shout"}]`, "SHOUTED", 0, []string{"X"}},
		{"a chunk made two, one not a chunk", `[{"id":"alpha","mode":"garble"}]`, "hi", 0, []string{`"not a chunk"`, "G"}},
		{"each stage edits the last one's chunks", `[{"id":"alpha","mode":"garble"},{"id":"beta","mode":"shout"}]`, "SHOUTED", 0,
			[]string{`"not a chunk"`, "X"}},
		{"a result out of shape", `[{"id":"alpha","mode":"badtypes_post"}]`, "", http.StatusBadGateway, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, aerr := v.run.Build("", "v/m", gjson.Parse(tc.plugins))
			if aerr != nil {
				t.Fatalf("build: %s", aerr.Message)
			}
			defer p.Release()
			out, aerr := p.Post(context.Background(), []byte(result))
			if tc.postStatus != 0 {
				if aerr == nil || aerr.Status != tc.postStatus || !strings.Contains(aerr.Message, "plugin alpha") {
					t.Fatalf("post: %+v, want %d naming the plugin", aerr, tc.postStatus)
				}
				return
			}
			if aerr != nil {
				t.Fatalf("post: %s", aerr.Message)
			}
			if got := gjson.GetBytes(out, "choices.0.message.content").Str; got != tc.post {
				t.Errorf("result content %q, want %q", got, tc.post)
			}
			if !p.HasChunkHooks() {
				t.Fatal("a pipeline of post_chunk plugins reports no chunk hooks")
			}
			chunks, aerr := p.Chunk(context.Background(), []byte(chunk))
			if aerr != nil {
				t.Fatalf("chunk: %s", aerr.Message)
			}
			var got []string
			for _, c := range chunks {
				if s := gjson.GetBytes(c, "choices.0.delta.content"); s.Exists() {
					got = append(got, s.Str)
				} else {
					got = append(got, string(c))
				}
			}
			if !slices.Equal(got, tc.chunks) {
				t.Errorf("chunks %q, want %q", got, tc.chunks)
			}
		})
	}
}

// TestStageEntries: each hook that ran leaves a service_metadata.pipeline
// entry naming the plugin, hook, action and module version; a guardrail's
// gets the fields spec 2.2 shows on one.
func TestStageEntries(t *testing.T) {
	v := sharedEnv(t)
	p, aerr := v.run.Build("", "v/m", gjson.Parse(`[{"id":"alpha","mode":"rewrite"},{"id":"beta","mode":"block"}]`))
	if aerr != nil {
		t.Fatal(aerr.Message)
	}
	defer p.Release()
	if _, aerr := p.Pre(context.Background(), []byte(chat)); aerr == nil {
		t.Fatal("beta did not block")
	}
	if len(p.Stages) != 2 {
		t.Fatalf("%d entries: %v", len(p.Stages), p.Stages)
	}
	want := []map[string]any{
		{"name": "alpha", "hook": "pre_request", "action": "continue", "module": "alpha@1.0.0", "type": "plugin", "summary": "rewrote the last message"},
		{"name": "beta", "hook": "pre_request", "action": "block", "module": "beta@1.0.0", "type": "guardrail",
			"guardrail_id": "beta", "guardrail_scope": "request"},
	}
	for i, w := range want {
		for k, val := range w {
			if p.Stages[i][k] != val {
				t.Errorf("entry %d: %s = %v, want %v (%v)", i, k, p.Stages[i][k], val, p.Stages[i])
			}
		}
	}
	data, _ := p.Stages[1]["data"].(map[string]any)
	if eng, _ := data["engines"].([]any); len(eng) != 1 || eng[0] != "beta" {
		t.Errorf("guardrail engines %v, want [beta]", data["engines"])
	}
}

// TestPinnedAndReleased: a pipeline keeps running the versions it was
// built with after a newer one is activated, and the next request's
// pipeline gets the new one; Prepend puts a pipeline that ran first (a
// router's) before this one's entries and fees; Release is safe to repeat
// and on nil.
func TestPinnedAndReleased(t *testing.T) {
	v := newEnv(t, "alpha")
	ctx := context.Background()
	old, aerr := v.run.Build("", "v/m", gjson.Parse(`[{"id":"alpha","mode":"cost","cost":"0.01"}]`))
	if aerr != nil {
		t.Fatal(aerr.Message)
	}
	if err := v.publish("alpha", "2.0.0"); err != nil {
		t.Fatal(err)
	}
	if _, aerr := old.Pre(ctx, []byte(chat)); aerr != nil {
		t.Fatal(aerr.Message)
	}
	if got := old.Stages[0]["module"]; got != "alpha@1.0.0" {
		t.Errorf("the pipeline built before the swap ran %v, want alpha@1.0.0", got)
	}
	cur, aerr := v.run.Build("", "v/m", gjson.Parse(`[{"id":"alpha"}]`))
	if aerr != nil {
		t.Fatal(aerr.Message)
	}
	if _, aerr := cur.Pre(ctx, []byte(chat)); aerr != nil {
		t.Fatal(aerr.Message)
	}
	if got := cur.Stages[0]["module"]; got != "alpha@2.0.0" {
		t.Errorf("a pipeline built after the swap ran %v, want alpha@2.0.0", got)
	}

	cur.Prepend(old)
	if got := names(cur); !slices.Equal(got, []string{"alpha", "alpha"}) || cur.Stages[0]["module"] != "alpha@1.0.0" {
		t.Errorf("entries after Prepend: %v", cur.Stages)
	}
	if !slices.Equal(cur.Fees, []pipeline.Fee{{Plugin: "alpha", Cost: "0.01"}}) {
		t.Errorf("fees after Prepend: %v", cur.Fees)
	}
	if cur.Time() < old.Time() {
		t.Errorf("the pipeline's hook time %v is less than the prepended one's %v", cur.Time(), old.Time())
	}
	cur.Release()
	cur.Release()
	if !cur.Empty() {
		t.Error("a released pipeline still has stages")
	}
	var none *pipeline.Pipeline
	none.Release()
	if !none.Empty() || none.Time() != 0 {
		t.Error("a nil pipeline is not empty")
	}
}
