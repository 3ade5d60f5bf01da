package server_test

import (
	"strings"
	"testing"

	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/gjson"
)

// TestAttributionHeaders: OpenRouter's app-attribution headers, as its
// SDKs send them (httpReferer, appTitle/xTitle, appCategories), are
// recorded on the generation and shown by GET /generation as text: bounded,
// control characters dropped, markup kept as the characters it is.
func TestAttributionHeaders(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	long := strings.Repeat("é", 300) // 600 bytes
	for _, tc := range []struct {
		name                    string
		headers                 []string
		referer, title, catsRaw string
	}{
		{"OpenRouter's names", []string{"HTTP-Referer", "https://myapp.example/chat", "X-OpenRouter-Title", "My App", "X-OpenRouter-Categories", "cli-agent, programming-app"},
			"https://myapp.example/chat", "My App", `["cli-agent","programming-app"]`},
		{"the older X-Title", []string{"X-Title", "Legacy App"}, "", "Legacy App", ""},
		{"X-OpenRouter-Title wins", []string{"X-Title", "old", "X-OpenRouter-Title", "new"}, "", "new", ""},
		{"markup is text, bounds hold", []string{"X-OpenRouter-Title", `<img src=x onerror=alert(1)>` + long, "HTTP-Referer", "https://x.example/" + long},
			"https://x.example/" + strings.Repeat("é", (512-len("https://x.example/"))/2), (`<img src=x onerror=alert(1)>` + long)[:28+2*50], ""},
		{"no headers", nil, "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := post(t, g, "/chat/completions", `{"model":"test/chat","messages":[{"role":"user","content":"attribute me"}]}`, tc.headers...)
			if resp.StatusCode != 200 {
				t.Fatalf("%d %s", resp.StatusCode, b.Raw)
			}
			gen := generation(t, g, g.Key, b.Get("id").Str)
			if got := gen.Get("http_referer"); got.Str != tc.referer || (tc.referer == "" && got.Raw != "null") {
				t.Errorf("http_referer %s, want %q", got.Raw, tc.referer)
			}
			if got := gen.Get("app_title").Str; got != tc.title {
				t.Errorf("app_title %q, want %q", got, tc.title)
			}
			if got := gen.Get("app_categories").Raw; got != tc.catsRaw {
				t.Errorf("app_categories %s, want %s", got, tc.catsRaw)
			}
		})
	}
	// GET /activity group_by=app: the day's totals per app, one row for
	// the request that sent no attribution.
	resp, b, err := g.Request("GET", "/activity?group_by=app", "")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("activity: %v %s", err, b)
	}
	rows := gjson.GetBytes(b, "data").Array()
	found := map[string]int64{}
	for _, r := range rows {
		found[r.Get("http_referer").Str+"|"+r.Get("app_title").Str] += r.Get("requests").Int()
		if r.Get("usage").Type != gjson.Number {
			t.Errorf("row without OpenRouter's usage: %s", r.Raw)
		}
	}
	for app, n := range map[string]int64{"https://myapp.example/chat|My App": 1, "|Legacy App": 1, "|new": 1, "|": 1} {
		if found[app] != n {
			t.Errorf("activity by app: %q has %d requests, want %d: %s", app, found[app], n, b)
		}
	}
}
