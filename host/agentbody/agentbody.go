// Package agentbody makes chat request bodies shaped like a coding agent's
// (a long system prompt, eight function tools with JSON Schemas, turns of
// user question, assistant tool call and tool result) of a chosen size, for
// the benchmarks of every step of the request path: they must grow
// linearly with the body (issue 29; docs/performance.md). It is the shape
// ../shared/peerbench/scale.sh sends.
package agentbody

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Sizes are the body sizes the request-path benchmarks run at.
var Sizes = []int{1 << 10, 32 << 10, 128 << 10, 1 << 20}

// Name is a benchmark's name for size bytes ("1KB", "1024KB").
func Name(size int) string { return fmt.Sprintf("%dKB", size>>10) }

var words = strings.Fields("the build failed because the handler returns an error when the request body is empty so we check the length first and answer with a clear message instead of a stack trace")

func text(n, seed int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		b.WriteString(words[(i*7+seed)%len(words)])
		b.WriteByte(' ')
	}
	return b.String()[:n]
}

// Chat is an agent-shaped chat request for model of at least size bytes
// (1 KB: the system prompt and tools alone are about that), ending on a
// user message. Assistant turns carry "content": null, as agents send.
func Chat(model string, stream bool, size int) []byte {
	type fn struct {
		Name        string         `json:"name"`
		Description string         `json:"description"`
		Parameters  map[string]any `json:"parameters"`
	}
	type tool struct {
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}
	names, desc, sys := []string{"read_file", "write_file", "list_dir", "run_tests", "grep", "git_diff", "web_search", "ask_user"}, 160, 2000
	if size < 4<<10 {
		names, desc, sys = names[:1], 40, 150 // a small request: short prompt, one tool
	}
	var tools []tool
	for i, name := range names {
		tools = append(tools, tool{"function", fn{name, text(desc, i), map[string]any{
			"type": "object", "required": []string{"path"},
			"properties": map[string]any{
				"path":    map[string]any{"type": "string", "description": text(desc*3/8, i+1)},
				"pattern": map[string]any{"type": "string", "description": text(desc/4, i+2)},
				"limit":   map[string]any{"type": "integer", "minimum": 1, "maximum": 1000},
			}}}})
	}
	msgs := []map[string]any{{"role": "system", "content": text(sys, 3)}}
	build := func() []byte {
		last := map[string]any{"role": "user", "content": "Fix the failing test and explain the change."}
		b, _ := json.Marshal(map[string]any{"model": model, "stream": stream, "temperature": 0.2,
			"tools": tools, "tool_choice": "auto", "messages": append(msgs[:len(msgs):len(msgs)], last)})
		return b
	}
	result := 1500
	if size < 4<<10 {
		result = 100
	}
	for turn := 0; len(build()) < size; turn++ {
		id := fmt.Sprintf("call_%04d", turn)
		msgs = append(msgs,
			map[string]any{"role": "user", "content": text(result/8, turn)},
			map[string]any{"role": "assistant", "content": nil, "tool_calls": []map[string]any{{"id": id, "type": "function",
				"function": map[string]any{"name": "read_file", "arguments": fmt.Sprintf(`{"path":"src/file_%d.go"}`, turn)}}}},
			map[string]any{"role": "tool", "tool_call_id": id, "content": text(result, turn+5)})
	}
	return build()
}
