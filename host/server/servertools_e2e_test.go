package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/host/gatewaytest"
)

// toolsBody is a chat request offering service:datetime.
func toolsBody(user, extra string) string {
	return `{"model":"test/chat","messages":[{"role":"user","content":` + quote(user) + `}],"tools":[{"type":"service:datetime"}]` + extra + `}`
}

func quote(s string) string { b, _ := jsonMarshal(s); return string(b) }

func TestServerToolDatetime(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	resp, body := post(t, g, "/chat/completions", toolsBody("What time is it in Oslo? tz:Europe/Oslo", ""), "X-Service-Metadata", "enabled")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body.Raw)
	}
	t.Log(body.Raw)
	content := body.Get("choices.0.message.content").Str
	if !strings.Contains(content, `"timezone":"Europe/Oslo"`) || body.Get("choices.0.finish_reason").Str != "stop" {
		t.Fatalf("the answer does not quote the tool's result: %s", body.Raw)
	}
}

var jsonMarshal = json.Marshal
