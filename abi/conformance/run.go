package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/abi/guestcheck"
)

// GuestID is the name@version the kit's guest is loaded as.
const GuestID = "conformance@1.0.0"

var (
	adapterHooks = []abi.Hook{abi.HookChatRequest, abi.HookChatResponse, abi.HookChatStreamEvent, abi.HookEmbedRequest, abi.HookEmbedResponse, abi.HookError}
	pluginHooks  = []abi.Hook{abi.HookPreRequest, abi.HookPostResponse, abi.HookPostChunk}
)

// kit writes the guest's manifests: kind adapter (hooks 1-6) or plugin
// (hooks 7-9), with the grants and limits a check needs.
type kit struct {
	kind   string
	grants string
	limits string
	abi    int
}

func hooksOf(kind string) []abi.Hook {
	if kind == "plugin" {
		return pluginHooks
	}
	return adapterHooks
}

func (k kit) manifest() []byte {
	hooks := hooksOf(k.kind)
	names := make([]string, len(hooks))
	for i, h := range hooks {
		names[i] = strconv.Quote(h.String())
	}
	if k.grants == "" {
		k.grants = `{"host_functions":["log","http","chat","count_tokens","kv","embed","vector"],"http_domains":["127.0.0.1"]}`
	}
	if k.limits == "" {
		k.limits = `{"memory_pages":256,"pool_size":2}`
	}
	if k.abi == 0 {
		k.abi = abi.Version
	}
	return []byte(fmt.Sprintf(`{"name":"conformance","version":"1.0.0","abi":%d,"kind":%q,"hooks":[%s],"grants":%s,"limits":%s}`,
		k.abi, k.kind, strings.Join(names, ","), k.grants, k.limits))
}

// ctxField is the ctx field the host builds (docs/abi.md section 3), with
// the kit's "case" and whatever else the case reads.
func ctxField(kase string, extra ...string) []byte {
	s := `{"model":"kit-model","provider":"kit","stream":false,"drop":[],"case":` + strconv.Quote(kase)
	for i := 0; i+1 < len(extra); i += 2 {
		s += "," + strconv.Quote(extra[i]) + ":" + strconv.Quote(extra[i+1])
	}
	return []byte(s + "}")
}

// Run checks host against docs/abi.md with guest, the kit's guest binary
// (`make wasm` builds it as build/testdata/conformance.wasm). The host must
// let modules reach loopback addresses granted to them (a development
// setting), so the http checks can use a local server.
func Run(t *testing.T, host Host, guest []byte) {
	if len(guest) == 0 {
		t.Fatal("conformance: no guest binary (build abi/conformance/guest: make wasm)")
	}
	r := &runner{host: host, guest: guest}
	t.Run("load refusals", r.refusals)
	t.Run("frames", r.frames)
	t.Run("failing hook", r.failures)
	t.Run("trap", r.trap)
	t.Run("time limit", r.timeLimit)
	t.Run("stream state", r.streamState)
	t.Run("bounded pool", r.pool)
	t.Run("log", r.log)
	t.Run("http", r.http)
	t.Run("chat", r.chat)
	t.Run("chat_batch", r.chatBatch)
	t.Run("chat_reserve", r.chatReserve)
	t.Run("count_tokens", r.countTokens)
	t.Run("kv", r.kv)
	t.Run("embed", r.embed)
	t.Run("vector", r.vector)
	t.Run("result", r.result)
}

type runner struct {
	host  Host
	guest []byte
}

// load loads the guest under k's manifest, closed when the test ends.
func (r *runner) load(t *testing.T, k kit) Module {
	t.Helper()
	m, err := r.host.Load(context.Background(), k.manifest(), r.guest)
	if err != nil {
		t.Fatalf("the kit's guest does not load under %s: %v", k.manifest(), err)
	}
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	return m
}

func (r *runner) refusals(t *testing.T) {
	// patch renames an export in the guest; the replacement has the same
	// length, so the binary stays well-formed.
	patch := func(from, to string) []byte {
		if !bytes.Contains(r.guest, []byte(from)) {
			t.Fatalf("the guest has no %q to rename", from)
		}
		return bytes.ReplaceAll(r.guest, []byte(from), []byte(to))
	}
	cases := []struct {
		name string
		k    kit
		bin  []byte
		want []string // what the refusal must name
	}{
		{"manifest of another ABI version", kit{kind: "adapter", abi: 2}, r.guest, []string{"ABI version 2 is not supported"}},
		{"marker of another ABI version", kit{kind: "adapter"}, patch(abi.ExportMarker, abi.ExportPrefix+"2"), []string{"ABI version 2 is not supported by this host (supports 1)"}},
		{"no marker", kit{kind: "adapter"}, patch(abi.ExportMarker, "switchyard_abx_v1"), []string{abi.ExportMarker}},
		{"no sy_input", kit{kind: "adapter"}, patch(abi.ExportInput, "sy_inpux"), []string{abi.ExportInput}},
		{"no sy_handle", kit{kind: "adapter"}, patch(abi.ExportHandle, "sy_handlx"), []string{abi.ExportHandle}},
		{"log not granted", kit{kind: "adapter", grants: `{"host_functions":["http","chat","count_tokens","kv","embed","vector"]}`}, r.guest, []string{abi.HostLog, "grant"}},
		{"http not granted", kit{kind: "adapter", grants: `{"host_functions":["log","chat","count_tokens","kv","embed","vector"]}`}, r.guest, []string{abi.HostHTTPRequest, "grant"}},
		{"chat not granted", kit{kind: "adapter", grants: `{"host_functions":["log","http","count_tokens","kv","embed","vector"]}`}, r.guest, []string{abi.HostChat, "grant"}},
		{"count_tokens not granted", kit{kind: "adapter", grants: `{"host_functions":["log","http","chat","kv","embed","vector"]}`}, r.guest, []string{abi.HostCountTokens, "grant"}},
		{"kv not granted", kit{kind: "adapter", grants: `{"host_functions":["log","http","chat","count_tokens","embed","vector"]}`}, r.guest, []string{"kv_", "grant"}},
		{"embed not granted", kit{kind: "adapter", grants: `{"host_functions":["log","http","chat","count_tokens","kv","vector"]}`}, r.guest, []string{abi.HostEmbed, "grant"}},
		{"vector not granted", kit{kind: "adapter", grants: `{"host_functions":["log","http","chat","count_tokens","kv","embed"]}`}, r.guest, []string{"vector_", "grant"}},
		{"memory over the cap", kit{kind: "adapter", limits: `{"memory_pages":2}`}, r.guest, []string{"memory", "limit"}},
		{"not WebAssembly", kit{kind: "adapter"}, []byte("\x00asm but not really"), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := r.host.Load(context.Background(), tc.k.manifest(), tc.bin)
			if err == nil {
				_ = m.Close(context.Background())
				t.Fatal("loaded; docs/abi.md says the host refuses it at load")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("refusal %q does not say %q", err, w)
				}
			}
		})
	}
}

// frameInputs are the fields after ctx the frame checks send: empty
// fields, every byte value, a length prefix's worth of zero bytes, and a
// field larger than any buffer a guest starts with.
func frameInputs() [][][]byte {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	return [][][]byte{
		{[]byte(`{"messages":[{"role":"user","content":"hi"}]}`)},
		{{}},
		{all},
		{{0, 0, 0, 0}, {}, []byte("third")},
		{big},
	}
}

// wantFrame is the kit guest's "frame" answer for hook and input fields.
func wantFrame(hook abi.Hook, action string, in [][]byte) [][]byte {
	field := func(i int) []byte {
		if i < len(in) {
			return in[i]
		}
		return []byte{}
	}
	switch hook {
	case abi.HookChatRequest, abi.HookEmbedRequest:
		return [][]byte{[]byte("POST"), []byte("/kit/" + hook.String() + "?fields=" + strconv.Itoa(len(in)+1)),
			[]byte("Authorization: Bearer " + abi.APIKeyPlaceholder + "\nX-Kit: 1\n"), field(0)}
	case abi.HookError:
		return [][]byte{field(0), field(1)}
	case abi.HookPreRequest, abi.HookPostResponse:
		return [][]byte{[]byte(action), field(0), []byte("kit summary")}
	case abi.HookPostChunk:
		return append([][]byte{[]byte(abi.ActionContinue)}, in...)
	}
	return in
}

// eachHook calls check with every hook of the guest, loaded as an adapter
// and as a plugin.
func (r *runner) eachHook(t *testing.T, check func(m Module, hook abi.Hook)) {
	for _, kind := range []string{"adapter", "plugin"} {
		m := r.load(t, kit{kind: kind})
		for _, hook := range hooksOf(kind) {
			check(m, hook)
		}
	}
}

func (r *runner) frames(t *testing.T) {
	r.eachHook(t, func(m Module, hook abi.Hook) {
		if hook == abi.HookChatStreamEvent {
			return // its frame is the stream state check's
		}
		for i, in := range frameInputs() {
			if hook == abi.HookError && len(in) < 2 {
				in = append(in, []byte("upstream says no"))
			}
			action := ""
			if hook == abi.HookPreRequest || hook == abi.HookPostResponse {
				action = []string{abi.ActionContinue, abi.ActionRespond, abi.ActionBlock}[i%3]
			}
			got, err := m.Call(context.Background(), hook, append([][]byte{ctxField("frame", "action", action)}, in...)...)
			if err != nil {
				t.Fatalf("%s, input %d: %v", hook, i, err)
			}
			if want := wantFrame(hook, action, in); !equalFields(got, want) {
				t.Errorf("%s, input %d: the output frame is not the one the guest wrote:\n got %s\nwant %s", hook, i, guestcheck.Show(got), guestcheck.Show(want))
			}
		}
	})
}

func (r *runner) failures(t *testing.T) {
	r.eachHook(t, func(m Module, hook abi.Hook) {
		_, err := m.Call(context.Background(), hook, ctxField("fail"), []byte("{}"), []byte("{}"))
		wantFailure(t, err, "module "+GuestID+" failed in "+hook.String()+": kit failure in "+hook.String())
		// The instance that failed cleanly serves the next call.
		if _, err := m.Call(context.Background(), hook, ctxField("frame"), []byte("{}"), []byte("{}")); err != nil {
			t.Errorf("%s after a failure: %v", hook, err)
		}
	})
}

// wantFailure checks err is a 502 *Failure whose message has prefix want.
func wantFailure(t *testing.T, err error, want string) {
	t.Helper()
	var f *Failure
	if !errors.As(err, &f) {
		t.Fatalf("want a *conformance.Failure (status %d, %q), got %v", http.StatusBadGateway, want, err)
	}
	if f.Status != http.StatusBadGateway || !strings.HasPrefix(f.Message, want) {
		t.Errorf("got %d %q, want %d %q", f.Status, f.Message, http.StatusBadGateway, want)
	}
}

func (r *runner) trap(t *testing.T) {
	m := r.load(t, kit{kind: "adapter", limits: `{"memory_pages":256,"pool_size":1}`})
	for range 2 { // twice: the trapped instance was replaced, not reused
		_, err := m.Call(context.Background(), abi.HookChatRequest, ctxField("panic"), []byte("{}"))
		wantFailure(t, err, "module "+GuestID+" failed in chat_request")
		if _, err := m.Call(context.Background(), abi.HookChatRequest, ctxField("frame"), []byte("{}")); err != nil {
			t.Fatalf("after a trap: %v", err)
		}
	}
}

// timeLimit: a guest that never returns is stopped at its time limit (1 s:
// shorter limits have been seen to interrupt ordinary calls on a loaded
// machine under the race detector).
func (r *runner) timeLimit(t *testing.T) {
	m := r.load(t, kit{kind: "adapter", limits: `{"memory_pages":256,"pool_size":1,"timeout_ms":1000}`})
	_, err := m.Call(context.Background(), abi.HookChatRequest, ctxField("spin"), []byte("{}"))
	wantFailure(t, err, "module "+GuestID+" failed in chat_request")
	if _, err := m.Call(context.Background(), abi.HookChatRequest, ctxField("frame"), []byte("{}")); err != nil {
		t.Fatalf("after a call past the time limit: %v", err)
	}
}

// streamState runs several streams at once, each handing the state the
// guest returned back with its next event, over a pool smaller than the
// number of streams, so events of one stream reach different instances.
func (r *runner) streamState(t *testing.T) {
	m := r.load(t, kit{kind: "adapter"})
	const streams, events = 4, 12
	var wg sync.WaitGroup
	errs := make(chan error, streams)
	for s := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			state := []byte{}
			for e := 1; e <= events; e++ {
				chunks := (s + e) % 3 // zero chunks too
				out, err := m.Call(context.Background(), abi.HookChatStreamEvent, ctxField("frame"), []byte(strconv.Itoa(chunks)), state)
				if err != nil {
					errs <- fmt.Errorf("stream %d event %d: %w", s, e, err)
					return
				}
				want := [][]byte{[]byte(strconv.Itoa(e))}
				for i := range chunks {
					want = append(want, []byte(`{"event":`+strconv.Itoa(e)+`,"chunk":`+strconv.Itoa(i)+`}`))
				}
				if !equalFields(out, want) {
					errs <- fmt.Errorf("stream %d event %d: got %s, want state then chunks %s", s, e, guestcheck.Show(out), guestcheck.Show(want))
					return
				}
				state = out[0]
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// pool makes more concurrent calls than pool_size: callers wait for an
// instance instead of failing.
func (r *runner) pool(t *testing.T) {
	m := r.load(t, kit{kind: "plugin", limits: `{"memory_pages":256,"pool_size":2}`})
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := []byte(`{"n":` + strconv.Itoa(i) + `}`)
			out, err := m.Call(context.Background(), abi.HookPostChunk, ctxField("frame"), body)
			if err != nil {
				errs <- err
				return
			}
			if !equalFields(out, [][]byte{[]byte(abi.ActionContinue), body}) {
				errs <- fmt.Errorf("call %d got %s", i, guestcheck.Show(out))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func (r *runner) log(t *testing.T) {
	m := r.load(t, kit{kind: "adapter"})
	r.host.Logs() // drop what earlier checks logged
	if _, err := m.Call(context.Background(), abi.HookChatRequest, ctxField("log"), []byte("{}")); err != nil {
		t.Fatal(err)
	}
	logs := r.host.Logs()
	want := map[string]int{}
	for level := range 4 {
		want["kit log level "+strconv.Itoa(level)] = level
	}
	var long bool
	for _, l := range logs {
		if l.Module != GuestID {
			t.Errorf("log line %q is tagged %q, want the module %s", l.Message, l.Module, GuestID)
		}
		if level, ok := want[l.Message]; ok {
			if l.Level != level {
				t.Errorf("%q logged at level %d", l.Message, l.Level)
			}
			delete(want, l.Message)
		}
		if strings.HasPrefix(l.Message, "kit long line") {
			long = true
			if len(l.Message) > 4096 {
				t.Errorf("a log line of %d bytes passed; docs/abi.md caps a line at 4 KiB", len(l.Message))
			}
		}
	}
	if len(want) > 0 || !long {
		t.Errorf("lines missing from the log (%v, long line %t); logged: %v", want, long, logs)
	}
}

func (r *runner) http(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		w.Header().Set("X-Kit-Echo", req.Method+" "+req.Header.Get("X-Kit-Request"))
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write(append([]byte("echo:"), b...))
	}))
	defer srv.Close()
	m := r.load(t, kit{kind: "plugin"})
	out, err := m.Call(context.Background(), abi.HookPreRequest,
		ctxField("http", "method", "PUT", "url", srv.URL+"/x", "headers", "X-Kit-Request: yes\n"), []byte("payload"))
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 3 || string(out[0]) != "202" || !strings.Contains(string(out[1]), "X-Kit-Echo: PUT yes") || string(out[2]) != "echo:payload" {
		t.Fatalf("granted call: got %s, want status 202, the echo header and body", guestcheck.Show(out))
	}
	// A domain the manifest does not grant is refused by the host, and the
	// guest learns it was denied (not that the call failed).
	out, err = m.Call(context.Background(), abi.HookPreRequest,
		ctxField("http", "method", "GET", "url", "http://kit.invalid/"), []byte{})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 || string(out[0]) != "denied" {
		t.Fatalf("ungranted domain: got %s, want denied", guestcheck.Show(out))
	}
}

// hostCall runs one of the guest's host-function cases through pre_request
// under env (nil: no env) and returns its output fields.
func (r *runner) hostCall(t *testing.T, m Module, env *Env, kase string, input []byte, extra ...string) [][]byte {
	t.Helper()
	ctx := context.Background()
	if env != nil {
		ctx = r.host.WithEnv(ctx, *env)
	}
	out, err := m.Call(ctx, abi.HookPreRequest, ctxField(kase, extra...), input)
	if err != nil {
		t.Fatalf("%s: %v", kase, err)
	}
	return out
}

// wantCode checks out is the guest's report of a failed host call with code.
func wantCode(t *testing.T, what string, out [][]byte, code int64) {
	t.Helper()
	if len(out) != 3 || string(out[0]) != "error" || string(out[1]) != strconv.FormatInt(code, 10) || len(out[2]) == 0 {
		t.Errorf("%s: got %s, want the host's code %d and a message", what, guestcheck.Show(out), code)
	}
}

func (r *runner) chat(t *testing.T) {
	m := r.load(t, kit{kind: "plugin"})
	var got []byte
	env := Env{Account: "kit-chat", Chat: func(_ context.Context, body []byte) (int, []byte, error) {
		got = append([]byte(nil), body...)
		return http.StatusOK, []byte(`{"choices":[{"message":{"role":"assistant","content":"sub"}}]}`), nil
	}}
	body := []byte(`{"model":"kit/model","messages":[{"role":"user","content":"judge this"}]}`)
	out := r.hostCall(t, m, &env, "chat", body)
	if len(out) != 3 || string(out[0]) != "ok" || string(out[1]) != "200" || !strings.Contains(string(out[2]), `"content":"sub"`) {
		t.Errorf("chat: got %s, want ok, 200 and the sub-request's body", guestcheck.Show(out))
	}
	if !bytes.Equal(got, body) {
		t.Errorf("the sub-request got %q, want the module's body %q", got, body)
	}
	// An error status is a result, not a failure: the module reads it.
	env.Chat = func(context.Context, []byte) (int, []byte, error) {
		return http.StatusPaymentRequired, []byte(`{"error":{"code":402,"message":"no credits"}}`), nil
	}
	if out := r.hostCall(t, m, &env, "chat", body); len(out) != 3 || string(out[1]) != "402" {
		t.Errorf("chat answered 402: got %s, want ok, 402 and the error body", guestcheck.Show(out))
	}
	env.Chat = func(context.Context, []byte) (int, []byte, error) { return 0, nil, errors.New("depth limit") }
	wantCode(t, "chat that could not run", r.hostCall(t, m, &env, "chat", body), abi.HostFailed)
	// Outside a request (no env, or no chat function) chat is denied.
	wantCode(t, "chat without an env", r.hostCall(t, m, nil, "chat", body), abi.HostDenied)
	wantCode(t, "chat with no chat function", r.hostCall(t, m, &Env{Account: "kit-chat"}, "chat", body), abi.HostDenied)
}

// chatBatch checks chat_batch: the bodies run as sub-requests at the same
// time (each call waits until all have started: a host that runs them one
// after another fails them), and the results come back in order.
func (r *runner) chatBatch(t *testing.T) {
	m := r.load(t, kit{kind: "plugin"})
	const n = 3
	var mu sync.Mutex
	started := 0
	all := make(chan struct{})
	env := Env{Account: "kit-chat", Chat: func(ctx context.Context, body []byte) (int, []byte, error) {
		mu.Lock()
		if started++; started == n {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
		case <-time.After(10 * time.Second):
			return http.StatusGatewayTimeout, []byte(`{"error":{"code":504,"message":"the other calls of the batch never started"}}`), nil
		}
		return http.StatusOK, []byte(`{"choices":[{"message":{"role":"assistant","content":"re: ` + string(body) + `"}}]}`), nil
	}}
	bodies := [][]byte{[]byte("a"), []byte("b"), []byte("c")}
	out, err := m.Call(r.host.WithEnv(context.Background(), env), abi.HookPreRequest, append([][]byte{ctxField("chat_batch")}, bodies...)...)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1+2*n || string(out[0]) != "ok" {
		t.Fatalf("chat_batch: got %s, want ok and a status and body per request", guestcheck.Show(out))
	}
	for i, b := range bodies {
		if string(out[1+2*i]) != "200" || !strings.Contains(string(out[2+2*i]), "re: "+string(b)) {
			t.Errorf("chat_batch result %d: status %s body %s (the calls ran one at a time, or out of order)", i, out[1+2*i], out[2+2*i])
		}
	}
	tooMany := make([][]byte, abi.MaxChatBatch+1)
	for i := range tooMany {
		tooMany[i] = []byte("x")
	}
	out, err = m.Call(r.host.WithEnv(context.Background(), env), abi.HookPreRequest, append([][]byte{ctxField("chat_batch")}, tooMany...)...)
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, "chat_batch of too many", out, abi.HostFailed)
	wantCode(t, "chat_batch without an env", r.hostCall(t, m, nil, "chat_batch", []byte("x")), abi.HostDenied)
}

// chatReserve checks chat_reserve hands the plan to the host and its
// answer back, an error status included.
func (r *runner) chatReserve(t *testing.T) {
	m := r.load(t, kit{kind: "plugin"})
	var got []byte
	env := Env{Account: "kit-chat", Chat: func(context.Context, []byte) (int, []byte, error) { return 200, []byte("{}"), nil },
		Reserve: func(_ context.Context, plan []byte) (int, []byte, int, error) {
			got = append([]byte(nil), plan...)
			return http.StatusOK, []byte(`{"held":0.25,"calls":2}`), 2, nil
		}}
	plan := []byte(`{"calls":[{"model":"kit/model","prompt_tokens":10,"max_tokens":5}]}`)
	out := r.hostCall(t, m, &env, "chat_reserve", plan)
	if len(out) != 3 || string(out[0]) != "ok" || string(out[1]) != "200" || !strings.Contains(string(out[2]), `"held":0.25`) || !bytes.Equal(got, plan) {
		t.Errorf("chat_reserve: got %s (host saw %q)", guestcheck.Show(out), got)
	}
	env.Reserve = func(context.Context, []byte) (int, []byte, int, error) {
		return http.StatusPaymentRequired, []byte(`{"error":{"code":402,"message":"no credits"}}`), 0, nil
	}
	if out := r.hostCall(t, m, &env, "chat_reserve", plan); len(out) != 3 || string(out[1]) != "402" {
		t.Errorf("chat_reserve refused: got %s, want ok, 402 and the error body", guestcheck.Show(out))
	}
	wantCode(t, "chat_reserve with no reserve function", r.hostCall(t, m, &Env{Account: "kit-chat", Chat: env.Chat}, "chat_reserve", plan), abi.HostDenied)
}

func (r *runner) countTokens(t *testing.T) {
	m := r.load(t, kit{kind: "plugin"})
	count := func(text string) int {
		out := r.hostCall(t, m, nil, "count_tokens", []byte(text), "tok_model", "openai/gpt-4o")
		if len(out) != 2 || string(out[0]) != "ok" {
			t.Fatalf("count_tokens: got %s", guestcheck.Show(out))
		}
		n, err := strconv.Atoi(string(out[1]))
		if err != nil {
			t.Fatalf("count_tokens: %q is not a decimal count", out[1])
		}
		return n
	}
	short, long := count("Hello, world."), count(strings.Repeat("Hello, world. ", 50))
	if short <= 0 || long <= short*10 {
		t.Errorf("count_tokens: %d tokens for a sentence and %d for it 50 times", short, long)
	}
	if n := count(""); n != 0 {
		t.Errorf("count_tokens of nothing: %d", n)
	}
}

func (r *runner) kv(t *testing.T) {
	m := r.load(t, kit{kind: "plugin"})
	a, b := &Env{Account: "kit-kv-a"}, &Env{Account: "kit-kv-b"}
	get := func(env *Env, key string) [][]byte { return r.hostCall(t, m, env, "kv_get", nil, "key", key) }
	put := func(env *Env, key, val, ttl string) [][]byte {
		return r.hostCall(t, m, env, "kv_put", []byte(val), "key", key, "ttl", ttl)
	}
	if out := get(a, "greeting"); len(out) != 1 || string(out[0]) != "missing" {
		t.Fatalf("a key never written: got %s, want missing", guestcheck.Show(out))
	}
	if out := put(a, "greeting", "hello \x00 world", "3600"); len(out) != 1 || string(out[0]) != "ok" {
		t.Fatalf("kv_put: got %s", guestcheck.Show(out))
	}
	if out := get(a, "greeting"); len(out) != 2 || string(out[0]) != "found" || string(out[1]) != "hello \x00 world" {
		t.Errorf("kv_get after kv_put: got %s, want the value byte for byte", guestcheck.Show(out))
	}
	if out := get(b, "greeting"); len(out) != 1 || string(out[0]) != "missing" {
		t.Errorf("another account read the key: got %s", guestcheck.Show(out))
	}
	if out := put(a, "greeting", "", "0"); len(out) != 1 || string(out[0]) != "ok" {
		t.Fatalf("kv_put of an empty value: got %s", guestcheck.Show(out))
	}
	if out := get(a, "greeting"); len(out) != 1 || string(out[0]) != "missing" {
		t.Errorf("an empty value deletes the key: got %s", guestcheck.Show(out))
	}
	// A full store answers HostQuota. The host's quota for the kit must be
	// below what this writes (1024 values of 16 KiB).
	out := r.hostCall(t, m, &Env{Account: "kit-kv-quota"}, "kv_fill", bytes.Repeat([]byte("q"), 16<<10), "max", "1024")
	if n, _ := strconv.Atoi(string(out[0])); n == 0 || len(out) != 4 {
		t.Fatalf("kv_fill: got %s, want some puts, then the quota code", guestcheck.Show(out))
	}
	wantCode(t, "kv_put over the quota", out[1:], abi.HostQuota)
}

func (r *runner) result(t *testing.T) {
	m := r.load(t, kit{kind: "plugin"})
	out := r.hostCall(t, m, nil, "result_small", []byte("Hello, world."), "tok_model", "openai/gpt-4o")
	if len(out) != 4 {
		t.Fatalf("result_small: got %s", guestcheck.Show(out))
	}
	full, _ := strconv.Atoi(string(out[0]))
	fields, err := abi.Fields(nil, out[3])
	if err != nil || len(fields) != 1 || full != len(out[3]) || string(out[2]) != string(out[0]) {
		t.Fatalf("result with a 1-byte buffer must return the full size (%s) and a second call copy it all (%q, %d bytes)", out[0], out[3], len(out[3]))
	}
	if len(out[1]) != 1 || out[1][0] != out[3][0] {
		t.Errorf("result with a 1-byte buffer copied %q, want the first byte %q", out[1], out[3][:1])
	}
}

func equalFields(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// embed checks the embed host function hands the module's body to the
// request's embeddings sub-request function and returns its status and
// body (an error status is a result); outside a request it is denied.
func (r *runner) embed(t *testing.T) {
	m := r.load(t, kit{kind: "plugin"})
	var got []byte
	env := Env{Account: "kit-embed", Embed: func(_ context.Context, body []byte) (int, []byte, error) {
		got = append([]byte(nil), body...)
		return http.StatusOK, []byte(`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.6,0.8]}]}`), nil
	}}
	body := []byte(`{"model":"kit/embedder","input":"what is the capital of France?"}`)
	out := r.hostCall(t, m, &env, "embed", body)
	if len(out) != 3 || string(out[0]) != "ok" || string(out[1]) != "200" || !strings.Contains(string(out[2]), `"embedding":[0.6,0.8]`) {
		t.Errorf("embed: got %s, want ok, 200 and the sub-request's body", guestcheck.Show(out))
	}
	if !bytes.Equal(got, body) {
		t.Errorf("the sub-request got %q, want the module's body %q", got, body)
	}
	env.Embed = func(context.Context, []byte) (int, []byte, error) {
		return http.StatusTooManyRequests, []byte(`{"error":{"code":429,"message":"slow down"}}`), nil
	}
	if out := r.hostCall(t, m, &env, "embed", body); len(out) != 3 || string(out[1]) != "429" {
		t.Errorf("embed answered 429: got %s, want ok, 429 and the error body", guestcheck.Show(out))
	}
	env.Embed = func(context.Context, []byte) (int, []byte, error) { return 0, nil, errors.New("no route") }
	wantCode(t, "embed that could not run", r.hostCall(t, m, &env, "embed", body), abi.HostFailed)
	wantCode(t, "embed without an env", r.hostCall(t, m, nil, "embed", body), abi.HostDenied)
	wantCode(t, "embed with no embed function", r.hostCall(t, m, &Env{Account: "kit-embed"}, "embed", body), abi.HostDenied)
}

// vector checks vector_put and vector_search: a vector put is found by a
// similar query of the same tag in the same partition of the same
// account (cosine, normalised by the host), not by another tag, another
// partition or another account, nor below the least similarity asked;
// an empty vector deletes; a zero vector is refused.
func (r *runner) vector(t *testing.T) {
	m := r.load(t, kit{kind: "plugin"})
	a, b := &Env{Account: "kit-vec-a"}, &Env{Account: "kit-vec-b"}
	put := func(env *Env, part, id, tag, vec string) [][]byte {
		return r.hostCall(t, m, env, "vector_put", []byte(vec), "partition", part, "id", id, "tag", tag, "ttl", "3600")
	}
	search := func(env *Env, part, tag, vec, min string) [][]byte {
		return r.hostCall(t, m, env, "vector_search", []byte(vec), "partition", part, "tag", tag, "min", min)
	}
	if out := put(a, "p", "north", "t", "0,2,0"); len(out) != 2 || string(out[0]) != "ok" || string(out[1]) != "0" {
		t.Fatalf("vector_put: got %s, want ok and 0 evicted", guestcheck.Show(out))
	}
	put(a, "p", "east", "t", "3,0,0")
	out := search(a, "p", "t", "0.1,1,0", "0.9")
	if len(out) != 4 || string(out[0]) != "found" || string(out[1]) != "north" {
		t.Fatalf("vector_search: got %s, want found north", guestcheck.Show(out))
	}
	if sim, err := strconv.ParseFloat(string(out[2]), 64); err != nil || sim < 0.99 || sim > 1 {
		t.Errorf("similarity %q, want the cosine of the query and north (0.995)", out[2])
	}
	if _, err := strconv.Atoi(string(out[3])); err != nil {
		t.Errorf("age %q is not decimal seconds", out[3])
	}
	for what, out := range map[string][][]byte{
		"below the least similarity": search(a, "p", "t", "1,1,0", "0.9"),
		"another tag":                search(a, "p", "u", "0,1,0", "0.5"),
		"another partition":          search(a, "q", "t", "0,1,0", "0.5"),
		"another account":            search(b, "p", "t", "0,1,0", "0.5"),
	} {
		if len(out) != 1 || string(out[0]) != "missing" {
			t.Errorf("%s: got %s, want missing", what, guestcheck.Show(out))
		}
	}
	if out := put(a, "p", "north", "t", ""); len(out) != 2 || string(out[0]) != "ok" {
		t.Fatalf("vector_put of an empty vector: got %s", guestcheck.Show(out))
	}
	if out := search(a, "p", "t", "0,1,0", "0.5"); len(out) != 1 || string(out[0]) != "missing" {
		t.Errorf("an empty vector deletes the entry: got %s", guestcheck.Show(out))
	}
	wantCode(t, "vector_put of a zero vector", put(a, "p", "zero", "t", "0,0,0"), abi.HostFailed)
}
