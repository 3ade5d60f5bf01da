// Package demo is an upstream that speaks OpenAI's wire format: chat
// completions (JSON and SSE), embeddings and model listing, with OpenAI's
// error bodies. The gateway starts it on loopback so a fresh install answers
// a curl with no network and no key; tests run it as their fake provider and
// inject faults (status codes, delays, cut streams) through Faults.
//
// It is clearly a demo: every answer says so.
package demo

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchyard/switchyard/host/jsonstr"
	"github.com/tidwall/gjson"
)

// Faults change the server's behaviour for tests. The zero value is healthy.
type Faults struct {
	Status     int           // answer every request with this HTTP status and an OpenAI error body
	ErrorBody  string        // body to send with Status (default: OpenAI-shaped error)
	Delay      time.Duration // wait before the response headers
	ChunkDelay time.Duration // wait between stream chunks
	CutAfter   int           // close the stream after this many chunks (no [DONE])
	NoUsage    bool          // omit usage, as some compatible servers do
	Reply      string        // fixed reply text instead of the echo
	// Usage replaces the usage object reported (raw JSON), to play an
	// upstream that over-reports or sends nonsense.
	Usage string
}

// Request is what the server received, for tests to inspect.
type Request struct {
	Path   string
	Header http.Header
	Body   []byte
}

// Server is the demo upstream. It is an http.Handler.
type Server struct {
	mu     sync.Mutex
	faults Faults
	last   Request
	count  atomic.Int64
	// cancelled counts streams whose client went away mid-stream.
	cancelled atomic.Int64
	abandoned atomic.Int64 // requests whose client left during Delay (abandoned.go)
	// adapters maps a chat's last user message to the adapter build that
	// sent it (header X-Switchyard-Adapter), for hot-swap tests.
	adapters map[string]string
}

// AdapterFor returns the adapter build that sent the chat whose last user
// message was text.
func (s *Server) AdapterFor(text string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.adapters[text]
}

// Cancelled is the number of streams abandoned by their client.
func (s *Server) Cancelled() int64 { return s.cancelled.Load() }

// New returns a healthy server.
func New() *Server { return &Server{} }

// SetFaults replaces the fault settings.
func (s *Server) SetFaults(f Faults) {
	s.mu.Lock()
	s.faults = f
	s.mu.Unlock()
}

// Last returns the last request received.
func (s *Server) Last() Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// Count is the number of requests received.
func (s *Server) Count() int64 { return s.count.Load() }

// admit counts and records a request and applies the Delay and Status
// faults; it reports false when the response has been written already.
// fault writes the provider's error body for a status.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, fault func(w http.ResponseWriter, status int)) ([]byte, Faults, bool) {
	s.count.Add(1)
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	s.mu.Lock()
	f := s.faults
	s.last = Request{Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	s.mu.Unlock()
	if f.Delay > 0 {
		select {
		case <-time.After(f.Delay):
		case <-r.Context().Done():
			s.abandoned.Add(1)
			return nil, f, false
		}
	}
	if f.Status != 0 && f.Status != http.StatusOK {
		if f.ErrorBody != "" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(f.Status)
			_, _ = io.WriteString(w, f.ErrorBody)
		} else {
			fault(w, f.Status)
		}
		return nil, f, false
	}
	return body, f, true
}

// emit writes one raw event of a stream, flushes it and waits the chunk
// delay; it reports false when the client went away meanwhile (counted in
// Cancelled).
func (s *Server) emit(w http.ResponseWriter, r *http.Request, event string, delay time.Duration) bool {
	_, _ = io.WriteString(w, event)
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			s.cancelled.Add(1)
			return false
		}
	}
	return true
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, f, ok := s.admit(w, r, func(w http.ResponseWriter, status int) {
		writeError(w, status, fmt.Sprintf("demo fault: status %d", status), "server_error", "")
	})
	if !ok {
		return
	}
	path := strings.TrimPrefix(r.URL.Path, "/v1")
	switch {
	case r.Method == http.MethodPost && path == "/chat/completions":
		s.chat(w, r, body, f)
	case r.Method == http.MethodPost && path == "/embeddings":
		s.embeddings(w, body)
	case r.Method == http.MethodGet && path == "/models":
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"echo","object":"model","created":1700000000,"owned_by":"switchyard-demo"},{"id":"embed","object":"model","created":1700000000,"owned_by":"switchyard-demo"}]}`)
	default:
		writeError(w, http.StatusNotFound, "Unknown request URL: "+r.Method+" "+r.URL.Path, "invalid_request_error", "unknown_url")
	}
}

func errorBody(msg, typ, code string) string {
	c := "null"
	if code != "" {
		c = jsonstr.Quote(code)
	}
	b, _ := json.Marshal(msg)
	return fmt.Sprintf(`{"error":{"message":%s,"type":%s,"param":null,"code":%s}}`, b, jsonstr.Quote(typ), c)
}

func writeError(w http.ResponseWriter, status int, msg, typ, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, errorBody(msg, typ, code))
}

type chatReq struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
	ToolChoice    json.RawMessage `json:"tool_choice"`
	MaxTokens     *int            `json:"max_tokens"`
	N             int             `json:"n"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	// ReasoningEffort is what the gateway sends for reasoning.effort;
	// Reasoning the unified object, for providers that take it.
	ReasoningEffort string          `json:"reasoning_effort"`
	Reasoning       json.RawMessage `json:"reasoning"`
	ResponseFormat  *struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	} `json:"response_format"`
}

// words is a crude token count: the demo has no tokenizer, and says so by
// being a demo.
func words(s string) int { return len(strings.Fields(s)) }

func text(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request, body []byte, f Faults) {
	req, ok := readChat(w, body)
	if !ok {
		return
	}
	conv := req.conversation()
	var offered []string
	for _, t := range req.Tools {
		offered = append(offered, t.Function.Name)
	}
	turn := plan(offered, openAIChoice(req.ToolChoice), conv.lastUser, conv.results, "This is the Switchyard demo provider (offline, no model behind it).")
	if len(turn.calls) > 0 {
		s.toolCalls(w, r, req, turn.calls, conv.prompt, f)
		return
	}
	s.mu.Lock()
	if s.adapters == nil || len(s.adapters) > 100000 {
		s.adapters = map[string]string{}
	}
	s.adapters[conv.lastUser] = r.Header.Get("X-Switchyard-Adapter")
	s.mu.Unlock()
	toks := strings.SplitAfter(chatReply(&req, f, turn, conv), " ")
	finish := "stop"
	if req.MaxTokens != nil && *req.MaxTokens < len(toks) {
		toks, finish = toks[:*req.MaxTokens], "length"
	}
	completion := len(toks)
	c := chatAnswer{id: "chatcmpl-demo" + fmt.Sprint(time.Now().UnixNano()), created: time.Now().Unix(), model: req.Model, toks: toks, finish: finish}
	if req.reasons() {
		// A reasoning model asked to reason thinks first, as OpenRouter's
		// upstreams return it (message.reasoning, delta.reasoning), and
		// counts its reasoning in completion_tokens.
		c.reasoning = strings.SplitAfter("The user said: "+firstWords(conv.lastUser, 8)+" I will echo it back.", " ")
		completion += len(c.reasoning)
	}
	// n choices, as OpenAI generates them (JSON only): each is the same
	// reply here, and each one's tokens are billed.
	choices := max(req.N, 1)
	if req.Stream {
		choices = 1
	}
	details := ""
	if c.reasoning != nil {
		details = fmt.Sprintf(`,"completion_tokens_details":{"reasoning_tokens":%d}`, choices*len(c.reasoning))
	}
	c.usage = fmt.Sprintf(`{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d%s}`, conv.prompt, choices*completion, conv.prompt+choices*completion, details)
	if f.Usage != "" {
		c.usage = f.Usage
	}
	if !req.Stream {
		c.writeJSON(w, choices, f)
		return
	}
	s.streamChat(w, r, c, req.StreamOptions != nil && req.StreamOptions.IncludeUsage, f)
}

// reasons reports whether the demo reasons before it answers: only its
// reasoning model (echo-reasoner, or echo-reasoner-<name>), and only when
// the request asks for reasoning (reasoning_effort, or a reasoning object
// that neither excludes it nor sets effort "none").
func (req *chatReq) reasons() bool {
	if !strings.HasPrefix(req.Model, "echo-reasoner") {
		return false
	}
	if req.ReasoningEffort != "" {
		return req.ReasoningEffort != "none"
	}
	r := gjson.ParseBytes(req.Reasoning)
	return r.IsObject() && !r.Get("exclude").Bool() && r.Get("effort").Str != "none" && r.Get("enabled").Type != gjson.False
}

// readChat parses and checks a chat request as OpenAI does, and answers its
// error when it is wrong (false).
func readChat(w http.ResponseWriter, body []byte) (chatReq, bool) {
	var req chatReq
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "We could not parse the JSON body of your request.", "invalid_request_error", "")
		return req, false
	}
	if len(req.Messages) == 0 {
		writeError(w, http.StatusBadRequest, "[] is too short - 'messages'", "invalid_request_error", "")
		return req, false
	}
	if req.Model != "echo" && req.Model != "" && !strings.HasPrefix(req.Model, "echo") {
		writeError(w, http.StatusNotFound, fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", req.Model), "invalid_request_error", "model_not_found")
		return req, false
	}
	return req, true
}

// chatConversation is what the fake answers from: the last user message,
// the tool results after it, its images, and the prompt tokens it counts.
type chatConversation struct {
	prompt   int
	lastUser string
	results  []string // tool results after the last user message
	images   []string // the last user message's images
}

// conversation reads the request's messages.
func (req *chatReq) conversation() chatConversation {
	var c chatConversation
	for _, m := range req.Messages {
		t := text(m.Content)
		c.prompt += words(t) + 3
		switch m.Role {
		case "user":
			c.lastUser, c.results = t, nil
			c.images = openAIImages(m.Content)
			c.prompt += 85 * len(c.images) // OpenAI's count for a low-detail image
		case "tool":
			c.results = append(c.results, t)
		}
	}
	return c
}

// plannedReply is where every fake's reply starts: the fault's, a vision
// model's description of the images (vision.go), or the agent turn's
// text; "" when none applies, and each fake answers in its own words.
func plannedReply(f Faults, model string, images []string, turn agentTurn) string {
	reply := f.Reply
	if reply == "" && IsVisionModel(model) {
		reply = visionReply(images)
	}
	if reply == "" {
		reply = turn.reply
	}
	return reply
}

// chatReply is the text the fake answers with: the fault's, a vision
// model's description, the agent turn's, an instance of a json_schema, or
// the echo of the last user message.
func chatReply(req *chatReq, f Faults, turn agentTurn, conv chatConversation) string {
	reply := plannedReply(f, req.Model, conv.images, turn)
	if reply == "" && req.ResponseFormat != nil && req.ResponseFormat.Type == "json_schema" && req.ResponseFormat.JSONSchema != nil {
		// Structured output: an instance of the schema, as a model that
		// honours strict json_schema answers.
		reply = Instance(req.ResponseFormat.JSONSchema.Schema, req.Model+": "+firstWords(conv.lastUser, 8))
	}
	if reply == "" && req.Model != "echo" && req.Model != "" {
		// The demo's other models (echo-<name>) answer in their own words,
		// so a request that asks several of them shows who said what.
		reply = "This is the Switchyard demo provider (offline, no model behind it), answering as " + req.Model + ". You said: " + conv.lastUser
	}
	if reply == "" {
		reply = "This is the Switchyard demo provider (offline, no model behind it). You said: " + conv.lastUser
	}
	return reply
}

// chatAnswer is one chat completion the fake sends: its reply in tokens,
// why it finished, and its usage object.
type chatAnswer struct {
	id      string
	created int64
	model   string
	toks    []string
	finish  string
	usage   string
	// reasoning is the reasoning text in tokens, nil when none.
	reasoning []string
}

// writeJSON answers with a chat.completion of n identical choices.
func (c *chatAnswer) writeJSON(w http.ResponseWriter, n int, f Faults) {
	content, _ := json.Marshal(strings.Join(c.toks, ""))
	w.Header().Set("Content-Type", "application/json")
	u := `,"usage":` + c.usage
	if f.NoUsage {
		u = ""
	}
	var cs strings.Builder
	for i := range n {
		if i > 0 {
			cs.WriteByte(',')
		}
		reasoning := ""
		if c.reasoning != nil {
			reasoning = `,"reasoning":` + jsonstr.Quote(strings.Join(c.reasoning, ""))
		}
		fmt.Fprintf(&cs, `{"index":%d,"message":{"role":"assistant","content":%s%s,"refusal":null},"logprobs":null,"finish_reason":%s}`, i, content, reasoning, jsonstr.Quote(c.finish))
	}
	fmt.Fprintf(w, `{"id":%s,"object":"chat.completion","created":%d,"model":%s,"choices":[%s]%s,"system_fingerprint":"fp_demo"}`,
		jsonstr.Quote(c.id), c.created, jsonstr.Quote(c.model), cs.String(), u)
}

// streamChat answers with the chunks of a stream, one a token, and a usage
// chunk when includeUsage; cut after f.CutAfter events when that is set.
func (s *Server) streamChat(w http.ResponseWriter, r *http.Request, c chatAnswer, includeUsage bool, f Faults) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	n := 0
	send := func(data string) bool {
		if f.CutAfter > 0 && n >= f.CutAfter {
			return false
		}
		n++
		return s.emit(w, r, "data: "+data+"\n\n", f.ChunkDelay)
	}
	head := fmt.Sprintf(`{"id":%s,"object":"chat.completion.chunk","created":%d,"model":%s,"system_fingerprint":"fp_demo","choices":`, jsonstr.Quote(c.id), c.created, jsonstr.Quote(c.model))
	if !send(head + `[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`) {
		return
	}
	for _, t := range c.reasoning {
		if !send(head + `[{"index":0,"delta":{"reasoning":` + jsonstr.Quote(t) + `},"logprobs":null,"finish_reason":null}]}`) {
			return
		}
	}
	for _, t := range c.toks {
		b, _ := json.Marshal(t)
		if !send(head + `[{"index":0,"delta":{"content":` + string(b) + `},"logprobs":null,"finish_reason":null}]}`) {
			return
		}
	}
	if !send(head + `[{"index":0,"delta":{},"logprobs":null,"finish_reason":"` + c.finish + `"}]}`) {
		return
	}
	if includeUsage && !f.NoUsage {
		if !send(head + `[],"usage":` + c.usage + `}`) {
			return
		}
	}
	send("[DONE]")
}

// openAIChoice reads tool_choice: "none", "auto", "required", or the name
// of the function a named choice forces.
func openAIChoice(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var named struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	_ = json.Unmarshal(raw, &named)
	return named.Function.Name
}

// toolCalls answers a turn in which the model calls tools, as OpenAI does:
// an assistant message with tool_calls and finish_reason "tool_calls", or
// their deltas in a stream (id and name first, the arguments after).
func (s *Server) toolCalls(w http.ResponseWriter, r *http.Request, req chatReq, calls []toolCall, prompt int, f Faults) {
	id := "chatcmpl-demo" + fmt.Sprint(time.Now().UnixNano())
	created := time.Now().Unix()
	completion := 0
	for _, c := range calls {
		completion += words(c.Args) + 3
	}
	usage := fmt.Sprintf(`{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}`, prompt, completion, prompt+completion)
	if f.Usage != "" {
		usage = f.Usage
	}
	if !req.Stream {
		var tc strings.Builder
		for i, c := range calls {
			if i > 0 {
				tc.WriteByte(',')
			}
			args, _ := json.Marshal(c.Args)
			fmt.Fprintf(&tc, `{"id":%s,"type":"function","function":{"name":%s,"arguments":%s}}`, jsonstr.Quote(c.ID), jsonstr.Quote(c.Name), args)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":%s,"object":"chat.completion","created":%d,"model":%s,"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[%s],"refusal":null},"logprobs":null,"finish_reason":"tool_calls"}],"usage":%s,"system_fingerprint":"fp_demo"}`,
			jsonstr.Quote(id), created, jsonstr.Quote(req.Model), tc.String(), usage)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	head := fmt.Sprintf(`{"id":%s,"object":"chat.completion.chunk","created":%d,"model":%s,"system_fingerprint":"fp_demo","choices":`, jsonstr.Quote(id), created, jsonstr.Quote(req.Model))
	send := func(data string) bool { return s.emit(w, r, "data: "+data+"\n\n", f.ChunkDelay) }
	if !send(head + `[{"index":0,"delta":{"role":"assistant","content":null},"logprobs":null,"finish_reason":null}]}`) {
		return
	}
	for i, c := range calls {
		args, _ := json.Marshal(c.Args)
		if !send(head+fmt.Sprintf(`[{"index":0,"delta":{"tool_calls":[{"index":%d,"id":%s,"type":"function","function":{"name":%s,"arguments":""}}]},"logprobs":null,"finish_reason":null}]}`, i, jsonstr.Quote(c.ID), jsonstr.Quote(c.Name))) ||
			!send(head+fmt.Sprintf(`[{"index":0,"delta":{"tool_calls":[{"index":%d,"function":{"arguments":%s}}]},"logprobs":null,"finish_reason":null}]}`, i, args)) {
			return
		}
	}
	if !send(head + `[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}]}`) {
		return
	}
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage && !f.NoUsage && !send(head+`[],"usage":`+usage+`}`) {
		return
	}
	send("[DONE]")
}

type embedReq struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     int             `json:"dimensions"`
}

func (s *Server) embeddings(w http.ResponseWriter, body []byte) {
	var req embedReq
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "We could not parse the JSON body of your request.", "invalid_request_error", "")
		return
	}
	var inputs []string
	var one string
	var raw []json.RawMessage
	switch {
	case json.Unmarshal(req.Input, &one) == nil:
		inputs = []string{one}
	case isTokenArray(req.Input):
		inputs = []string{string(req.Input)} // one input given as token ids, as OpenAI reads it
	case json.Unmarshal(req.Input, &raw) == nil && len(raw) > 0:
		for _, r := range raw {
			inputs = append(inputs, string(r)) // a string or a multimodal item: its JSON is hashed
		}
	default:
		writeError(w, http.StatusBadRequest, "'input' is a required property", "invalid_request_error", "")
		return
	}
	dim := req.Dimensions
	if dim <= 0 {
		dim = 16
	}
	type item struct {
		Object    string `json:"object"`
		Index     int    `json:"index"`
		Embedding any    `json:"embedding"`
	}
	out := struct {
		Object string `json:"object"`
		Data   []item `json:"data"`
		Model  string `json:"model"`
		Usage  struct {
			PromptTokens int `json:"prompt_tokens"`
			TotalTokens  int `json:"total_tokens"`
		} `json:"usage"`
	}{Object: "list", Model: req.Model}
	for i, in := range inputs {
		v := Vector(in, dim)
		var e any = v
		if req.EncodingFormat == "base64" {
			b := make([]byte, 4*len(v))
			for j, x := range v {
				binary.LittleEndian.PutUint32(b[4*j:], math.Float32bits(x))
			}
			e = base64.StdEncoding.EncodeToString(b)
		}
		out.Data = append(out.Data, item{Object: "embedding", Index: i, Embedding: e})
		out.Usage.PromptTokens += words(in) + 1
	}
	out.Usage.TotalTokens = out.Usage.PromptTokens
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// Vector is the demo's deterministic unit-length embedding of s.
func Vector(s string, dim int) []float32 {
	v := make([]float32, dim)
	var norm float64
	for i := range v {
		h := sha256.Sum256([]byte(fmt.Sprintf("%d:%s", i, s)))
		x := float64(binary.LittleEndian.Uint32(h[:]))/float64(math.MaxUint32)*2 - 1
		v[i] = float32(x)
		norm += x * x
	}
	norm = math.Sqrt(norm)
	for i := range v {
		v[i] = float32(float64(v[i]) / norm)
	}
	return v
}

// isTokenArray reports whether input is one array of token ids ([1,2,3]),
// which OpenAI's API embeds as a single input.
func isTokenArray(input json.RawMessage) bool {
	var ids []int64
	return json.Unmarshal(input, &ids) == nil && len(ids) > 0
}
