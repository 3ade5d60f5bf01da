package messages

import (
	"strings"
	"testing"

	"github.com/switchyard/switchyard/host/tokenize"
)

// PromptBound counts every byte of a native body but a base64 image's
// data, which counts as one image (request shapes from Anthropic's
// Messages API reference: text, thinking with signature, image blocks, and
// an image inside a tool_result).
func TestPromptBound(t *testing.T) {
	data := strings.Repeat("A", 40000)
	cases := []struct {
		name       string
		body       string
		wantImages int64
	}{
		{"text", `{"model":"claude-sonnet-4-5","max_tokens":1024,"messages":[{"role":"user","content":"Hello, Claude"}]}`, 0},
		{"thinking kept", `{"model":"m","max_tokens":1024,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"thinking","thinking":"` + strings.Repeat("hmm ", 5000) + `","signature":"EqQBCgIYAhIM"},{"type":"text","text":"ok"}]}]}`, 0},
		{"image", `{"model":"m","max_tokens":1024,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + data + `"}},{"type":"text","text":"What is this?"}]}]}`, 1},
		{"image in a tool result", `{"model":"m","max_tokens":1024,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + data + `"}}]}]}]}`, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tokens, images := PromptBound([]byte(tc.body))
			if images != tc.wantImages {
				t.Fatalf("images %d, want %d", images, tc.wantImages)
			}
			text := int64(len(tc.body))
			if images > 0 {
				text -= int64(len(data) + 2) // the data's raw JSON string
			}
			if tokens < text || tokens > text+images*tokenize.ImageTokensBound+64 {
				t.Fatalf("tokens %d for %d bytes of text and %d images", tokens, text, images)
			}
		})
	}
}
