package server_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/gjson"
)

// TestGenerationContent: GET /generation/content (OpenRouter's shape:
// data.input, data.output.completion/reasoning, data.error) over loopback.
// Off by default, with a 404 that says how to turn it on; once the
// account turns it on, a chat answer as JSON, a stream and a legacy
// completion are readable by any key of the account, and by no key of
// another account (404, not 403). One gateway for every step.
func TestGenerationContent(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	content := func(key, id string) (int, gjson.Result) {
		t.Helper()
		resp, b, err := g.Request("GET", "/generation/content?id="+url.QueryEscape(id), "", "Authorization", "Bearer "+key)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, gjson.ParseBytes(b)
	}

	resp, body := post(t, g, "/chat/completions", hello)
	id := resp.Header.Get("X-Generation-Id")
	if resp.StatusCode != 200 || id == "" {
		t.Fatalf("%d %s", resp.StatusCode, body.Raw)
	}
	if code, b := content(g.Key, id); code != 404 || !strings.Contains(b.Get("error.message").Str, `PUT /api/v1/accounts/me/store_content {"store_content": true}`) {
		t.Fatalf("off by default: %d %s", code, b.Raw)
	}

	plain, _, _ := g.Keys.CreateKey(g.AccountID, "plain", "", false)
	if r, b, _ := g.Request("PUT", "/accounts/me/store_content", `{"store_content":true}`, "Authorization", "Bearer "+plain); r.StatusCode != 403 {
		t.Fatalf("an ordinary key turned storage on: %d %s", r.StatusCode, b)
	}
	if r, b, _ := g.Request("PUT", "/accounts/me/store_content", `{"store_content":"yes"}`); r.StatusCode != 400 {
		t.Fatalf("bad body: %d %s", r.StatusCode, b)
	}
	if r, b, _ := g.Request("PUT", "/accounts/me/store_content", `{"store_content":true}`); r.StatusCode != 200 ||
		gjson.GetBytes(b, "data.store_content").Raw != "true" || gjson.GetBytes(b, "data.source").Str != "account" {
		t.Fatalf("turning it on: %d %s", r.StatusCode, b)
	}
	if code, b := content(g.Key, id); code != 404 || !strings.Contains(b.Get("error.message").Str, "made before storage was turned on") {
		t.Fatalf("a generation from before: %d %s", code, b.Raw)
	}

	t.Run("json", func(t *testing.T) {
		resp, body := post(t, g, "/chat/completions", `{"model":"test/chat","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"store me"}]}`,
			"Authorization", "Bearer "+plain)
		id := resp.Header.Get("X-Generation-Id")
		code, b := content(g.Key, id) // another key of the same account
		if code != 200 {
			t.Fatalf("%d %s", code, b.Raw)
		}
		if got := b.Get("data.input.messages").Raw; got != `[{"role":"system","content":"be brief"},{"role":"user","content":"store me"}]` {
			t.Errorf("input %s", got)
		}
		if got, want := b.Get("data.output.completion").Str, body.Get("choices.0.message.content").Str; got != want || want == "" {
			t.Errorf("completion %q, want %q", got, want)
		}
		// The members @openrouter/sdk requires are present, null when empty.
		for _, path := range []string{"data.output.reasoning", "data.error"} {
			if v := b.Get(path); v.Raw != "null" {
				t.Errorf("%s = %s, want null", path, v.Raw)
			}
		}
	})

	t.Run("stream", func(t *testing.T) {
		raw := readStream(t, g, `{"model":"test/chat","stream":true,"messages":[{"role":"user","content":"stream me"}]}`)
		var id, text string
		for _, line := range strings.Split(raw, "\n") {
			if ev, ok := strings.CutPrefix(line, "data: "); ok && ev != "[DONE]" {
				id = gjson.Get(ev, "id").Str
				text += gjson.Get(ev, "choices.0.delta.content").Str
			}
		}
		// Right after [DONE]: the record is stored before [DONE] is sent.
		code, b := content(g.Key, id)
		if code != 200 || text == "" || b.Get("data.output.completion").Str != text || b.Get("data.input.messages.0.content").Str != "stream me" {
			t.Fatalf("%d %s; streamed %q", code, b.Raw, text)
		}
	})

	t.Run("legacy completion", func(t *testing.T) {
		resp, body := post(t, g, "/completions", `{"model":"test/chat","prompt":"complete me"}`)
		code, b := content(g.Key, resp.Header.Get("X-Generation-Id"))
		if code != 200 || b.Get("data.input.prompt").Str != "complete me" || b.Get("data.output.completion").Str != body.Get("choices.0.text").Str {
			t.Fatalf("%d %s", code, b.Raw)
		}
	})

	t.Run("another account", func(t *testing.T) {
		resp, _ := post(t, g, "/chat/completions", hello)
		id := resp.Header.Get("X-Generation-Id")
		_, other := newAccount(t, g, "other", 1e12)
		if r, b, _ := g.Request("PUT", "/accounts/me/store_content", `{"store_content":true}`, "Authorization", "Bearer "+other); r.StatusCode != 200 {
			t.Fatalf("%d %s", r.StatusCode, b)
		}
		if code, b := content(other, id); code != 404 || strings.Contains(b.Raw, "store me") {
			t.Fatalf("another account's key: %d %s", code, b.Raw)
		}
		if code, _ := content(g.Key, id); code != 200 {
			t.Fatalf("own key: %d", code)
		}
	})

	if r, b, _ := g.Request("PUT", "/accounts/me/store_content", `{"store_content":null}`); r.StatusCode != 200 ||
		gjson.GetBytes(b, "data.store_content").Raw != "false" || gjson.GetBytes(b, "data.source").Str != "default" {
		t.Fatalf("back to the default: %d %s", r.StatusCode, b)
	}
	if code, b := content(g.Key, ""); code != 400 {
		t.Fatalf("no id: %d %s", code, b.Raw)
	}
}
