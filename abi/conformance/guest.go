package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/abi"
)

// Typical inputs of each hook, the way the gateway sends them.
var (
	sampleCtx     = []byte(`{"model":"kit-model","provider":"kit","stream":false,"drop":[]}`)
	sampleChat    = []byte(`{"model":"kit/model","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hello"}],"max_tokens":16}`)
	sampleResult  = []byte(`{"id":"chatcmpl-kit","object":"chat.completion","created":1700000000,"model":"kit-model","choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`)
	sampleChunk   = []byte(`{"id":"chatcmpl-kit","object":"chat.completion.chunk","created":1700000000,"model":"kit-model","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}`)
	sampleEmbed   = []byte(`{"model":"kit/embed","input":["Hello"]}`)
	sampleVectors = []byte(`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,0.2]}],"model":"kit-embed","usage":{"prompt_tokens":1,"total_tokens":1}}`)
	sampleError   = []byte(`{"error":{"message":"rate limited","type":"rate_limit_error"}}`)
)

// sampleInput is what the gateway would pass hook, after ctx.
func sampleInput(hook abi.Hook) [][]byte {
	switch hook {
	case abi.HookChatRequest, abi.HookPreRequest:
		return [][]byte{sampleChat}
	case abi.HookChatResponse, abi.HookPostResponse:
		return [][]byte{sampleResult}
	case abi.HookChatStreamEvent:
		return [][]byte{sampleChunk, {}}
	case abi.HookPostChunk:
		return [][]byte{sampleChunk}
	case abi.HookEmbedRequest:
		return [][]byte{sampleEmbed}
	case abi.HookEmbedResponse:
		return [][]byte{sampleVectors}
	case abi.HookError:
		return [][]byte{[]byte("429"), sampleError}
	case abi.HookToolCall:
		return [][]byte{[]byte("web_search"), []byte(`{"query":"switchyard gateway"}`)}
	}
	return nil
}

// CheckGuest checks a module (its manifest JSON and binary) on host: it
// must load, and every hook it declares must answer typical input in the
// shape docs/abi.md gives that hook's output. A hook may fail (status byte
// 1) on input it does not accept, with a message; the host then answers 502.
// A passthrough hook is skipped by the host, so a module need not implement
// it, but if it does, it must return its input unchanged.
func CheckGuest(t *testing.T, host Host, manifestJSON, wasm []byte) {
	results, err := GuestReport(context.Background(), host, manifestJSON, wasm)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if r.Input == "" { // a hook name the ABI does not have
			t.Error(r.Problem)
			continue
		}
		t.Run(r.Hook+"/"+r.Input, func(t *testing.T) {
			if r.Note != "" {
				t.Log(r.Note)
			}
			if r.Problem != "" {
				t.Error(r.Problem)
			}
		})
	}
}

// Result is the verdict on one call of the guest check.
type Result struct {
	Hook  string
	Input string // "typical" or "large" (over 64 KiB)
	Bytes int    // the input's size
	// Problem is what is wrong ("" when the call passed); Note is worth
	// showing even so (the hook refused the sample input).
	Problem, Note string
	Time          time.Duration
}

// GuestReport runs the guest check (CheckGuest) and returns a verdict per
// call instead of failing a test: `syctl plugin test` prints it. An error
// means the module could not be checked at all (its manifest, or a host
// that refuses to load it, with the reason).
func GuestReport(ctx context.Context, host Host, manifestJSON, wasm []byte) ([]Result, error) {
	var mf struct {
		Hooks       []string `json:"hooks"`
		Passthrough []string `json:"passthrough"`
	}
	if err := json.Unmarshal(manifestJSON, &mf); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	m, err := host.Load(ctx, manifestJSON, wasm)
	if err != nil {
		return nil, fmt.Errorf("does not load: %w", err)
	}
	defer m.Close(ctx)
	passthrough := map[string]bool{}
	for _, h := range mf.Passthrough {
		passthrough[h] = true
	}
	var out []Result
	for _, name := range mf.Hooks {
		hook, ok := abi.HookByName(name)
		if !ok {
			out = append(out, Result{Hook: name, Problem: fmt.Sprintf("unknown hook %q", name)})
			continue
		}
		for _, size := range []string{"typical", "large"} {
			in := sampleInput(hook)
			if size == "large" {
				in = largeInput(hook)
			}
			start := time.Now()
			problem, note := callProblem(m, hook, in, passthrough[name])
			out = append(out, Result{Hook: name, Input: size, Bytes: inputSize(in), Problem: problem, Note: note, Time: time.Since(start)})
		}
	}
	return out, nil
}

// callProblem calls hook on in and judges the answer. The hook may
// refuse the input with a message (status byte 1, a 502); it must not
// trap, run out of time, or say it does not implement a hook its manifest
// declares. It returns what is wrong ("" if nothing), and a note worth
// showing (a refusal of the sample input).
func callProblem(m Module, hook abi.Hook, in [][]byte, passthrough bool) (problem, note string) {
	out, err := m.Call(context.Background(), hook, append([][]byte{sampleCtx}, in...)...)
	var f *Failure
	switch {
	case errors.As(err, &f):
		// "not implemented": the Go SDK's answer for a hook with no
		// handler; "unknown function": Extism's, for a missing export.
		missing := strings.Contains(f.Message, "not implemented") || strings.Contains(f.Message, "unknown function")
		switch {
		case missing && passthrough:
			return "", "" // the host never calls a passthrough hook: it need not exist
		case missing:
			return fmt.Sprintf("the manifest declares %s, which the module does not implement: %s", hook, f.Message), ""
		case f.Broke:
			return fmt.Sprintf("the call broke (a trap or the time limit) on %d bytes of input: %s", inputSize(in), f.Message), ""
		case f.Status != http.StatusBadGateway || f.Message == "":
			return fmt.Sprintf("a failed hook must give 502 and a message, got %d %q", f.Status, f.Message), ""
		case !passthrough:
			return "", "refused the sample input: " + f.Message
		}
		return "", ""
	case err != nil:
		return fmt.Sprintf("call: %v", err), ""
	}
	if passthrough {
		if hook == abi.HookChatStreamEvent {
			if len(out) != 2 || !bytes.Equal(out[1], in[0]) {
				return "passthrough hook changed its input: got " + show(out), ""
			}
		} else if len(out) != 1 || !bytes.Equal(out[0], in[0]) {
			return "passthrough hook changed its input: got " + show(out), ""
		}
		return "", ""
	}
	if msg := checkOutput(hook, out); msg != "" {
		return msg + ": " + show(out), ""
	}
	return "", ""
}

func inputSize(in [][]byte) int {
	n := 0
	for _, f := range in {
		n += len(f)
	}
	return n
}

// largeText is the text of the large inputs: past 64 KiB, so a guest that
// misreads a frame's length (one byte of it, or two) reads garbage, and
// every byte a JSON string may carry unescaped (UTF-8 of 2, 3 and 4
// bytes), with the escapes it must keep (the text goes into JSON strings
// as it is: it is already escaped).
var largeText = func() string {
	unit := `Lorem ipsum — «ÿ» 漢字 🙂 \"quoted\" back\\slash tab\t. `
	var b strings.Builder
	for b.Len() < 80<<10 {
		b.WriteString(unit)
	}
	return b.String()
}()

// largeInput is sampleInput with a text of over 64 KiB where the hook's
// input has one (a message, a completion, a chunk, an error message).
func largeInput(hook abi.Hook) [][]byte {
	in := sampleInput(hook)
	grow := func(b []byte, small string) []byte {
		return bytes.Replace(b, []byte(small), []byte(largeText), 1)
	}
	out := make([][]byte, len(in))
	copy(out, in)
	switch hook {
	case abi.HookChatRequest, abi.HookPreRequest:
		out[0] = grow(in[0], "Hello")
	case abi.HookChatResponse, abi.HookPostResponse, abi.HookChatStreamEvent, abi.HookPostChunk:
		out[0] = grow(in[0], "Hi")
	case abi.HookEmbedRequest:
		out[0] = grow(in[0], "Hello")
	case abi.HookError:
		out[1] = grow(in[1], "rate limited")
	case abi.HookToolCall:
		out[1] = grow(in[1], "switchyard gateway")
	}
	return out
}

// checkOutput says what is wrong with a hook's output fields ("" if
// nothing is).
func checkOutput(hook abi.Hook, out [][]byte) string {
	isObject := func(b []byte) bool {
		var v map[string]json.RawMessage
		return json.Unmarshal(b, &v) == nil && v != nil
	}
	has := func(b []byte, member string) bool {
		var v map[string]json.RawMessage
		_ = json.Unmarshal(b, &v)
		_, ok := v[member]
		return ok
	}
	switch hook {
	case abi.HookChatRequest, abi.HookEmbedRequest:
		if len(out) != 4 {
			return "want 4 fields: method, path, headers, body"
		}
		if method := string(out[0]); method == "" || strings.ToUpper(method) != method || strings.ContainsAny(method, " \r\n") {
			return "the method must be an upper-case HTTP method"
		}
		if !strings.HasPrefix(string(out[1]), "/") && len(out[1]) > 0 {
			return "the path is appended to the provider's base URL: it must be empty or start with /"
		}
		for _, line := range strings.Split(strings.TrimSuffix(string(out[2]), "\n"), "\n") {
			if k, _, ok := strings.Cut(line, ":"); line != "" && (!ok || strings.TrimSpace(k) == "" || strings.ContainsAny(k, " \r")) {
				return "headers must be \"Name: value\" lines separated by \\n"
			}
		}
	case abi.HookChatResponse:
		if len(out) != 1 || !isObject(out[0]) || !has(out[0], "choices") {
			return "want one field: a unified chat result (a JSON object with choices)"
		}
	case abi.HookEmbedResponse:
		if len(out) != 1 || !isObject(out[0]) || !has(out[0], "data") {
			return "want one field: a unified embeddings response (a JSON object with data)"
		}
	case abi.HookChatStreamEvent:
		if len(out) < 1 {
			return "want the stream state, then zero or more chunks"
		}
		for _, c := range out[1:] {
			if !isObject(c) {
				return "every chunk must be a JSON object"
			}
		}
	case abi.HookError:
		if len(out) != 2 {
			return "want 2 fields: status, message"
		}
		if s, err := strconv.Atoi(string(out[0])); err != nil || s < 400 || s > 599 {
			return "the status must be a decimal HTTP error status"
		}
	case abi.HookToolCall:
		if len(out) != 2 {
			return "want 2 fields: result, cost"
		}
		if !json.Valid(out[0]) {
			return "the result must be JSON text (the model reads it)"
		}
		if c := string(out[1]); c != "" {
			if f, err := strconv.ParseFloat(c, 64); err != nil || f < 0 || strings.ContainsAny(c, "eE") {
				return "the cost must be empty or a non-negative decimal number of dollars"
			}
		}
	case abi.HookPreRequest, abi.HookPostResponse, abi.HookPostChunk:
		if len(out) < 1 {
			return "want an action first"
		}
		action := string(out[0])
		switch {
		case action == abi.ActionContinue && hook == abi.HookPostChunk:
			for _, c := range out[1:] {
				if !isObject(c) {
					return "every chunk must be a JSON object"
				}
			}
		case action == abi.ActionContinue:
			if len(out) > 1 && len(out[1]) > 0 && !isObject(out[1]) {
				return "a replacement body must be a JSON object"
			}
		case action == abi.ActionRespond && hook == abi.HookPreRequest:
			if len(out) < 2 || !has(out[1], "choices") {
				return "respond needs a complete chat result (with choices)"
			}
		case action == abi.ActionBlock:
			if len(out) < 2 || !has(out[1], "message") {
				return `block needs {"code":…,"message":…}`
			}
		default:
			return "unknown action " + strconv.Quote(action) + " for " + hook.String()
		}
	}
	return ""
}

// CheckExtismGuest is CheckGuest for a module built with an Extism PDK
// (manifest "runtime": "extism"), plus the host's rule for Extism exports
// (docs/plugins.md): a hook the manifest declares must be exported under
// its name, unless it is passthrough (the host never calls it). The check
// declares one hook of the module's kind that it does not export: the host
// must refuse that at load, naming the hook, and load it as passthrough.
func CheckExtismGuest(t *testing.T, host Host, manifestJSON, wasm []byte) {
	CheckGuest(t, host, manifestJSON, wasm)
	var mf map[string]any
	if err := json.Unmarshal(manifestJSON, &mf); err != nil {
		t.Fatalf("manifest: %v", err)
	}
	if mf["runtime"] != "extism" {
		t.Fatalf("not an Extism module: runtime %v", mf["runtime"])
	}
	hooks, _ := mf["hooks"].([]any)
	declared := map[string]bool{}
	for _, h := range hooks {
		declared[h.(string)] = true
	}
	candidates := adapterHooks
	if mf["kind"] == "plugin" {
		candidates = pluginHooks
	}
	var extra string
	for _, h := range candidates {
		if !declared[h.String()] {
			extra = h.String()
			break
		}
	}
	if extra == "" {
		t.Log("the module declares every hook of its kind; the export rule is not checked")
		return
	}
	mf["hooks"] = append(hooks, extra)
	missing, _ := json.Marshal(mf)
	if m, err := host.Load(context.Background(), missing, wasm); err == nil {
		_ = m.Close(context.Background())
		t.Errorf("declaring %s, which the module does not export, loaded; the host must refuse it at load", extra)
	} else if !strings.Contains(err.Error(), extra) {
		t.Errorf("the refusal %q does not name the missing export %s", err, extra)
	}
	pt, _ := mf["passthrough"].([]any)
	mf["passthrough"] = append(pt, extra)
	passthrough, _ := json.Marshal(mf)
	t.Run("with passthrough "+extra, func(t *testing.T) { CheckGuest(t, host, passthrough, wasm) })
}
