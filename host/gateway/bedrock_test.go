package gateway_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/switchyard/switchyard/host/credentials/credtest"
	"github.com/switchyard/switchyard/host/eventstream"
	"github.com/switchyard/switchyard/host/gatewaytest"
)

// fakeBedrock answers Converse and ConverseStream as Bedrock does, with
// the API reference's payloads (plugins/bedrock/testdata), after checking
// the SigV4 signature the way AWS does; a model named "throttled" gets
// Bedrock's ThrottlingException.
// titanCalls and titanMost count the Titan calls fakeBedrock is
// answering, and the most at once.
var titanCalls, titanMost atomic.Int64

func fakeBedrock(t *testing.T, akid, secret string) *httptest.Server {
	converse, err := os.ReadFile("../../plugins/bedrock/testdata/converse_response.json")
	if err != nil {
		t.Fatal(err)
	}
	events, _ := os.ReadFile("../../plugins/bedrock/testdata/converse_stream_tool.jsonl")
	var stream []byte
	for _, line := range strings.Split(strings.TrimSpace(string(events)), "\n") {
		r := gjson.Parse(line)
		r.ForEach(func(k, v gjson.Result) bool {
			stream = eventstream.Encode(stream, []byte(v.Raw), ":event-type", k.Str, ":content-type", "application/json", ":message-type", "event")
			return false
		})
	}
	titan, _ := os.ReadFile("../../plugins/bedrock/testdata/titan_embed_response.json")
	cohere, _ := os.ReadFile("../../plugins/bedrock/testdata/cohere_embed_response.json")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		if err := credtest.VerifySigV4(r, body, akid, secret, "", time.Now()); err != nil {
			w.Header().Set("X-Amzn-Errortype", "InvalidSignatureException")
			w.WriteHeader(http.StatusForbidden)
			w.Write([]byte(`{"message":"` + err.Error() + `"}`))
			return
		}
		// InvokeModel with each embedding family's own body.
		switch {
		case r.URL.Path == "/model/amazon.titan-embed-text-v2:0/invoke" && gjson.GetBytes(body, "inputText").Str == "refuse me":
			w.Header().Set("X-Amzn-Errortype", "ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/")
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"message":"Malformed input request: expected minLength: 1, please reformat your input and try again."}`))
			return
		case r.URL.Path == "/model/amazon.titan-embed-text-v2:0/invoke" && gjson.GetBytes(body, "inputText").Type == gjson.String:
			// Titan embeds one inputText a call (the reference's body);
			// the first number of the answer is the text's length, so a
			// test can tell the answers apart and check their order.
			n := titanCalls.Add(1)
			defer titanCalls.Add(-1)
			for m := titanMost.Load(); n > m && !titanMost.CompareAndSwap(m, n); m = titanMost.Load() {
			}
			out, _ := sjson.SetBytes(titan, "embedding.0", len(gjson.GetBytes(body, "inputText").Str))
			w.Write(out)
			return
		case r.URL.Path == "/model/cohere.embed-english-v3/invoke" && gjson.GetBytes(body, "texts.#").Int() == 2 && gjson.GetBytes(body, "input_type").Exists():
			w.Write(cohere)
			return
		case strings.HasSuffix(r.URL.Path, "/invoke"):
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"message":"Malformed input request: #: required key [inputText] not found, please reformat your input and try again."}`))
			return
		}
		if !gjson.GetBytes(body, "messages.0.content.0.text").Exists() {
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"message":"Malformed input request, please reformat your input and try again."}`))
			return
		}
		switch {
		case strings.HasPrefix(r.URL.Path, "/model/throttled/"):
			w.Header().Set("X-Amzn-Errortype", "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/")
			w.WriteHeader(http.StatusTooManyRequests)
			w.Write([]byte(`{"message":"Too many requests, please wait before trying again."}`))
		case strings.HasSuffix(r.URL.Path, "/converse-stream"):
			w.Header().Set("Content-Type", eventstream.ContentType)
			w.Write(stream)
		case strings.HasSuffix(r.URL.Path, "/converse"):
			w.Write(converse)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestBedrock: a chat request to a Bedrock model goes out as a Converse
// request signed with SigV4 (the fake recomputes the signature), comes
// back as a chat completion; streamed, ConverseStream's binary frames
// become SSE chunks with the tool call and usage; Bedrock's throttling
// is a 429.
func TestBedrock(t *testing.T) {
	const akid, secret = "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	srv := fakeBedrock(t, akid, secret)
	yml := `demo: false
timeouts: {attempt: 5s, request: 30s}
providers:
  - {slug: bedrock, adapter: bedrock, base_url: "` + srv.URL + `", auth: {scheme: aws-sigv4, region: us-east-1}}
models:
  - {id: anthropic/claude-3-haiku, endpoints: [{provider: bedrock, upstream_model: "anthropic.claude-3-haiku-20240307-v1:0", price: {prompt: 0.25, completion: 1.25}}]}
  - {id: test/throttled, endpoints: [{provider: bedrock, upstream_model: throttled, price: {prompt: 1, completion: 1}}]}
  - {id: amazon/titan-embed-v2, kind: embedding, endpoints: [{provider: bedrock, upstream_model: "amazon.titan-embed-text-v2:0", price: {prompt: 0.02}}]}
  - {id: cohere/embed-english-v3, kind: embedding, endpoints: [{provider: bedrock, upstream_model: cohere.embed-english-v3, price: {prompt: 0.1}}]}
`
	g, err := gatewaytest.Start(gatewaytest.Options{ConfigYAML: yml, Quiet: true,
		Env: map[string]string{"AWS_ACCESS_KEY_ID": akid, "AWS_SECRET_ACCESS_KEY": secret}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	ask := `{"model":"anthropic/claude-3-haiku","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"What is the most popular song on WZPZ?"}]`

	resp, b, err := g.Request("POST", "/chat/completions", ask+`}`)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v %d %s", err, resp.StatusCode, b)
	}
	if gjson.GetBytes(b, "choices.0.message.content").Str != "The most popular song on WZPZ is Elemental Hotel by 8 Storey Hike." ||
		gjson.GetBytes(b, "usage.prompt_tokens").Int() != 125 || gjson.GetBytes(b, "choices.0.finish_reason").Str != "stop" {
		t.Fatalf("answer: %s", b)
	}

	resp, b, err = g.Request("POST", "/chat/completions", ask+`,"stream":true}`)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v %d %s", err, resp.StatusCode, b)
	}
	var content, args, finish string
	var usage int64
	for _, line := range bytes.Split(b, []byte("\n")) {
		data, ok := bytes.CutPrefix(line, []byte("data: "))
		if !ok || string(data) == "[DONE]" {
			continue
		}
		c := gjson.ParseBytes(data)
		content += c.Get("choices.0.delta.content").Str
		args += c.Get("choices.0.delta.tool_calls.0.function.arguments").Str
		if f := c.Get("choices.0.finish_reason").Str; f != "" {
			finish = f
		}
		if u := c.Get("usage.completion_tokens"); u.Exists() {
			usage = u.Int()
		}
	}
	if content != "I'll look that up." || args != `{"sign": "WZPZ"}` || finish != "tool_calls" || usage != 57 || !bytes.Contains(b, []byte("[DONE]")) {
		t.Fatalf("stream: content %q args %q finish %q usage %d\n%s", content, args, finish, usage, b)
	}

	resp, b, err = g.Request("POST", "/chat/completions", `{"model":"test/throttled","messages":[{"role":"user","content":"hi"}]}`)
	// Bedrock sends no Retry-After; the gateway's 429 carries its own
	// (host/server writeError), which clients honour.
	if err != nil || resp.StatusCode != 429 || !strings.Contains(gjson.GetBytes(b, "error.message").Str, "Too many requests") || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("throttled: %v %d %v %s", err, resp.StatusCode, resp.Header, b)
	}

	// Embeddings: InvokeModel, signed, with Titan's and Cohere's bodies.
	resp, b, err = g.Request("POST", "/embeddings", `{"model":"amazon/titan-embed-v2","input":"What are the different services that you offer?","dimensions":512}`)
	if err != nil || resp.StatusCode != 200 || gjson.GetBytes(b, "data.0.embedding.#").Int() != 4 || gjson.GetBytes(b, "usage.prompt_tokens").Int() != 6 {
		t.Fatalf("titan: %v %d %s", err, resp.StatusCode, b)
	}
	// Titan takes one input a call: six inputs are six calls, at most four
	// at a time, answered in input order with their usage summed.
	inputs := []string{"a", "bb", "ccc", "dddd", "eeeee", "ffffff"}
	resp, b, err = g.Request("POST", "/embeddings", `{"model":"amazon/titan-embed-v2","input":["`+strings.Join(inputs, `","`)+`"]}`)
	if err != nil || resp.StatusCode != 200 || gjson.GetBytes(b, "data.#").Int() != 6 || gjson.GetBytes(b, "usage.prompt_tokens").Int() != 6*6 {
		t.Fatalf("titan batch: %v %d %s", err, resp.StatusCode, b)
	}
	for i, in := range inputs {
		if e := gjson.GetBytes(b, "data."+strconv.Itoa(i)); e.Get("index").Int() != int64(i) || e.Get("embedding.0").Int() != int64(len(in)) {
			t.Fatalf("titan batch: entry %d is %s", i, e.Raw)
		}
	}
	if most := titanMost.Load(); most > 4 {
		t.Fatalf("titan batch: %d calls at once, want at most 4", most)
	}
	// One part refused fails the request with its error, never a list
	// with a hole.
	resp, b, err = g.Request("POST", "/embeddings", `{"model":"amazon/titan-embed-v2","input":["a","refuse me","c"]}`)
	if err != nil || resp.StatusCode != 400 || !strings.Contains(gjson.GetBytes(b, "error.message").Str, "Malformed input request") {
		t.Fatalf("titan batch with a refused part: %v %d %s", err, resp.StatusCode, b)
	}
	resp, b, err = g.Request("POST", "/embeddings", `{"model":"cohere/embed-english-v3","input":["hello","goodbye"]}`)
	// Cohere on Bedrock reports no token count: the gateway counts them.
	if err != nil || resp.StatusCode != 200 || gjson.GetBytes(b, "data.#").Int() != 2 || gjson.GetBytes(b, "data.1.embedding.2").Float() != 0.0037155 ||
		gjson.GetBytes(b, "usage.prompt_tokens").Int() == 0 || !gjson.GetBytes(b, "usage.estimated").Bool() {
		t.Fatalf("cohere: %v %d %s", err, resp.StatusCode, b)
	}
}
