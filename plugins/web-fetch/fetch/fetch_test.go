package fetch

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/sdk"
	"github.com/tidwall/gjson"
)

// articlePage is a page the way sites build them: the content in <main>
// between a navigation bar, a cookie banner, scripts, styles and a footer.
const articlePage = `<!doctype html>
<html><head><title>Tide tables | Harbour Guide</title>
<style>body{font-family:serif} .nav{color:red}</style>
<script>window.tracker = "TRACKING-NOISE"; document.write("SCRIPT-NOISE")</script>
</head><body>
<header><a href="/">Harbour Guide</a> <span>HEADER-NOISE</span></header>
<nav><ul><li><a href="/home">NAV-NOISE Home</a></li><li><a href="/about">About</a></li></ul></nav>
<div class="cookie-banner">COOKIE-NOISE We use cookies <button>Accept</button></div>
<main>
<h1>Tide tables</h1>
<p>High tide comes twice a day. See the <a href="/charts/north">north charts</a> for details.</p>
<h2>What to bring</h2>
<ul><li>A watch</li><li>Boots</li></ul>
<table><thead><tr><th>Port</th><th>High tide</th></tr></thead>
<tbody><tr><td>Dover</td><td>06:12</td></tr><tr><td>Calais</td><td>06:40</td></tr></tbody></table>
<div class="share-buttons">SHARE-NOISE</div>
</main>
<aside>SIDEBAR-NOISE Related links</aside>
<footer>FOOTER-NOISE © Harbour Guide</footer>
<script src="/app.js"></script>
</body></html>`

func TestMarkdown(t *testing.T) {
	title, md, err := Markdown([]byte(articlePage), "https://harbour.example/tides")
	if err != nil {
		t.Fatal(err)
	}
	if title != "Tide tables | Harbour Guide" {
		t.Errorf("title %q", title)
	}
	for _, want := range []string{
		"# Tide tables",
		"## What to bring",
		"- A watch",
		"[north charts](https://harbour.example/charts/north)",
		"| Port | High tide |",
		"| Dover | 06:12 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	for _, noise := range []string{"NOISE", "font-family", "tracker", "Accept"} {
		if strings.Contains(md, noise) {
			t.Errorf("markdown keeps %q:\n%s", noise, md)
		}
	}
}

func TestMarkdownWithoutMain(t *testing.T) {
	cases := []struct{ name, page, want, noise string }{
		{"article", `<html><body><div id="menu">MENU-NOISE</div><article><h1>Post</h1><p>Body text.</p></article><div role="contentinfo">INFO-NOISE</div></body></html>`, "# Post\n\nBody text.", "NOISE"},
		{"role main", `<html><body><div role="navigation">NAV-NOISE</div><div role="main"><p>Only this.</p></div></body></html>`, "Only this.", "NOISE"},
		{"body only", `<html><body><div class="navbar">BAR-NOISE</div><p>Plain <b>page</b>.</p><div class="sidebar">SIDE-NOISE</div></body></html>`, "Plain **page**.", "NOISE"},
		{"code kept", `<html><body><main><pre><code>go test ./...</code></pre></main></body></html>`, "```\ngo test ./...\n```", "NOISE"},
		{"title from h1", `<html><body><main><h1>Heading title</h1></main></body></html>`, "# Heading title", "NOISE"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, md, err := Markdown([]byte(tc.page), "https://x.example/")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(md, tc.want) || strings.Contains(md, tc.noise) {
				t.Fatalf("got:\n%s\nwant it to contain %q and not %q", md, tc.want, tc.noise)
			}
		})
	}
}

// web is a fake web: one loopback server that answers for every host name
// (the host name stays in the URL, so the domain rules see it), reached
// through an HTTPFunc that behaves like the host's http function: no
// redirects followed, a 4 MiB response cap, a timeout.
type web struct {
	srv     *httptest.Server
	release chan struct{}
	calls   []string
}

func newWeb(t *testing.T) *web {
	w := &web{release: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("/article", func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(rw, articlePage)
	})
	mux.HandleFunc("/redirect", func(rw http.ResponseWriter, r *http.Request) {
		http.Redirect(rw, r, "/article", http.StatusFound)
	})
	mux.HandleFunc("/to-blocked", func(rw http.ResponseWriter, r *http.Request) {
		http.Redirect(rw, r, "http://ads.blocked.example/article", http.StatusMovedPermanently)
	})
	mux.HandleFunc("/to-ftp", func(rw http.ResponseWriter, r *http.Request) {
		http.Redirect(rw, r, "ftp://files.example/x", http.StatusFound)
	})
	mux.HandleFunc("/loop", func(rw http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		http.Redirect(rw, r, "/loop?n="+strconv.Itoa(n+1), http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/huge", func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/html")
		io.WriteString(rw, "<html><body><main>")
		chunk := strings.Repeat("<p>padding text for a very large page</p>\n", 1000)
		for written := 0; written < 20<<20; written += len(chunk) {
			if _, err := io.WriteString(rw, chunk); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/large", func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/html")
		io.WriteString(rw, "<html><body><main><h1>Start of a 2 MB page</h1>")
		io.WriteString(rw, strings.Repeat("<p>more text</p>\n", (2<<20)/17))
		io.WriteString(rw, "<p>END-OF-PAGE</p></main></body></html>")
	})
	mux.HandleFunc("/image", func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "image/png")
		rw.Write([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"))
	})
	mux.HandleFunc("/untyped-binary", func(rw http.ResponseWriter, r *http.Request) {
		rw.Header()["Content-Type"] = nil // no sniffing by net/http either
		rw.Write([]byte{0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0})
	})
	mux.HandleFunc("/slow", func(rw http.ResponseWriter, r *http.Request) {
		select {
		case <-w.release:
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("/data.json", func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		io.WriteString(rw, `{"tides":[{"port":"Dover","high":"06:12"}]}`)
	})
	mux.HandleFunc("/notes.txt", func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/plain")
		io.WriteString(rw, "Line one.\n<not html>\n")
	})
	mux.HandleFunc("/latin1", func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/html; charset=ISO-8859-1")
		rw.Write([]byte("<html><head><title>Caf\xe9</title></head><body><main><p>Cr\xe8me br\xfbl\xe9e</p></main></body></html>"))
	})
	mux.HandleFunc("/missing", func(rw http.ResponseWriter, r *http.Request) { http.NotFound(rw, r) })
	// Every page is dated by a fixed Date header but the text file, which
	// has none: its retrieved_at is the time of the call.
	w.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/notes.txt" {
			rw.Header()["Date"] = nil
		} else {
			rw.Header().Set("Date", "Mon, 23 Nov 2026 21:00:00 GMT")
		}
		mux.ServeHTTP(rw, r)
	}))
	t.Cleanup(func() { close(w.release); w.srv.Close() })
	return w
}

func (w *web) env() *Env {
	addr := w.srv.Listener.Addr().String()
	client := &http.Client{
		// Like the host's call timeout, shorter: long enough for a 4 MiB body
		// on a loaded machine, and what ends the slow page.
		Timeout: 3 * time.Second,
		Transport: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	const maxResp = 4 << 20
	return &Env{
		Now: func() time.Time { return time.Date(2026, 11, 23, 22, 0, 0, 0, time.UTC) },
		HTTP: func(method, url, headers string, body []byte) (int, string, []byte, error) {
			w.calls = append(w.calls, url)
			req, err := http.NewRequest(method, url, nil)
			if err != nil {
				return 0, "", nil, err
			}
			resp, err := client.Do(req)
			if err != nil {
				return 0, "", nil, errors.New("request failed: timeout or connection error")
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(io.LimitReader(resp.Body, maxResp+1))
			if err != nil {
				return 0, "", nil, err
			}
			if len(b) > maxResp {
				return 0, "", nil, errors.New("response larger than 4194304 bytes")
			}
			var h strings.Builder
			for k, vs := range resp.Header {
				for _, v := range vs {
					h.WriteString(k + ": " + v + "\n")
				}
			}
			return resp.StatusCode, h.String(), b, nil
		},
	}
}

func TestFetch(t *testing.T) {
	w := newWeb(t)
	cases := []struct {
		name    string
		url     string
		opts    Options
		status  string
		content []string // substrings of content (completed) or error (failed)
		title   string
	}{
		{"html page", "http://harbour.example/article", Options{}, StatusCompleted, []string{"# Tide tables", "| Dover | 06:12 |", "(http://harbour.example/charts/north)"}, "Tide tables | Harbour Guide"},
		{"redirect followed", "http://harbour.example/redirect", Options{}, StatusCompleted, []string{"# Tide tables"}, "Tide tables | Harbour Guide"},
		{"redirect to a blocked domain", "http://harbour.example/to-blocked", Options{BlockedDomains: []string{"blocked.example"}}, StatusFailed, []string{"redirect to http://ads.blocked.example/article refused", "blocked"}, ""},
		{"redirect outside allowed_domains", "http://harbour.example/to-blocked", Options{AllowedDomains: []string{"harbour.example"}}, StatusFailed, []string{"not among allowed_domains"}, ""},
		{"redirect to another scheme", "http://harbour.example/to-ftp", Options{}, StatusFailed, []string{"only http and https"}, ""},
		{"redirect loop", "http://harbour.example/loop", Options{}, StatusFailed, []string{"more than 5 redirects"}, ""},
		{"blocked domain", "http://www.blocked.example/article", Options{BlockedDomains: []string{"blocked.example"}}, StatusFailed, []string{"www.blocked.example is blocked"}, ""},
		{"blocked wildcard", "http://a.blocked.example/article", Options{BlockedDomains: []string{"*.blocked.example"}}, StatusFailed, []string{"is blocked"}, ""},
		{"allowed path prefix", "http://harbour.example/article", Options{AllowedDomains: []string{"harbour.example/docs"}}, StatusFailed, []string{"not among allowed_domains"}, ""},
		{"allowed domain", "http://docs.harbour.example/article", Options{AllowedDomains: []string{"harbour.example"}}, StatusCompleted, []string{"# Tide tables"}, "Tide tables | Harbour Guide"},
		{"20 MB page", "http://harbour.example/huge", Options{}, StatusFailed, []string{"response larger than"}, ""},
		{"2 MB page: HTML past 1 MB cut", "http://harbour.example/large", Options{}, StatusCompleted, []string{"# Start of a 2 MB page", "more text", truncMark}, "Start of a 2 MB page"},
		{"binary content", "http://harbour.example/image", Options{}, StatusFailed, []string{"image/png, not text"}, ""},
		{"binary without a type", "http://harbour.example/untyped-binary", Options{}, StatusFailed, []string{"binary content is not fetched"}, ""},
		{"slow page", "http://harbour.example/slow", Options{}, StatusFailed, []string{"timeout"}, ""},
		{"json as it is", "http://harbour.example/data.json", Options{}, StatusCompleted, []string{`{"tides":[{"port":"Dover","high":"06:12"}]}`}, ""},
		{"text as it is", "http://harbour.example/notes.txt", Options{}, StatusCompleted, []string{"Line one.\n<not html>"}, ""},
		{"latin-1 page", "http://harbour.example/latin1", Options{}, StatusCompleted, []string{"Crème brûlée"}, "Café"},
		{"not found", "http://harbour.example/missing", Options{}, StatusFailed, []string{"HTTP 404"}, ""},
		{"not a URL", "file:///etc/passwd", Options{}, StatusFailed, []string{"only http and https"}, ""},
		{"credentials", "http://user:pw@harbour.example/article", Options{}, StatusFailed, []string{"credentials"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := w.env().Fetch(tc.opts, tc.url)
			if r.Status != tc.status {
				t.Fatalf("status %q (error %q), want %q", r.Status, r.Error, tc.status)
			}
			got := r.Content
			if r.Status == StatusFailed {
				got = r.Error
				if r.Content != "" || r.Title != "" {
					t.Errorf("a failed result carries content %q", r.Content)
				}
			} else {
				want := "2026-11-23T21:00:00Z" // the page's Date
				if strings.HasSuffix(tc.url, "/notes.txt") {
					want = "2026-11-23T22:00:00Z" // env.Now
				}
				if r.RetrievedAt != want {
					t.Errorf("retrieved_at %q, want %q", r.RetrievedAt, want)
				}
			}
			for _, want := range tc.content {
				if !strings.Contains(got, want) {
					t.Errorf("%s lacks %q:\n%s", r.Status, want, got)
				}
			}
			if strings.Contains(got, "END-OF-PAGE") {
				t.Errorf("HTML past MaxHTMLBytes converted")
			}
			if r.Title != tc.title {
				t.Errorf("title %q, want %q", r.Title, tc.title)
			}
			if r.URL != tc.url {
				t.Errorf("url %q, want the one asked for %q", r.URL, tc.url)
			}
		})
	}
}

func TestFetchTruncates(t *testing.T) {
	w := newWeb(t)
	env := w.env()
	full := env.Fetch(Options{}, "http://harbour.example/article")
	r := env.Fetch(Options{MaxContentTokens: 10}, "http://harbour.example/article")
	if !r.Truncated || !strings.HasSuffix(r.Content, truncMark) {
		t.Fatalf("not marked as truncated: %q", r.Content)
	}
	body := strings.TrimSuffix(r.Content, truncMark)
	if env.tokens("", body) > 10 || !strings.HasPrefix(full.Content, body) {
		t.Fatalf("truncated to %d tokens (%q), want a prefix of at most 10", env.tokens("", body), body)
	}
	// With the host's tokenizer the cut follows its count for the model.
	env.CountTokens = func(model, s string) (int, error) {
		if model != "m" {
			t.Errorf("counted for model %q", model)
		}
		return len(strings.Fields(s)), nil
	}
	r = env.Fetch(Options{MaxContentTokens: 5, model: "m"}, "http://harbour.example/article")
	if n := len(strings.Fields(strings.TrimSuffix(r.Content, truncMark))); n > 5 || n == 0 {
		t.Fatalf("%d words kept: %q", n, r.Content)
	}
}

// memKV is the kv host function's behaviour: a map (TTL not modelled).
type memKV map[string][]byte

func (m memKV) env(e *Env) *Env {
	e.KVGet = func(k string) ([]byte, bool, error) { v, ok := m[k]; return v, ok, nil }
	e.KVPut = func(k string, v []byte, _ int) error {
		if len(v) == 0 {
			delete(m, k)
		} else {
			m[k] = append([]byte(nil), v...)
		}
		return nil
	}
	return e
}

func TestFetchCaches(t *testing.T) {
	w := newWeb(t)
	kv := memKV{}
	env := kv.env(w.env())
	first := env.Fetch(Options{}, "http://harbour.example/article")
	second := env.Fetch(Options{MaxContentTokens: 5}, "http://harbour.example/article")
	if len(w.calls) != 1 {
		t.Fatalf("%d network fetches for two calls of one page: %v", len(w.calls), w.calls)
	}
	if first.Status != StatusCompleted || !second.Truncated || second.Title != first.Title {
		t.Fatalf("cached page served wrong: %+v", second)
	}
	// Failures are not cached: the next call tries again.
	env.Fetch(Options{}, "http://harbour.example/missing")
	env.Fetch(Options{}, "http://harbour.example/missing")
	if len(w.calls) != 3 {
		t.Fatalf("failed fetch cached: %v", w.calls)
	}
}

func TestURLs(t *testing.T) {
	got := URLs(`Read https://a.example/x, then (see http://b.example/y?q=1). Also <https://c.example/z> and https://a.example/x again; https://en.wikipedia.org/wiki/Tide_(disambiguation).`)
	want := []string{"https://a.example/x", "http://b.example/y?q=1", "https://c.example/z", "https://en.wikipedia.org/wiki/Tide_(disambiguation)"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}

func toolCall(t *testing.T, m *Module, ctx, args string) gjson.Result {
	t.Helper()
	out, err := sdk.Run(m.ToolCall, []byte(ctx), []byte("web_fetch"), []byte(args))
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 || string(out[1]) != "" {
		t.Fatalf("tool_call output %q: want result and an empty cost", out)
	}
	if !gjson.ValidBytes(out[0]) {
		t.Fatalf("result is not JSON: %s", out[0])
	}
	return gjson.ParseBytes(out[0])
}

func TestToolCall(t *testing.T) {
	w := newWeb(t)
	m := &Module{Env: memKV{}.env(w.env())}
	ctx := `{"request_id":"req_1","model":"m","config":{"id":"web-fetch","blocked_domains":["blocked.example"]},"parameters":{"max_uses":2,"max_content_tokens":1000}}`

	r := toolCall(t, m, ctx, `{"url":"http://harbour.example/article"}`)
	if r.Get("status").Str != "completed" || r.Get("title").Str != "Tide tables | Harbour Guide" ||
		!strings.Contains(r.Get("content").Str, "# Tide tables") || r.Get("retrieved_at").Str == "" || r.Get("url").Str != "http://harbour.example/article" {
		t.Fatalf("result %s", r.Raw)
	}
	for _, k := range []string{"http_status", "truncated", "error"} {
		if r.Get(k).Exists() {
			t.Errorf("result has %q beyond the spec's fields: %s", k, r.Raw)
		}
	}
	// The plugin's blocked_domains apply to the tool.
	r = toolCall(t, m, ctx, `{"url":"http://blocked.example/"}`)
	if r.Get("status").Str != "failed" || !strings.Contains(r.Get("error").Str, "blocked") || r.Get("content").Exists() {
		t.Fatalf("blocked domain: %s", r.Raw)
	}
	// max_uses 2 is spent (two calls above): the third is an error result.
	r = toolCall(t, m, ctx, `{"url":"http://harbour.example/article"}`)
	if r.Get("status").Str != "failed" || !strings.Contains(r.Get("error").Str, "max_uses") {
		t.Fatalf("third call past max_uses: %s", r.Raw)
	}
	// Another request has its own count.
	r = toolCall(t, m, strings.Replace(ctx, "req_1", "req_2", 1), `{"url":"http://harbour.example/article"}`)
	if r.Get("status").Str != "completed" {
		t.Fatalf("other request: %s", r.Raw)
	}
	// A count from the host (ctx.calls) is the one used.
	r = toolCall(t, m, `{"request_id":"req_3","calls":2,"parameters":{"max_uses":2}}`, `{"url":"http://harbour.example/article"}`)
	if r.Get("status").Str != "failed" || !strings.Contains(r.Get("error").Str, "max_uses") {
		t.Fatalf("ctx.calls 2 of max_uses 2: %s", r.Raw)
	}
	r = toolCall(t, m, `{"request_id":"req_3","calls":1,"parameters":{"max_uses":2}}`, `{"url":"http://harbour.example/article"}`)
	if r.Get("status").Str != "completed" {
		t.Fatalf("ctx.calls 1 of max_uses 2: %s", r.Raw)
	}
	// A store that fails: an explicit max_uses is not silently ignored; the
	// default one does not stop fetching.
	broken := &Module{Env: w.env()}
	broken.Env.KVGet = func(string) ([]byte, bool, error) { return nil, false, errors.New("kv is not available") }
	broken.Env.KVPut = func(string, []byte, int) error { return errors.New("kv is not available") }
	r = toolCall(t, broken, `{"request_id":"req_4","parameters":{"max_uses":3}}`, `{"url":"http://harbour.example/article"}`)
	if r.Get("status").Str != "failed" || !strings.Contains(r.Get("error").Str, "cannot count") {
		t.Fatalf("explicit max_uses without a count: %s", r.Raw)
	}
	r = toolCall(t, broken, `{"request_id":"req_4"}`, `{"url":"http://harbour.example/article"}`)
	if r.Get("status").Str != "completed" {
		t.Fatalf("default max_uses without a count: %s", r.Raw)
	}
	for _, bad := range []string{`{}`, `{"url":42}`, `not json`, `{"url":"  "}`} {
		r = toolCall(t, m, ctx, bad)
		if r.Get("status").Str != "failed" || !strings.Contains(r.Get("error").Str, `{"url"`) {
			t.Errorf("arguments %s: %s", bad, r.Raw)
		}
	}
}

func TestPreRequest(t *testing.T) {
	w := newWeb(t)
	m := &Module{Env: w.env()}
	body := `{"model":"m","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"old http://harbour.example/notes.txt"},{"role":"assistant","content":"ok"},{"role":"user","content":[{"type":"text","text":"Summarise http://harbour.example/article and http://harbour.example/image please"}]}]}`
	out, err := sdk.Run(m.PreRequest, []byte(`{"config":{"id":"web-fetch"},"model":"m"}`), []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if string(out[0]) != abi.ActionContinue {
		t.Fatalf("action %q", out[0])
	}
	msgs := gjson.GetBytes(out[1], "messages").Array()
	if len(msgs) != 5 || msgs[3].Get("role").Str != "system" || msgs[4].Get("role").Str != "user" {
		t.Fatalf("messages %s", gjson.GetBytes(out[1], "messages").Raw)
	}
	inj := msgs[3].Get("content").Str
	for _, want := range []string{InjectLead, `<page url="http://harbour.example/article" title="Tide tables | Harbour Guide"`, "| Dover | 06:12 |", `<page url="http://harbour.example/image" status="failed">`, "not text"} {
		if !strings.Contains(inj, want) {
			t.Errorf("injected message lacks %q:\n%s", want, inj)
		}
	}
	if strings.Contains(inj, "notes.txt") {
		t.Errorf("fetched a URL of an earlier message:\n%s", inj)
	}
	var sum struct {
		Summary string
		Data    struct{ Fetched, Failed int }
	}
	if err := json.Unmarshal(out[2], &sum); err != nil || sum.Data.Fetched != 1 || sum.Data.Failed != 1 {
		t.Fatalf("summary %s", out[2])
	}

	// No URL: the body is left alone.
	out, err = sdk.Run(m.PreRequest, []byte(`{"config":{"id":"web-fetch"}}`), []byte(`{"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil || string(out[1]) != "" {
		t.Fatalf("no URL: %q %v", out, err)
	}
	// max_uses bounds the URLs fetched.
	w.calls = nil
	out, _ = sdk.Run(m.PreRequest, []byte(`{"config":{"id":"web-fetch","max_uses":1}}`), []byte(`{"messages":[{"role":"user","content":"http://harbour.example/notes.txt http://harbour.example/data.json"}]}`))
	if len(w.calls) != 1 || !strings.Contains(string(out[1]), "1 more URL(s)") {
		t.Fatalf("max_uses 1: calls %v, body %s", w.calls, out[1])
	}
}

// page100K is a 100 KB article page: chrome around a main of sections with
// paragraphs, links, lists and a table.
func page100K() []byte { return pageOf(100_000) }

// pageOf is an article page of about size bytes, built as page100K's.
// Every tenth section has a table whose cells hold paragraphs and a list
// (flattenCells' work) and a paragraph with entities.
func pageOf(size int) []byte {
	var b strings.Builder
	b.WriteString(`<!doctype html><html><head><title>Big page</title><script>var x=1;</script><style>p{}</style></head><body><nav><a href="/">Home</a></nav><main>`)
	for i := 0; b.Len() < size; i++ {
		n := strconv.Itoa(i)
		b.WriteString(`<h2>Section ` + n + `<span class="mw-editsection">[<a href="/edit">edit</a>]</span></h2><p>Paragraph ` + n + ` with <a href="/p/` + n + `">a link</a>, <a name="a` + n + `">an anchor</a>, <em>emphasis</em> and <code>code</code>. Lorem ipsum dolor sit amet, consectetur adipiscing elit.</p><ul><li>one</li><li>two</li></ul>`)
		if i%10 == 0 {
			b.WriteString(`<table><tr><th>k</th><th>v</th></tr><tr><td><p>a</p><p>b</p></td><td>` + n + `<ul><li>x</li></ul></td></tr></table><p>if a &lt; b &amp;&amp; c</p>`)
		}
	}
	b.WriteString(`</main><footer>footer</footer></body></html>`)
	return []byte(b.String())
}

// BenchmarkMarkdown100K is the conversion of a 100 KB page, natively;
// BenchmarkModuleToolCall measures the same inside the module.
func BenchmarkMarkdown100K(b *testing.B) {
	page := page100K()
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Markdown(page, "https://x.example/"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMarkdownSizes converts pages of 10 KB, 100 KB and 1 MB (the
// largest converted, MaxHTMLBytes): the MB/s stays level when every step
// is linear in the page's size.
func BenchmarkMarkdownSizes(b *testing.B) {
	for _, size := range []int{10_000, 100_000, MaxHTMLBytes} {
		page := pageOf(size)
		b.Run(strconv.Itoa(size/1000)+"KB", func(b *testing.B) {
			b.SetBytes(int64(len(page)))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := Markdown(page, "https://x.example/"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestDemoSite(t *testing.T) {
	env := &Env{
		Now: func() time.Time { return time.Date(2026, 11, 23, 22, 0, 0, 0, time.UTC) },
		HTTP: func(method, url, headers string, body []byte) (int, string, []byte, error) {
			t.Errorf("the demo site went to the network: %s", url)
			return 0, "", nil, errors.New("no network")
		},
	}
	r := env.Fetch(Options{}, "https://switchyard.demo/web-fetch/tides")
	if r.Status != StatusCompleted || r.Title != "Tide tables for beginners (Switchyard demo page)" {
		t.Fatalf("%+v", r)
	}
	for _, want := range []string{"# Tide tables for beginners", "not a real web site", "| Dover | 06:12 | 6.4 m |", "[glossary](https://switchyard.demo/web-fetch/glossary)", "1. Find your port"} {
		if !strings.Contains(r.Content, want) {
			t.Errorf("demo page lacks %q:\n%s", want, r.Content)
		}
	}
	for _, noise := range []string{"analytics", "cookies", "Subscribe", "Wind for sailors", "Privacy", "font-family"} {
		if strings.Contains(r.Content, noise) {
			t.Errorf("demo page keeps %q:\n%s", noise, r.Content)
		}
	}
	if r := env.Fetch(Options{}, "https://switchyard.demo/web-fetch/tides.json"); r.Status != StatusCompleted || !strings.Contains(r.Content, `"port": "Dover"`) {
		t.Errorf("json: %+v", r)
	}
	if r := env.Fetch(Options{}, "https://switchyard.demo/nope"); r.Status != StatusFailed || !strings.Contains(r.Error, "HTTP 404") {
		t.Errorf("missing page: %+v", r)
	}
	// Domain rules apply to the demo site like to any other.
	if r := env.Fetch(Options{BlockedDomains: []string{"switchyard.demo"}}, "https://switchyard.demo/web-fetch/tides"); r.Status != StatusFailed {
		t.Errorf("blocked demo site fetched: %+v", r)
	}
}
