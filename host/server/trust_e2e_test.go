package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/gjson"
)

// englandFlag is a flag written with tag characters (U+E0067…), which
// strconv.Quote escapes as \U000e0067: not JSON.
const englandFlag = "\U0001F3F4\U000E0067\U000E0062\U000E0065\U000E006E\U000E0067\U000E007F"

// A server tool's result holding DEL, ESC, bytes that are not UTF-8 and a
// flag reaches the next upstream turn and the client as valid JSON (issue
// 31 item 5): once from a hostile page fetched by service:web_fetch, once
// from a module (tooltest) whose result carries the raw bytes itself; each
// answered as JSON and streamed.
func TestServerToolHostileResult(t *testing.T) {
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "DEL[\x7f] ESC[\x1b] bad[\xff\xfe] flag["+englandFlag+"]")
	}))
	t.Cleanup(page.Close)
	g := start(t, gatewaytest.Options{AllowPrivateNetworks: true})
	root := gatewaytest.Root()
	m, err := os.ReadFile(filepath.Join(root, "host", "tools", "testdata", "tooltest", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if resp, body := publish(t, g, g.Key, filepath.Join(root, "build", "testdata", "tooltest.wasm"), string(m), "", true); resp.StatusCode/100 != 2 {
		t.Fatalf("publish: %d %s", resp.StatusCode, body.Raw)
	}
	for _, tc := range []struct{ name, user, tools string }{
		{"web_fetch of a hostile page", "Please fetch " + page.URL + "/hostile", `[{"type":"service:web_fetch"}]`},
		{"module result", `call:tooltest args:{"hostile":true}`, `[{"type":"service:tooltest"}]`},
	} {
		for _, stream := range []bool{false, true} {
			name := tc.name
			if stream {
				name += " streamed"
			}
			t.Run(name, func(t *testing.T) {
				extra := ""
				if stream {
					extra = `,"stream":true`
				}
				body := toolsBody(tc.user, tc.tools, extra)
				var answer string
				if stream {
					raw := readStream(t, g, body)
					var text strings.Builder
					done := false
					for _, line := range strings.Split(raw, "\n") {
						data, ok := strings.CutPrefix(line, "data: ")
						if !ok {
							continue
						}
						if data == "[DONE]" {
							done = true
							continue
						}
						if !json.Valid([]byte(data)) || !utf8.ValidString(data) {
							t.Fatalf("an event the client got is not valid JSON: %q", data)
						}
						if e := gjson.Get(data, "error"); e.Exists() {
							t.Fatalf("the stream ended in an error: %s", data)
						}
						text.WriteString(gjson.Get(data, "choices.0.delta.content").Str)
					}
					if !done {
						t.Fatalf("no [DONE]: %s", raw)
					}
					answer = text.String()
				} else {
					resp, res := post(t, g, "/chat/completions", body)
					if resp.StatusCode != http.StatusOK {
						t.Fatalf("%d %s", resp.StatusCode, res.Raw)
					}
					answer = res.Get("choices.0.message.content").Str
				}
				// The second turn's body: valid JSON whose tool message holds
				// the result, DEL and flag as they are, the bad bytes as
				// U+FFFD (web-fetch makes a run of them one), the ESC as the
				// result's own escape.
				sent := g.Upstreams["alpha"].Last().Body
				if !json.Valid(sent) || !utf8.Valid(sent) {
					t.Fatalf("the next upstream turn's body is not valid JSON: %q", sent)
				}
				msgs := gjson.GetBytes(sent, "messages").Array()
				tool := msgs[len(msgs)-1]
				want := []string{"DEL[\x7f]", `ESC[\u001b]`, "bad[\uFFFD", "flag[" + englandFlag + "]"}
				for _, w := range want {
					if tool.Get("role").Str != "tool" || !strings.Contains(tool.Get("content").Str, w) {
						t.Fatalf("tool message lacks %q: %q", w, tool.Raw)
					}
				}
				// The model quoted the result back: the client got it.
				if !strings.Contains(answer, "Tool results:") || !strings.Contains(answer, englandFlag) || !strings.Contains(answer, "DEL[\x7f]") {
					t.Fatalf("answer %q", answer)
				}
			})
		}
	}
}
