package telemetry_test

import (
	"bufio"
	"bytes"
	"strings"
	"sync"
	"testing"

	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/gjson"
)

// syncBuffer is a log sink safe for the gateway's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// requestLines are the request lines logged so far.
func requestLines(log string) []gjson.Result {
	var out []gjson.Result
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if l := gjson.Parse(sc.Text()); l.Get("msg").Str == "request" {
			out = append(out, l)
		}
	}
	return out
}

// Every request leaves one line saying who asked what and what it cost;
// never the key, and the prompt and completion only for an account the
// operator turned content logging on for.
func TestRequestLogLine(t *testing.T) {
	buf := &syncBuffer{}
	g := start(t, gatewaytest.Options{LogTo: buf})
	const prompt = "hello there"
	resp, body := post(t, g, g.Key, hello(""))
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body.Raw)
	}
	answer := body.Get("choices.0.message.content").Str
	if resp, _ := post(t, g, "sk-not-a-key-of-this-gateway", hello("")); resp.StatusCode != 401 {
		t.Fatalf("bad key: %d", resp.StatusCode)
	}
	lines := requestLines(buf.String())
	if len(lines) != 2 {
		t.Fatalf("%d request lines, want 2:\n%s", len(lines), buf.String())
	}
	l := lines[0]
	k, err := g.Keys.Authenticate(g.Key)
	if err != nil {
		t.Fatal(err)
	}
	for field, want := range map[string]string{
		"generation_id": resp.Header.Get("X-Generation-Id"), "key_name": k.Name, "account": g.AccountID,
		"model": "test/chat", "provider": "alpha", "status": "200", "route": "/api/v1/chat/completions",
		"prompt_tokens": body.Get("usage.prompt_tokens").Raw, "completion_tokens": body.Get("usage.completion_tokens").Raw,
		"cost": body.Get("usage.cost").Raw, "level": "INFO",
	} {
		if got := l.Get(field).String(); got != want || want == "" {
			t.Errorf("request line %s = %q, want %q", field, got, want)
		}
	}
	if !l.Get("latency_ms").Exists() {
		t.Error("request line without latency_ms")
	}
	if lines[1].Get("status").Int() != 401 || lines[1].Get("key_name").Exists() || lines[1].Get("route").Str != "/api/v1" {
		t.Errorf("refused request's line: %s", lines[1].Raw)
	}
	log := buf.String()
	if strings.Contains(log, g.Key) || strings.Contains(log, "sk-not-a-key-of-this-gateway") {
		t.Fatal("a key's secret is in the log")
	}
	if strings.Contains(log, prompt) || (answer != "" && strings.Contains(log, answer)) {
		t.Fatalf("prompt or completion text logged without the account's consent:\n%s", log)
	}

	// Turned on for the account: the next lines carry the text, JSON and
	// stream alike.
	// Only the operator turns it on: a tenant's management key cannot.
	tenant, terr := g.Keys.CreateAccount("tenant")
	if terr != nil {
		t.Fatal(terr)
	}
	tenantKey, _, kerr := g.Keys.CreateKey(tenant.ID, "tenant-admin", "", true)
	if kerr != nil {
		t.Fatal(err)
	}
	on := `{"log_content":true}`
	if resp, b, err := g.Request("PUT", "/accounts/me/log_content", on, "Authorization", "Bearer "+tenantKey); err != nil || resp.StatusCode != 403 {
		t.Fatalf("tenant turning content logging on: %v %d %s", err, resp.StatusCode, b)
	}
	if resp, b, err := g.Request("PUT", "/accounts/me/log_content", on); err != nil || resp.StatusCode != 200 || gjson.GetBytes(b, "data.log_content").Bool() != true {
		t.Fatalf("operator turning content logging on: %v %s", err, b)
	}
	resp, body = post(t, g, g.Key, hello(""))
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body.Raw)
	}
	streamUsage(t, g, hello(`,"stream":true`))
	g.Close() // the stream's line is written when it ends
	lines = requestLines(buf.String())
	if len(lines) != 6 { // and the two PUTs'
		t.Fatalf("%d request lines, want 6", len(lines))
	}
	for _, l := range lines[2:4] { // the PUTs' own lines carry no body
		if l.Get("prompt").Exists() {
			t.Errorf("a management call's body was logged: %s", l.Raw)
		}
	}
	for _, l := range lines[4:] {
		if !strings.Contains(l.Get("prompt").Str, prompt) || l.Get("completion").Str == "" {
			t.Errorf("content logging on, but the line has prompt %q, completion %q", l.Get("prompt").Str, l.Get("completion").Str)
		}
	}
	if strings.Contains(buf.String(), g.Key) {
		t.Fatal("a key's secret is in the log")
	}
}
