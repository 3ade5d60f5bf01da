//go:build !wasip1

package fileparsertest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/gjson"
)

// A scan's pages go to the vision model together (chat_batch), not one
// after another: this vision upstream answers no page until both pages of
// scan-img2pdf.pdf have arrived, so a page sent alone times out (the
// catalog's provider timeout, or the 503 it gives after 20 s) and the
// request fails — as it did before the pages were batched.
func TestFileParserVisionPagesAtOnce(t *testing.T) {
	var mu sync.Mutex
	arrived := 0
	both := make(chan struct{})
	pageRe := regexp.MustCompile(`Page (\d+) of (\d+)`)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		m := pageRe.FindStringSubmatch(string(b))
		mu.Lock()
		arrived++
		if arrived == 2 {
			close(both)
		}
		mu.Unlock()
		select {
		case <-both:
		case <-time.After(20 * time.Second):
			http.Error(w, `{"error":{"message":"the other page never came"}}`, http.StatusServiceUnavailable)
			return
		}
		page := "?"
		if m != nil {
			page = m[1]
		}
		content, _ := json.Marshal("transcribed page " + page + " while the other was in flight")
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"x","object":"chat.completion","created":1,"model":"barrier-vision","choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`, content)
	}))
	defer up.Close()
	yml := strings.Replace(visionYAML(`{vision: {model: test/barrier-vision}}`), "models:\n",
		"  - {slug: barrier, name: barrier, adapter: openai, base_url: \""+up.URL+"/v1\", data_collection: deny, region: us}\nmodels:\n"+
			"  - id: test/barrier-vision\n    kind: chat\n    context_length: 32768\n    input_modalities: [text, image]\n    endpoints:\n"+
			"      - {provider: barrier, upstream_model: barrier-vision, max_output: 4096, price: {prompt: 1, completion: 2}}\n", 1)
	g, err := gatewaytest.Start(gatewaytest.Options{Quiet: true, ConfigYAML: yml, Anthropic: []string{"claude"}, Gemini: []string{"gem"},
		Env: map[string]string{"GEM_KEY": "AIza-test-key-0123456789"}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	status, body := post(t, g, fileRequest("scan-img2pdf.pdf", dataURL(t, "scan-img2pdf.pdf"), vision))
	if status != 200 {
		t.Fatalf("status %d: %s", status, body.Raw)
	}
	text := gjson.ParseBytes(g.Upstreams["alpha"].Last().Body).Get("messages.0.content.1.text").Str
	for _, want := range []string{"--- page 1 ---\ntranscribed page 1 while", "--- page 2 ---\ntranscribed page 2 while"} {
		if !strings.Contains(text, want) {
			t.Fatalf("upstream got %q, want %q in it", text, want)
		}
	}
}
