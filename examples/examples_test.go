// Tests and benchmarks of the example plugins: the same keyword guardrail
// in Go (native ABI), C (native ABI), AssemblyScript (Extism), Rust
// (native ABI, with sdk/rust) and AssemblyScript (native ABI, with
// sdk/assemblyscript), loaded
// the way the gateway loads them. `make -C examples` builds the modules.
package examples_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/abi/manifest"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/switchyard/switchyard/host/wasm"
)

var examples = []string{"go-native-plugin", "c-native-plugin", "as-extism-plugin", "rust-native-plugin", "as-native-plugin"}

func read(t testing.TB, name string) (*manifest.Manifest, []byte) {
	t.Helper()
	bin, err := os.ReadFile(filepath.Join("..", "build", "examples", name+".wasm"))
	if err != nil {
		t.Fatalf("read the example module (run `make -C examples` first): %v", err)
	}
	mf, err := os.ReadFile(filepath.Join(name, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Parse(mf)
	if err != nil {
		t.Fatal(err)
	}
	return m, bin
}

func load(t testing.TB, name string, edit func(*manifest.Manifest)) *wasm.Module {
	t.Helper()
	m, bin := read(t, name)
	if edit != nil {
		edit(m)
	}
	// A compilation cache shared by the tests: the Go module takes a second
	// to compile (much more under -race), from the cache a tenth of that.
	e := wasm.NewEngine(wasm.Config{CacheDir: filepath.Join(os.TempDir(), "switchyard-test-examples")})
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	mod, err := e.Load(context.Background(), m, bin)
	if err != nil {
		t.Fatal(err)
	}
	return mod
}

func ctxJSON(config string) []byte {
	return []byte(`{"config":` + config + `,"model":"openai/gpt-4o","scope":"global"}`)
}

const guardConfig = `{"id":"keyword-guardrail","blocked":["secret-project","Project \"X\"","café"]}`

func TestGuardrail(t *testing.T) {
	for _, name := range examples {
		t.Run(name, func(t *testing.T) {
			mod := load(t, name, nil)
			blocked := []byte(`{"model":"openai/gpt-4o","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"Tell me about the SECRET-PROJECT roadmap"}]}`)
			out, err := mod.Call(context.Background(), abi.HookPreRequest, ctxJSON(guardConfig), blocked)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(out.Field(0)); got != abi.ActionBlock {
				t.Fatalf("action %q, want block", got)
			}
			var body struct {
				Code     int    `json:"code"`
				Message  string `json:"message"`
				Metadata struct {
					Patterns []string `json:"patterns"`
				} `json:"metadata"`
			}
			if err := json.Unmarshal(out.Field(1), &body); err != nil {
				t.Fatalf("block body %s: %v", out.Field(1), err)
			}
			if body.Code != 403 || body.Message == "" || len(body.Metadata.Patterns) != 1 || body.Metadata.Patterns[0] != "secret-project" {
				t.Fatalf("block body %s", out.Field(1))
			}
			if !json.Valid(out.Field(2)) {
				t.Fatalf("summary %s is not JSON", out.Field(2))
			}

			clean := []byte(`{"model":"openai/gpt-4o","messages":[{"role":"user","content":"Tell me about the public roadmap"}]}`)
			out, err = mod.Call(context.Background(), abi.HookPreRequest, ctxJSON(guardConfig), clean)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(out.Field(0)); got != abi.ActionContinue || len(out.Field(1)) != 0 {
				t.Fatalf("got %q with body %q, want continue with the body unchanged", got, out.Field(1))
			}

			// A malformed request is the module's reported failure: a 502.
			_, err = mod.Call(context.Background(), abi.HookPreRequest, ctxJSON(guardConfig), []byte(`{"messages":[{"content":"x"`))
			if ae := apierr.From(err); err == nil || ae.Status != 502 || !strings.Contains(ae.Message, "not valid JSON") {
				t.Fatalf("malformed request: %v", err)
			}
			// Every call ran on the one instance created at load.
			if mod.Live() != 1 {
				t.Fatalf("%d live instances after sequential calls, want 1", mod.Live())
			}
		})
	}
}

// TestSameTransform runs tricky inputs through the five modules: their
// outputs must be byte-identical.
func TestSameTransform(t *testing.T) {
	mods := map[string]*wasm.Module{}
	for _, name := range examples {
		mods[name] = load(t, name, nil)
	}
	long := strings.Repeat(`{"role":"user","content":"lorem ipsum dolor sit amet "},`, 300)
	cases := []struct {
		name, config, body string
		block              bool
	}{
		{"no config", `{"id":"g"}`, `{"messages":[{"role":"user","content":"secret-project"}]}`, false},
		{"empty list", `{"id":"g","blocked":[]}`, `{"messages":[{"role":"user","content":"secret-project"}]}`, false},
		{"case-insensitive", guardConfig, `{"messages":[{"role":"user","content":"Secret-Project"}]}`, true},
		{"escaped in the request", guardConfig, `{"messages":[{"role":"user","content":"secret\u002dproject and Project \"x\""}]}`, true},
		{"unicode", guardConfig, `{"messages":[{"role":"user","content":"un CAF\u00c9? non: un café"}]}`, true},
		{"surrogate pair", `{"blocked":["😀 hi"]}`, `{"messages":[{"role":"user","content":"\ud83d\ude00 HI"}]}`, true},
		{"content parts", guardConfig, `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x/secret-project.png"}},{"type":"text","text":"what is secret-project?"}]}]}`, true},
		{"only in a URL", guardConfig, `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x/secret-project.png"}}]}]}`, false},
		{"only in a name", guardConfig, `{"messages":[{"role":"user","name":"secret-project","content":"hi"}]}`, false},
		{"outside messages", guardConfig, `{"user":"secret-project","metadata":{"content":"secret-project"},"messages":[{"role":"user","content":"hi"}]}`, false},
		{"several, in config order", guardConfig, `{"messages":[{"role":"user","content":"café and project \"X\" and secret-project"}],"temperature":0.5,"stream":true,"stop":null}`, true},
		{"empty and odd patterns", `{"blocked":["",42,"lorem",null]}`, `{"messages":[` + long + `{"role":"user","content":"end"}]}`, true},
		{"large request", guardConfig, `{"messages":[{"role":"user","content":"` + strings.Repeat(`word \"quoted\" `, 8000) + ` SECRET-project"}]}`, true},
		{"whitespace", guardConfig, " {\n \"messages\" : [ { \"role\" : \"user\" , \"content\" : \"x secret-project\" } ] } ", true},
		{"malformed ctx", `{"blocked":["a"`, `{"messages":[]}`, false},
		{"malformed request", guardConfig, `{"messages":[{"content":"x"}`, false},
		{"not an object", guardConfig, `[1,2]`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var first, firstName string
			for _, name := range examples {
				out, err := mods[name].Call(context.Background(), abi.HookPreRequest, ctxJSON(tc.config), []byte(tc.body))
				got := ""
				if err != nil {
					got = "error: " + strings.TrimPrefix(apierr.From(err).Message, "module "+mods[name].ID+" ")
				} else {
					got = strings.Join(func() []string {
						var s []string
						for _, f := range out.Fields {
							s = append(s, string(f))
						}
						return s
					}(), " | ")
				}
				if firstName == "" {
					first, firstName = got, name
					if tc.block != strings.HasPrefix(got, "block") {
						t.Fatalf("%s: %s", name, got)
					}
					continue
				}
				if got != first {
					t.Fatalf("outputs differ:\n%s: %s\n%s: %s", firstName, first, name, got)
				}
			}
			t.Logf("%s", first)
		})
	}
}

// request1KB is a chat request of about 1 KB with no blocked pattern: the
// guardrail scans all of it and lets it through, the common case.
func request1KB() []byte {
	var b strings.Builder
	b.WriteString(`{"model":"openai/gpt-4o","messages":[{"role":"system","content":"You are a helpful assistant. Answer briefly and cite your sources."}`)
	for b.Len() < 900 {
		b.WriteString(`,{"role":"user","content":"What is the weather like in Paris today? Please include the forecast."}`)
	}
	b.WriteString(`],"temperature":0.7,"max_tokens":256}`)
	return []byte(b.String())
}

// BenchmarkPluginCall is the per-call cost of each path, pre_request on a
// 1 KB request, as shipped (a 1 s time limit: preemption checks on) and
// trusted (no time limit).
func BenchmarkPluginCall(b *testing.B) {
	body := request1KB()
	ctx := ctxJSON(guardConfig)
	names := map[string]string{"go-native-plugin": "go-native", "c-native-plugin": "c-native", "as-extism-plugin": "as-extism", "rust-native-plugin": "rust-native", "as-native-plugin": "as-native"}
	for _, variant := range []string{"", "/no-timeout"} {
		for _, name := range examples {
			b.Run(names[name]+variant, func(b *testing.B) {
				mod := load(b, name, func(m *manifest.Manifest) {
					if variant != "" {
						m.Limits.TimeoutMS = 0
					}
				})
				b.SetBytes(int64(len(body)))
				b.ReportAllocs()
				for b.Loop() {
					out, err := mod.Call(context.Background(), abi.HookPreRequest, ctx, body)
					if err != nil || string(out.Field(0)) != abi.ActionContinue {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkPluginLoad is the cost of loading each module: compiling it
// (cold, or from the on-disk cache) and creating its first instance. It
// reports the module size and the host heap one loaded module holds.
func BenchmarkPluginLoad(b *testing.B) {
	names := map[string]string{"go-native-plugin": "go-native", "c-native-plugin": "c-native", "as-extism-plugin": "as-extism", "rust-native-plugin": "rust-native", "as-native-plugin": "as-native"}
	for _, name := range examples {
		m, bin := read(b, name)
		for _, cached := range []bool{false, true} {
			label := names[name] + "/cold"
			dir := ""
			if cached {
				label = names[name] + "/cached"
				dir = b.TempDir()
				e := wasm.NewEngine(wasm.Config{CacheDir: dir})
				if _, err := e.Load(context.Background(), m, bin); err != nil {
					b.Fatal(err)
				}
				_ = e.Close(context.Background())
			}
			b.Run(label, func(b *testing.B) {
				var heap int64
				for b.Loop() {
					var before, after runtime.MemStats
					b.StopTimer()
					runtime.GC()
					runtime.ReadMemStats(&before)
					b.StartTimer()
					e := wasm.NewEngine(wasm.Config{CacheDir: dir})
					mod, err := e.Load(context.Background(), m, bin)
					if err != nil {
						b.Fatal(err)
					}
					// One call, so the instance has the memory it keeps.
					if _, err := mod.Call(context.Background(), abi.HookPreRequest, ctxJSON(guardConfig), request1KB()); err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					runtime.GC()
					runtime.ReadMemStats(&after)
					heap += int64(after.HeapAlloc) - int64(before.HeapAlloc)
					_ = e.Close(context.Background())
					b.StartTimer()
				}
				b.ReportMetric(float64(len(bin)), "module-B")
				b.ReportMetric(float64(heap)/float64(b.N)/1024, "heap-KiB")
			})
		}
	}
}

// TestConcurrentCalls checks the pool under concurrent calls for each path.
func TestConcurrentCalls(t *testing.T) {
	body := request1KB()
	for _, name := range examples {
		t.Run(name, func(t *testing.T) {
			mod := load(t, name, nil)
			done := make(chan error)
			for range 4 {
				go func() {
					var err error
					for range 50 {
						if _, err = mod.Call(context.Background(), abi.HookPreRequest, ctxJSON(guardConfig), body); err != nil {
							break
						}
					}
					done <- err
				}()
			}
			deadline := time.After(60 * time.Second)
			for range 4 {
				select {
				case err := <-done:
					if err != nil {
						t.Fatal(err)
					}
				case <-deadline:
					t.Fatal("calls did not finish")
				}
			}
			if l := mod.Live(); l < 1 || l > mod.Manifest.Limits.PoolSize {
				t.Fatalf("%d live instances", l)
			}
		})
	}
}

// TestThroughTheGateway publishes each example through the module API of a
// real gateway and runs it from a chat request's plugins array.
func TestThroughTheGateway(t *testing.T) {
	g, err := gatewaytest.Start(gatewaytest.Options{Quiet: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	for _, name := range examples {
		t.Run(name, func(t *testing.T) {
			m, bin := read(t, name)
			mf, err := os.ReadFile(filepath.Join(name, "manifest.json"))
			if err != nil {
				t.Fatal(err)
			}
			resp, body, err := g.Request("POST", "/modules", fmt.Sprintf(`{"manifest":%s,"wasm":%q,"activate":true}`, mf, base64.StdEncoding.EncodeToString(bin)))
			if err != nil || resp.StatusCode != 201 {
				t.Fatalf("publish: %v %s", err, body)
			}
			chat := func(content string) (int, map[string]any) {
				req := fmt.Sprintf(`{"model":"test/chat","messages":[{"role":"user","content":%q}],"plugins":[{"id":%q,"blocked":["secret-project"]}]}`, content, m.Name)
				resp, body, err := g.Request("POST", "/chat/completions", req)
				if err != nil {
					t.Fatal(err)
				}
				var v map[string]any
				_ = json.Unmarshal(body, &v)
				return resp.StatusCode, v
			}
			status, v := chat("what is Secret-Project?")
			e, _ := v["error"].(map[string]any)
			md, _ := e["metadata"].(map[string]any)
			if status != 403 || md["plugin"] != m.Name || fmt.Sprint(md["patterns"]) != "[secret-project]" {
				t.Fatalf("blocked request: %d %v", status, v)
			}
			if status, v := chat("what is the weather?"); status != 200 {
				t.Fatalf("clean request: %d %v", status, v)
			}
		})
	}
}
