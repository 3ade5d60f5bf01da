//go:build !wasip1

package fetch_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/gjson"
)

// These tests run the built module (make wasm) inside a real gateway on
// loopback: the plugin form, through the pipeline, to the fake upstream.

func startGateway(t *testing.T, allowPrivate bool) *gatewaytest.Gateway {
	t.Helper()
	g, err := gatewaytest.Start(gatewaytest.Options{Quiet: true, AllowPrivateNetworks: allowPrivate})
	if err != nil {
		t.Fatalf("%v (run make wasm)", err)
	}
	t.Cleanup(g.Close)
	return g
}

func pages(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/guide", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, `<html><head><title>Kite guide</title><script>NOISE()</script></head><body><nav>NAV-NOISE</nav><main><h1>Flying kites</h1><p>Wind between 10 and 25 km/h.</p></main></body></html>`)
	})
	mux.HandleFunc("/file.zip", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/zip")
		w.Write([]byte("PK\x03\x04"))
	})
	mux.HandleFunc("/long", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html><head><title>Long read</title></head><body><main><h1>Long read</h1>")
		for i := range 1500 { // ~150 KB, some 35,000 tokens
			io.WriteString(w, "<p>A sentence of the long article that goes on to make the page large, paragraph "+strconv.Itoa(i)+".</p>\n")
		}
		io.WriteString(w, "</main></body></html>")
	})
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

func chat(t *testing.T, g *gatewaytest.Gateway, body string) (int, gjson.Result) {
	t.Helper()
	req, _ := http.NewRequest("POST", g.URL+"/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+g.Key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Service-Metadata", "enabled")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, gjson.ParseBytes(b)
}

func TestGatewayPlugin(t *testing.T) {
	g := startGateway(t, true)
	site := pages(t)
	body := `{"model":"test/chat","messages":[{"role":"user","content":"What does ` + site.URL + `/guide say? Also ` + site.URL + `/file.zip"}],"plugins":[{"id":"web-fetch"}]}`
	status, res := chat(t, g, body)
	if status != 200 {
		t.Fatalf("%d %s", status, res.Raw)
	}
	sent := gjson.ParseBytes(g.Upstreams["alpha"].Last().Body)
	msgs := sent.Get("messages").Array()
	if len(msgs) != 2 || msgs[0].Get("role").Str != "system" {
		t.Fatalf("upstream got messages %s", sent.Get("messages").Raw)
	}
	inj := msgs[0].Get("content").Str
	for _, want := range []string{`title="Kite guide"`, "# Flying kites", "Wind between 10 and 25 km/h.", `/file.zip" status="failed"`, "application/zip, not text"} {
		if !strings.Contains(inj, want) {
			t.Errorf("the model was not given %q:\n%s", want, inj)
		}
	}
	if strings.Contains(inj, "NOISE") {
		t.Errorf("page noise reached the model:\n%s", inj)
	}
	stage := res.Get(`service_metadata.pipeline.#(name=="web-fetch")`)
	if stage.Get("data.fetched").Int() != 1 || stage.Get("data.failed").Int() != 1 {
		t.Fatalf("pipeline %s", res.Get("service_metadata.pipeline").Raw)
	}

	// An unknown option is a 400 naming it (the manifest's config_schema).
	status, res = chat(t, g, `{"model":"test/chat","messages":[{"role":"user","content":"hi"}],"plugins":[{"id":"web-fetch","max_pages":2}]}`)
	if status != 400 || !strings.Contains(res.Get("error.message").Str, "max_pages") {
		t.Fatalf("unknown option: %d %s", status, res.Raw)
	}
}

// TestGatewayPluginFitsSmallContext: a page far larger than the model's
// context (test/chat: 8,192 tokens) is cut to fit it, at a paragraph, and
// the request is answered; before, the whole page went in and the
// gateway answered 400 (the prompt does not fit the largest context).
func TestGatewayPluginFitsSmallContext(t *testing.T) {
	g := startGateway(t, true)
	site := pages(t)
	status, res := chat(t, g, `{"model":"test/chat","messages":[{"role":"user","content":"Summarise `+site.URL+`/long"}],"plugins":[{"id":"web-fetch"}]}`)
	if status != 200 {
		t.Fatalf("%d %s", status, res.Raw)
	}
	inj := gjson.ParseBytes(g.Upstreams["alpha"].Last().Body).Get("messages.0.content").Str
	if !strings.Contains(inj, "paragraph 0.") || !strings.Contains(inj, ".\n\n[… content truncated to fit the model's context]\n</page>") || strings.Contains(inj, "paragraph 1499.") {
		t.Fatalf("the page was not cut at a paragraph with the mark:\n…%s", inj[max(0, len(inj)-300):])
	}
	stage := res.Get(`service_metadata.pipeline.#(name=="web-fetch")`)
	if stage.Get("data.fitted_to_context").Int() != 1 || !strings.Contains(stage.Get("summary").Str, "cut to fit the model's context") ||
		!stage.Get("data.pages.0.fitted_to_context").Bool() {
		t.Fatalf("stage %s", stage.Raw)
	}
}

func TestGatewayPluginSSRFGuard(t *testing.T) {
	// Without the operator's private-network setting the host refuses
	// loopback: the page is reported as failed, the request still answers.
	g := startGateway(t, false)
	site := pages(t)
	status, res := chat(t, g, `{"model":"test/chat","messages":[{"role":"user","content":"read `+site.URL+`/guide"}],"plugins":[{"id":"web-fetch"}]}`)
	if status != 200 {
		t.Fatalf("%d %s", status, res.Raw)
	}
	inj := gjson.ParseBytes(g.Upstreams["alpha"].Last().Body).Get("messages.0.content").Str
	if !strings.Contains(inj, `status="failed"`) || !strings.Contains(inj, "not public") || strings.Contains(inj, "Flying kites") {
		t.Fatalf("loopback page fetched past the guard:\n%s", inj)
	}
}

// TestGatewayDemoSite is the README's offline example: the demo page built
// into the module is fetched with no network and no private-host grant.
func TestGatewayDemoSite(t *testing.T) {
	g := startGateway(t, false)
	status, res := chat(t, g, `{"model":"test/chat","messages":[{"role":"user","content":"Summarise https://switchyard.demo/web-fetch/tides please."}],"plugins":[{"id":"web-fetch","max_content_tokens":2000}]}`)
	if status != 200 {
		t.Fatalf("%d %s", status, res.Raw)
	}
	inj := gjson.ParseBytes(g.Upstreams["alpha"].Last().Body).Get("messages.0.content").Str
	for _, want := range []string{`title="Tide tables for beginners (Switchyard demo page)"`, "| Dover | 06:12 | 6.4 m |", "not a real web site"} {
		if !strings.Contains(inj, want) {
			t.Errorf("the model was not given %q:\n%s", want, inj)
		}
	}
}
