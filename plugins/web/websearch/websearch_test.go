package websearch_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/plugins/web/websearch"
	"github.com/switchyard/switchyard/plugins/web/webtest"
	"github.com/tidwall/gjson"
)

// secrets stand in for the host: it substitutes ${secret:NAME} in header
// values and the URL, as the gateway does for a granted secret.
var secrets = map[string]string{"EXA_API_KEY": "exa-key", "BRAVE_API_KEY": "brave-key", "TAVILY_API_KEY": "tvly-key", "SEARX_TOKEN": "searx-key"}

func substitute(s string) string {
	for k, v := range secrets {
		s = strings.ReplaceAll(s, "${secret:"+k+"}", v)
	}
	return s
}

// nativeHTTP is the module's outbound call made with net/http.
func nativeHTTP(t testing.TB) websearch.HTTPFunc {
	return func(method, url, headers string, body []byte) (int, []byte, error) {
		req, err := http.NewRequest(method, substitute(url), bytes.NewReader(body))
		if err != nil {
			return 0, nil, err
		}
		for _, line := range strings.Split(headers, "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok {
				req.Header.Add(strings.TrimSpace(k), substitute(strings.TrimSpace(v)))
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, b, err
	}
}

// fakes starts one fake of each engine and the settings pointing at them.
func fakes(t testing.TB) (map[string]*webtest.Engine, websearch.Settings) {
	s := websearch.Settings{Engine: "demo", Engines: map[string]websearch.EngineSettings{}}
	es := map[string]*webtest.Engine{}
	for name, key := range map[string]string{"searxng": "", "exa": "exa-key", "brave": "brave-key", "tavily": "tvly-key"} {
		f := webtest.New(name, key)
		srv := httptest.NewServer(f)
		t.Cleanup(srv.Close)
		es[name] = f
		s.Engines[name] = websearch.EngineSettings{BaseURL: srv.URL}
	}
	return es, s
}

func TestEnginesAgainstFakes(t *testing.T) {
	es, s := fakes(t)
	do := nativeHTTP(t)
	for _, engine := range []string{"searxng", "exa", "brave", "tavily"} {
		t.Run(engine, func(t *testing.T) {
			o := websearch.Options{Engine: engine, MaxResults: 3}
			if err := o.Resolve(s); err != nil {
				t.Fatal(err)
			}
			rs, err := websearch.Search(do, s, o, "webassembly gateway")
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) != 3 {
				t.Fatalf("want 3 results (max_results), got %d: %+v", len(rs), rs)
			}
			for _, r := range rs {
				if r.URL == "" || r.Title == "" || r.Content == "" || strings.Contains(r.Content, "<strong>") {
					t.Fatalf("incomplete or unclean result %+v", r)
				}
			}
			c := es[engine].Last()
			switch engine {
			case "searxng":
				if c.Method != "GET" || c.Path != "/search" || c.Query.Get("format") != "json" || c.Query.Get("q") != "webassembly gateway" {
					t.Fatalf("%+v", c)
				}
			case "exa":
				if c.Method != "POST" || c.Header.Get("x-api-key") != "exa-key" || gjson.GetBytes(c.Body, "numResults").Int() != 3 ||
					gjson.GetBytes(c.Body, "query").Str != "webassembly gateway" || !gjson.GetBytes(c.Body, "contents.text").Exists() {
					t.Fatalf("%+v %s", c, c.Body)
				}
			case "brave":
				if c.Method != "GET" || c.Path != "/res/v1/web/search" || c.Header.Get("X-Subscription-Token") != "brave-key" || c.Query.Get("count") != "3" {
					t.Fatalf("%+v", c)
				}
			case "tavily":
				if c.Method != "POST" || c.Header.Get("Authorization") != "Bearer tvly-key" || gjson.GetBytes(c.Body, "max_results").Int() != 3 {
					t.Fatalf("%+v %s", c, c.Body)
				}
			}
		})
	}
}

func TestEngineFailures(t *testing.T) {
	es, s := fakes(t)
	do := nativeHTTP(t)
	secrets["EXA_API_KEY"] = "wrong"
	defer func() { secrets["EXA_API_KEY"] = "exa-key" }()
	if _, err := websearch.Search(do, s, websearch.Options{Engine: "exa", MaxResults: 5}, "go"); err == nil || !strings.Contains(err.Error(), "API key") {
		t.Fatalf("a rejected key must say so: %v", err)
	}
	es["tavily"].Status = 432
	if _, err := websearch.Search(do, s, websearch.Options{Engine: "tavily", MaxResults: 5}, "go"); err == nil || !strings.Contains(err.Error(), "tavily answered HTTP 432: fake failure 432") {
		t.Fatalf("the engine's own message: %v", err)
	}
	es["brave"].Status = 429
	if _, err := websearch.Search(do, s, websearch.Options{Engine: "brave", MaxResults: 5}, "go"); err == nil || !strings.Contains(err.Error(), "brave answered HTTP 429: fake failure 429") {
		t.Fatalf("%v", err)
	}
	s.Engines["searxng"] = websearch.EngineSettings{}
	if _, err := websearch.Search(do, s, websearch.Options{Engine: "searxng", MaxResults: 5}, "go"); err == nil || !strings.Contains(err.Error(), "base_url") {
		t.Fatalf("an unconfigured SearXNG must name the setting: %v", err)
	}
}

// The engines' documented answers (trimmed from their API references).
func TestParseDocumentedPayloads(t *testing.T) {
	cases := []struct {
		engine, body string
		want         websearch.Result
	}{
		{"searxng", `{"query":"q","number_of_results":0,"results":[{"url":"https://a.org/x","title":"A","content":"about a","engine":"bing","parsed_url":["https","a.org","/x","","",""],"engines":["bing"],"positions":[1],"score":1.0,"category":"general","publishedDate":null}],"answers":[],"corrections":[],"infoboxes":[],"suggestions":[],"unresponsive_engines":[]}`,
			websearch.Result{URL: "https://a.org/x", Title: "A", Content: "about a"}},
		{"exa", `{"requestId":"b5947044c4b78efa9552a7c89b306d95","resolvedSearchType":"neural","results":[{"title":"A Comprehensive Overview","url":"https://arxiv.org/pdf/2307.06435.pdf","publishedDate":"2023-11-16T01:36:32.547Z","author":"Humza Naveed","id":"https://arxiv.org/abs/2307.06435","text":"Abstract Large Language Models","highlights":["Such requirements have limited their adoption"],"score":0.42}],"costDollars":{"total":0.005}}`,
			websearch.Result{URL: "https://arxiv.org/pdf/2307.06435.pdf", Title: "A Comprehensive Overview", Content: "Abstract Large Language Models", Published: "2023-11-16T01:36:32.547Z"}},
		{"exa", `{"results":[{"title":"H","url":"https://h.io","highlights":["one","two"]}]}`,
			websearch.Result{URL: "https://h.io", Title: "H", Content: "one [...] two"}},
		{"brave", `{"type":"search","query":{"original":"brave search"},"web":{"type":"search","results":[{"title":"<strong>Brave</strong> Search","url":"https://search.brave.com/","is_source_local":false,"description":"Search the web privately with <strong>Brave</strong>.","page_age":"2023-02-01T00:00:00","extra_snippets":["More text."]}],"family_friendly":true}}`,
			websearch.Result{URL: "https://search.brave.com/", Title: "Brave Search", Content: "Search the web privately with Brave. More text.", Published: "2023-02-01T00:00:00"}},
		{"tavily", `{"query":"Who is Leo Messi?","follow_up_questions":null,"answer":null,"images":[],"results":[{"title":"Lionel Messi Facts","url":"https://www.britannica.com/facts/Lionel-Messi","content":"Lionel Messi, an Argentine footballer","score":0.81,"raw_content":null}],"response_time":"1.67","request_id":"123e4567"}`,
			websearch.Result{URL: "https://www.britannica.com/facts/Lionel-Messi", Title: "Lionel Messi Facts", Content: "Lionel Messi, an Argentine footballer"}},
	}
	for _, tc := range cases {
		rs, err := websearch.ParseResponse(tc.engine, []byte(tc.body))
		if err != nil || len(rs) != 1 || rs[0] != tc.want {
			t.Fatalf("%s: %+v %v, want %+v", tc.engine, rs, err, tc.want)
		}
	}
	if _, err := websearch.ParseResponse("searxng", []byte(`<html>`)); err == nil || !strings.Contains(err.Error(), "format=json") {
		t.Fatalf("%v", err)
	}
}

func TestBuildRequests(t *testing.T) {
	q := websearch.Query{Text: "wasm plugins", MaxResults: 4, Include: []string{"*.substack.com", "openai.com/blog"}, Exclude: []string{"nytimes.com"}, Country: "DE"}
	cases := []struct {
		engine                   string
		method, url, headers, js string
	}{
		{"searxng", "GET", "http://s/search?format=json&language=all&q=wasm+plugins", "Accept: application/json", ""},
		{"exa", "POST", "http://s/search", "Content-Type: application/json\nAccept: application/json\nx-api-key: ${secret:EXA_API_KEY}",
			`{"contents":{"text":{"maxCharacters":1000}},"excludeDomains":["nytimes.com"],"includeDomains":["substack.com","openai.com"],"numResults":4,"query":"wasm plugins","type":"auto","userLocation":"DE"}`},
		{"brave", "GET", "http://s/res/v1/web/search?count=20&country=de&q=wasm+plugins", "Accept: application/json\nX-Subscription-Token: ${secret:BRAVE_API_KEY}", ""},
		{"tavily", "POST", "http://s/search", "Content-Type: application/json\nAuthorization: Bearer ${secret:TAVILY_API_KEY}",
			`{"exclude_domains":["nytimes.com"],"include_domains":["substack.com","openai.com"],"max_results":4,"query":"wasm plugins","search_depth":"basic","topic":"general"}`},
	}
	for _, tc := range cases {
		es := websearch.Settings{Engines: map[string]websearch.EngineSettings{tc.engine: {BaseURL: "http://s/"}}}.For(tc.engine)
		r, err := websearch.BuildRequest(tc.engine, es, q)
		if err != nil {
			t.Fatal(err)
		}
		if r.Method != tc.method || r.URL != tc.url || r.Headers != tc.headers || string(r.Body) != tc.js {
			t.Fatalf("%s:\n got %s %s\n%s\n%s\nwant %s %s\n%s\n%s", tc.engine, r.Method, r.URL, r.Headers, r.Body, tc.method, tc.url, tc.headers, tc.js)
		}
	}
	// Without filters Brave is asked for max_results.
	if r, _ := websearch.BuildRequest("brave", websearch.Settings{}.For("brave"), websearch.Query{Text: "x", MaxResults: 3}); !strings.Contains(r.URL, "count=3") {
		t.Fatal(r.URL)
	}
	// A wildcard the engines cannot express: no include list goes out
	// (the module filters), rather than a list that loses its matches.
	r, _ := websearch.BuildRequest("exa", websearch.Settings{}.For("exa"), websearch.Query{Text: "x", MaxResults: 1, Include: []string{"a.com", "docs.*.io"}})
	if gjson.GetBytes(r.Body, "includeDomains").Exists() || !strings.HasPrefix(r.URL, "https://api.exa.ai/") {
		t.Fatalf("%s %s", r.URL, r.Body)
	}
}

func TestDomainFilters(t *testing.T) {
	cases := []struct {
		url              string
		include, exclude []string
		want             bool
	}{
		{"https://example.com/a", nil, nil, true},
		{"https://news.example.com/a", []string{"example.com"}, nil, true},
		{"https://badexample.com/a", []string{"example.com"}, nil, false},
		{"https://www.example.com/a", []string{"example.com"}, nil, true},
		{"https://x.substack.com/p/1", []string{"*.substack.com"}, nil, true},
		{"https://substack.com/p/1", []string{"*.substack.com"}, nil, false},
		{"https://docs.rs.io/", []string{"docs.*.io"}, nil, true},
		{"https://openai.com/blog/post", []string{"openai.com/blog"}, nil, true},
		{"https://openai.com/blog", []string{"https://openai.com/blog/"}, nil, true},
		{"https://openai.com/blogs/post", []string{"openai.com/blog"}, nil, false},
		{"https://openai.com/research/x", []string{"openai.com/blog"}, nil, false},
		{"https://OpenAI.com/Blog/x", []string{"openai.com/blog"}, nil, true},
		{"https://openai.com/blog/x", nil, []string{"openai.com/blog"}, false},
		{"https://openai.com/research/x", nil, []string{"openai.com/blog"}, true},
		{"https://a.nytimes.com/x", []string{"*.com"}, []string{"nytimes.com"}, false},
		{"ftp://example.com/x", nil, nil, false},
		{"not a url", nil, nil, false},
	}
	for _, tc := range cases {
		if got := websearch.Allowed(tc.url, tc.include, tc.exclude); got != tc.want {
			t.Errorf("Allowed(%q, %q, %q) = %v, want %v", tc.url, tc.include, tc.exclude, got, tc.want)
		}
	}
	// Filter applies max and drops duplicates.
	rs := []websearch.Result{{URL: "https://a.com/1"}, {URL: "https://a.com/1"}, {URL: "https://b.com/1"}, {URL: "https://a.com/2"}, {URL: "https://a.com/3"}}
	got := websearch.Filter(rs, []string{"a.com"}, nil, 2)
	if len(got) != 2 || got[0].URL != "https://a.com/1" || got[1].URL != "https://a.com/2" {
		t.Fatalf("%+v", got)
	}
}

func TestAnnotationOffsets(t *testing.T) {
	rs := []websearch.Result{
		{URL: "https://go.dev/blog/wasi", Title: "WASI", Content: "Go on WASI"},
		{URL: "https://openai.com/blog/web-search/", Title: "Search", Content: "search"},
		{URL: "https://unused.org/x", Title: "Unused", Content: "never cited"},
	}
	content := "Naïve — see [go.dev](https://go.dev/blog/wasi) and https://openai.com/blog/web-search. Not https://go.dev/blog/wasi2."
	var anns []struct {
		Type        string `json:"type"`
		URLCitation struct {
			URL, Title, Content string
			Start               int `json:"start_index"`
			End                 int `json:"end_index"`
		} `json:"url_citation"`
	}
	if err := json.Unmarshal(websearch.Annotations(content, rs), &anns); err != nil {
		t.Fatal(err)
	}
	runes := []rune(content)
	want := []struct{ url, span string }{
		{"https://go.dev/blog/wasi", "[go.dev](https://go.dev/blog/wasi)"},
		{"https://openai.com/blog/web-search/", "https://openai.com/blog/web-search"},
		{"https://unused.org/x", content},
	}
	if len(anns) != len(want) {
		t.Fatalf("%+v", anns)
	}
	for i, w := range want {
		a := anns[i]
		if a.Type != "url_citation" || a.URLCitation.URL != w.url || a.URLCitation.Title == "" || a.URLCitation.Content == "" {
			t.Fatalf("%d: %+v", i, a)
		}
		if got := string(runes[a.URLCitation.Start:a.URLCitation.End]); got != w.span {
			t.Fatalf("%d: content[%d:%d] = %q, want %q", i, a.URLCitation.Start, a.URLCitation.End, got, w.span)
		}
	}
}

func TestDemoEngine(t *testing.T) {
	s := websearch.Settings{Engine: "demo"}
	o := websearch.Options{}
	if err := o.Resolve(s); err != nil || o.Engine != "demo" || o.MaxResults != 5 {
		t.Fatalf("%+v %v", o, err)
	}
	rs, err := websearch.Search(nil, s, o, "How do provider fallbacks work when routing?")
	if err != nil || len(rs) == 0 || len(rs) > 5 {
		t.Fatalf("%+v %v", rs, err)
	}
	for _, r := range rs {
		if !strings.HasSuffix(r.Title, websearch.DemoSuffix) || !strings.Contains(r.URL, "switchyard.demo") {
			t.Fatalf("a demo result must say so: %+v", r)
		}
	}
	if !strings.Contains(rs[0].URL, "routing") {
		t.Fatalf("routing docs should rank first: %+v", rs[0])
	}
	o.Include = []string{"docs.switchyard.demo/billing"}
	rs, _ = websearch.Search(nil, s, o, "How do provider fallbacks work when routing?")
	for _, r := range rs {
		if !strings.HasPrefix(r.URL, "https://docs.switchyard.demo/billing") {
			t.Fatalf("include_domains path prefix ignored: %s", r.URL)
		}
	}
	if rs, _ := websearch.Search(nil, s, o, "zzzxqv"); len(rs) != 0 {
		t.Fatalf("%+v", rs)
	}
}
