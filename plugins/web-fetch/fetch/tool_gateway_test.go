//go:build !wasip1

package fetch_test

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// TestGatewayTool runs service:web_fetch through the server-tool loop: the
// demo model calls web_fetch for the URL in the message, the module fetches
// the offline demo page, and the model's next turn quotes the result.
func TestGatewayTool(t *testing.T) {
	g := startGateway(t, true)
	site := pages(t)
	cases := []struct {
		name, user, params string
		want               []string // in the answer (which quotes the tool results)
		calls              int
		failed             int
	}{
		{"demo page", "Please fetch https://switchyard.demo/web-fetch/tides", `{}`,
			[]string{`"status":"completed"`, `"title":"Tide tables for beginners (Switchyard demo page)"`, `| Dover | 06:12 | 6.4 m |`}, 1, 0},
		{"loopback page with the operator's grant", "Please fetch " + site.URL + "/guide", `{}`,
			[]string{`"status":"completed"`, `# Flying kites`}, 1, 0},
		{"binary page is a failed result", "Please fetch " + site.URL + "/file.zip", `{}`,
			[]string{`"status":"failed"`, `application/zip, not text`}, 1, 1},
		{"blocked domain", "Please fetch https://switchyard.demo/web-fetch/tides", `{"blocked_domains":["switchyard.demo"]}`,
			[]string{`"status":"failed"`, `is blocked (blocked_domains)`}, 1, 1},
		{"max_uses: calls past it are error results", `call:web_fetch again args:{"url":"https://switchyard.demo/web-fetch/glossary"}`, `{"max_uses":1}`,
			[]string{`"status":"completed"`, `max_uses reached`}, 3, 2},
		{"truncated to max_content_tokens", "Please fetch https://switchyard.demo/web-fetch/tides", `{"max_content_tokens":20}`,
			[]string{`[… content truncated]`}, 1, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u, _ := gjsonString(tc.user)
			body := `{"model":"test/chat","messages":[{"role":"user","content":` + u + `}],"tools":[{"type":"service:web_fetch","parameters":` + tc.params + `}],"max_tool_calls":3}`
			status, res := chat(t, g, body)
			if status != 200 {
				t.Fatalf("%d %s", status, res.Raw)
			}
			answer := res.Get("choices.0.message.content").Str
			for _, w := range tc.want {
				if !strings.Contains(answer, w) {
					t.Errorf("answer lacks %q:\n%s", w, answer)
				}
			}
			var calls, failed int
			for _, s := range res.Get("service_metadata.pipeline").Array() {
				if s.Get("type").Str == "server_tools" {
					s.Get("data.calls").ForEach(func(_, c gjson.Result) bool {
						calls++
						if c.Get("status").Str == "failed" {
							failed++
						}
						return true
					})
				}
			}
			if calls != tc.calls || failed != tc.failed {
				t.Fatalf("%d calls, %d failed; want %d, %d: %s", calls, failed, tc.calls, tc.failed, res.Get("service_metadata.pipeline").Raw)
			}
		})
	}
}

func gjsonString(s string) (string, error) {
	b := []byte{'"'}
	for _, r := range s {
		switch r {
		case '"', '\\':
			b = append(b, '\\', byte(r))
		default:
			b = append(b, string(r)...)
		}
	}
	return string(append(b, '"')), nil
}
