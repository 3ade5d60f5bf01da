package demo

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/switchyard/switchyard/host/jsonstr"
)

// Anthropic is a fake of Anthropic's Messages API (POST /v1/messages) in its
// real wire format: required headers and fields, message JSON, the named
// SSE events of a stream, and its error bodies. Like Server it echoes the
// last user message and takes Faults; when the request offers tools and
// the last user message mentions "weather", it calls the first tool.
type Anthropic struct{ Server }

// NewAnthropic returns a healthy fake.
func NewAnthropic() *Anthropic { return &Anthropic{} }

func anthropicError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(msg)
	fmt.Fprintf(w, `{"type":"error","error":{"type":%s,"message":%s}}`, jsonstr.Quote(typ), b)
}

func (a *Anthropic) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, f, ok := a.admit(w, r, func(w http.ResponseWriter, status int) {
		typ := map[int]string{400: "invalid_request_error", 401: "authentication_error", 429: "rate_limit_error", 529: "overloaded_error"}[status]
		if typ == "" {
			typ = "api_error"
		}
		anthropicError(w, status, typ, fmt.Sprintf("demo fault: status %d", status))
	})
	if !ok {
		return
	}
	req, ok := readAnthropicRequest(w, r, body)
	if !ok {
		return
	}
	conv := req.conversation()
	var offered []string
	for _, t := range req.Tools {
		offered = append(offered, t.Name)
	}
	choice := map[string]string{"none": "none", "auto": "auto", "any": "required", "tool": req.ToolChoice.Name}[req.ToolChoice.Type]
	turn := plan(offered, choice, conv.lastUser, conv.results, "This is the Switchyard demo of Anthropic (offline).")
	reply := plannedReply(f, req.Model, conv.images, turn)
	if reply == "" {
		reply = "This is the Switchyard demo of Anthropic (offline). You said: " + conv.lastUser
	}
	toks := strings.SplitAfter(reply, " ")
	stop := "end_turn"
	if req.MaxTokens < len(toks) {
		toks, stop = toks[:req.MaxTokens], "max_tokens"
	}
	var tool string
	if len(req.Tools) > 0 && strings.Contains(conv.lastUser, "weather") {
		tool, stop = req.Tools[0].Name, "tool_use"
	} else if len(turn.calls) > 0 {
		a.toolUse(w, r, req.Model, req.Stream, turn.calls, conv.input, f)
		return
	}
	id := fmt.Sprintf("msg_demo%d", time.Now().UnixNano())
	if !req.Stream {
		anthropicMessage(w, id, req.Model, toks, stop, tool, conv.input)
		return
	}
	a.stream(w, r, f, id, req.Model, toks, stop, tool, conv.input)
}

// anthropicRequest is what the fake reads of a Messages request.
type anthropicRequest struct {
	Model     string `json:"model"`
	MaxTokens int    `json:"max_tokens"`
	Stream    bool   `json:"stream"`
	Messages  []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
	ToolChoice struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tool_choice"`
}

// readAnthropicRequest checks the route, the headers and the body as
// Anthropic does, and answers its error when one is wrong (false).
func readAnthropicRequest(w http.ResponseWriter, r *http.Request, body []byte) (*anthropicRequest, bool) {
	if r.Method != http.MethodPost || strings.TrimPrefix(r.URL.Path, "/v1") != "/messages" {
		anthropicError(w, http.StatusNotFound, "not_found_error", "Not found")
		return nil, false
	}
	if r.Header.Get("anthropic-version") == "" {
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", "anthropic-version: header is required")
		return nil, false
	}
	var req anthropicRequest
	if err := json.Unmarshal(body, &req); err != nil {
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", "invalid JSON body")
		return nil, false
	}
	switch {
	case req.Model == "":
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", "model: Field required")
		return nil, false
	case req.MaxTokens < 1:
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", "max_tokens: Field required")
		return nil, false
	case len(req.Messages) == 0:
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", "messages: at least one message is required")
		return nil, false
	}
	return &req, true
}

// anthropicConversation is what the fake answers from: the last user text,
// the tool results after it, the last user message's images, and the input
// tokens it counts.
type anthropicConversation struct {
	lastUser string
	input    int
	results  []string // tool_result contents after the last user text
	images   []string // the last user message's images
}

// conversation reads the request's messages.
func (req *anthropicRequest) conversation() anthropicConversation {
	var c anthropicConversation
	for _, m := range req.Messages {
		t := text(m.Content)
		c.input += words(t) + 3
		if m.Role != "user" {
			continue
		}
		if t != "" {
			c.lastUser, c.results = t, nil
		}
		c.images = anthropicImages(m.Content)
		c.input += 85 * len(c.images)
		var blocks []struct {
			Type    string          `json:"type"`
			Content json.RawMessage `json:"content"`
		}
		_ = json.Unmarshal(m.Content, &blocks)
		for _, b := range blocks {
			if b.Type == "tool_result" {
				c.results = append(c.results, text(b.Content))
				c.input += words(text(b.Content))
			}
		}
	}
	return c
}

// anthropicMessage answers with one message: the reply's text, and a call
// of tool when it is set.
func anthropicMessage(w http.ResponseWriter, id, model string, toks []string, stop, tool string, input int) {
	content := []map[string]any{{"type": "text", "text": strings.Join(toks, "")}}
	if tool != "" {
		content = append(content, map[string]any{"type": "tool_use", "id": "toolu_demo1", "name": tool, "input": map[string]any{"city": "Oslo"}})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model, "content": content,
		"stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": input, "output_tokens": len(toks), "cache_read_input_tokens": 2},
	})
}

// stream answers with the named SSE events of a stream, one text delta a
// token, cut after f.CutAfter events when that is set.
func (a *Anthropic) stream(w http.ResponseWriter, r *http.Request, f Faults, id, model string, toks []string, stop, tool string, input int) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	n := 0
	send := func(event, data string) bool {
		if f.CutAfter > 0 && n >= f.CutAfter {
			return false
		}
		n++
		return a.emit(w, r, "event: "+event+"\ndata: "+data+"\n\n", f.ChunkDelay)
	}
	ok := send("message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":%s,"type":"message","role":"assistant","content":[],"model":%s,"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":%d,"cache_read_input_tokens":2,"output_tokens":1}}}`, jsonstr.Quote(id), jsonstr.Quote(model), input)) &&
		send("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`) &&
		send("ping", `{"type": "ping"}`)
	for _, t := range toks {
		if !ok {
			return
		}
		c, _ := json.Marshal(t)
		ok = send("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`+string(c)+`}}`)
	}
	ok = ok && send("content_block_stop", `{"type":"content_block_stop","index":0}`)
	if tool != "" {
		ok = ok && send("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_demo1","name":`+jsonstr.Quote(tool)+`,"input":{}}}`) &&
			send("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\": "}}`) &&
			send("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\"Oslo\"}"}}`) &&
			send("content_block_stop", `{"type":"content_block_stop","index":1}`)
	}
	ok = ok && send("message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%s,"stop_sequence":null},"usage":{"output_tokens":%d}}`, jsonstr.Quote(stop), len(toks)))
	_ = ok && send("message_stop", `{"type":"message_stop"}`)
}

// toolUse answers a turn in which the model calls tools, as Anthropic does:
// tool_use content blocks and stop_reason "tool_use", or in a stream their
// content_block_start events with the input as input_json_delta.
func (a *Anthropic) toolUse(w http.ResponseWriter, r *http.Request, model string, stream bool, calls []toolCall, input int, f Faults) {
	id := fmt.Sprintf("msg_demo%d", time.Now().UnixNano())
	output := 0
	for _, c := range calls {
		output += words(c.Args) + 3
	}
	if !stream {
		var content []map[string]any
		for _, c := range calls {
			content = append(content, map[string]any{"type": "tool_use", "id": "toolu_" + c.ID, "name": c.Name, "input": json.RawMessage(c.Args)})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": model, "content": content,
			"stop_reason": "tool_use", "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": input, "output_tokens": output},
		})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	send := func(event, data string) bool {
		return a.emit(w, r, "event: "+event+"\ndata: "+data+"\n\n", f.ChunkDelay)
	}
	ok := send("message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":%s,"type":"message","role":"assistant","content":[],"model":%s,"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":%d,"output_tokens":1}}}`, jsonstr.Quote(id), jsonstr.Quote(model), input))
	for i, c := range calls {
		args, _ := json.Marshal(c.Args)
		ok = ok && send("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"tool_use","id":%s,"name":%s,"input":{}}}`, i, jsonstr.Quote("toolu_"+c.ID), jsonstr.Quote(c.Name))) &&
			send("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"input_json_delta","partial_json":%s}}`, i, args)) &&
			send("content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, i))
	}
	ok = ok && send("message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":%d}}`, output))
	_ = ok && send("message_stop", `{"type":"message_stop"}`)
}
