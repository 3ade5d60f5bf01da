package server_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/agentbody"
	"github.com/switchyard/switchyard/host/gatewaytest"
)

// fixedUpstream answers every chat request with the same small OpenAI
// answer, as peerbench's fakeupstream does (../shared/peerbench/fakeupstream;
// the chat completion object and chunk of
// platform.openai.com/docs/api-reference/chat): it reads the body and
// nothing more, so a profile of the benchmark is the gateway's work.
func fixedUpstream() *httptest.Server {
	const head = `data: {"id":"chatcmpl-fake1","object":"chat.completion.chunk","created":1763856000,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_fake","choices":`
	answer := []byte(`{"id":"chatcmpl-fake1","object":"chat.completion","created":1763856000,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_fake","choices":[{"index":0,"message":{"role":"assistant","content":"hello hello hello hello hello","refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":250,"completion_tokens":5,"total_tokens":255}}`)
	stream := []byte(head + `[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}` + "\n\n" +
		strings.Repeat(head+`[{"index":0,"delta":{"content":"hello "},"logprobs":null,"finish_reason":null}]}`+"\n\n", 20) +
		head + `[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}` + "\n\n" +
		head + `[],"usage":{"prompt_tokens":250,"completion_tokens":20,"total_tokens":270}}` + "\n\n" +
		"data: [DONE]\n\n")
	// Its read buffers are reused, so the benchmark's B/op is the
	// gateway's (and the client's, the same in every version).
	bufs := sync.Pool{New: func() any { return new(bytes.Buffer) }}
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf := bufs.Get().(*bytes.Buffer)
		defer bufs.Put(buf)
		buf.Reset()
		_, _ = buf.ReadFrom(r.Body)
		if bytes.Contains(buf.Bytes(), []byte(`"stream":true`)) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write(stream)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	}))
}

// agentYAML is peerbench's catalog (../shared/peerbench/switchyard.yaml):
// one OpenAI-compatible provider; a 1M-token context, so the 1,024 KB
// body is served rather than refused for its length.
const agentYAML = `demo: false
timeouts: {attempt: 5s, request: 30s}
providers:
  - {slug: fixed, name: fixed, adapter: openai, base_url: "URL/v1", data_collection: deny, region: local}
models:
  - id: bench/chat
    kind: chat
    context_length: 1000000
    endpoints:
      - {provider: fixed, upstream_model: gpt-4o-mini, max_output: 4096, price: {prompt: 0.15, completion: 0.60}}
`

// BenchmarkAgentChat is one whole agent-shaped chat request (scale.sh's
// shape: system prompt, eight tools, turns of tool calls and results) over
// loopback at 1, 32, 128 and 1,024 KB, JSON and streamed: every step of
// the request path on a real body, for the per-byte passes (issue 29;
// profile it with -cpuprofile). The upstream's answer is small and fixed,
// as scale.sh's is.
func BenchmarkAgentChat(b *testing.B) {
	up := fixedUpstream()
	defer up.Close()
	g, err := gatewaytest.Start(gatewaytest.Options{Quiet: true, ConfigYAML: strings.Replace(agentYAML, "URL", up.URL, 1)})
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	for _, mode := range []string{"json", "stream"} {
		for _, size := range agentbody.Sizes {
			b.Run(mode+"/"+agentbody.Name(size), func(b *testing.B) {
				body := agentbody.Chat("bench/chat", mode == "stream", size)
				b.SetBytes(int64(len(body)))
				b.ReportAllocs()
				cpu0 := cpuTime()
				for b.Loop() {
					req, _ := http.NewRequest(http.MethodPost, g.URL+"/chat/completions", bytes.NewReader(body))
					req.Header.Set("Authorization", "Bearer "+g.Key)
					req.Header.Set("Content-Type", "application/json")
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						b.Fatal(err)
					}
					out, err := io.ReadAll(resp.Body)
					resp.Body.Close()
					if err != nil || resp.StatusCode != http.StatusOK {
						b.Fatalf("%d %v %s", resp.StatusCode, err, out)
					}
				}
				// The process's CPU time (gateway, client and upstream
				// together: the last two are the same in every version), a
				// figure the machine's other load does not inflate as it
				// does the wall time.
				b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// cpuTime is the user and system CPU time of the process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
