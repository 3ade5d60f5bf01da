// Package webtest has fake search engines that speak the documented wire
// formats of SearXNG (GET /search?format=json), Exa (POST /search), Brave
// Search API (GET /res/v1/web/search) and Tavily (POST /search), each
// checking its own authentication, for the web module's tests and the
// gateway's. They search a small fixed corpus (Corpus).
package webtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
)

// Page is one document of the fake web.
type Page struct{ URL, Title, Text, Published string }

// Corpus is what every fake engine searches.
var Corpus = []Page{
	{"https://go.dev/doc/effective_go", "Effective Go", "Tips for writing clear, idiomatic Go code: formatting, names, WebAssembly-free.", "2024-01-02"},
	{"https://go.dev/blog/wasi", "WASI support in Go", "Go 1.21 adds a port to WASI preview 1, so Go programs run as WebAssembly outside the browser.", "2023-09-13"},
	{"https://tinygo.substack.com/p/wasm-gateways", "Gateways made of WebAssembly", "A newsletter on running WebAssembly plugins inside an API gateway.", "2025-03-01"},
	{"https://openai.com/blog/web-search", "Web search in the API", "OpenAI models can search the web: web_search_options in chat completions, with url_citation annotations.", "2025-03-11"},
	{"https://openai.com/research/webassembly-agents", "Agents and WebAssembly", "Research note: sandboxing agent tools with WebAssembly.", "2025-05-20"},
	{"https://www.nytimes.com/2025/06/01/technology/webassembly.html", "WebAssembly Is Everywhere Now", "The web's fourth language moved to servers, gateways and plugins.", "2025-06-01"},
}

// Call is one request a fake received.
type Call struct {
	Method, Path string
	Query        url.Values
	Header       http.Header
	Body         []byte
}

// Engine is a fake search API. It is an http.Handler.
type Engine struct {
	Name string // searxng, exa, brave, tavily
	// Key is the API key it accepts (searxng: none unless set).
	Key string
	// Status, when set, answers every request with it and the engine's
	// error body.
	Status int

	mu    sync.Mutex
	calls []Call
}

// Calls are the requests received so far.
func (e *Engine) Calls() []Call {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Call(nil), e.calls...)
}

// Last is the last request received (zero when none).
func (e *Engine) Last() Call {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.calls) == 0 {
		return Call{}
	}
	return e.calls[len(e.calls)-1]
}

// New returns a fake of engine name accepting key.
func New(name, key string) *Engine { return &Engine{Name: name, Key: key} }

func match(q string) []Page {
	var out []Page
	words := strings.Fields(strings.ToLower(q))
	for _, p := range Corpus {
		hay := strings.ToLower(p.Title + " " + p.Text + " " + p.URL)
		for _, w := range words {
			if len(w) > 2 && strings.Contains(hay, w) {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

func hostIn(u string, domains []string) bool {
	pu, err := url.Parse(u)
	if err != nil {
		return false
	}
	h := strings.TrimPrefix(pu.Hostname(), "www.")
	for _, d := range domains {
		if h == d || strings.HasSuffix(h, "."+d) {
			return true
		}
	}
	return false
}

// domains applies an engine's include/exclude lists (plain domains, as the
// engines document them).
func domains(ps []Page, include, exclude []string) []Page {
	var out []Page
	for _, p := range ps {
		if len(include) > 0 && !hostIn(p.URL, include) || hostIn(p.URL, exclude) {
			continue
		}
		out = append(out, p)
	}
	return out
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (e *Engine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	e.mu.Lock()
	e.calls = append(e.calls, Call{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Header: r.Header.Clone(), Body: body})
	e.mu.Unlock()
	switch e.Name {
	case "searxng":
		e.searxng(w, r)
	case "exa":
		e.exa(w, r, body)
	case "brave":
		e.brave(w, r)
	case "tavily":
		e.tavily(w, r, body)
	default:
		http.NotFound(w, r)
	}
}

// searxng: GET /search?q=…&format=json. An instance without the json format
// enabled answers 403; this one has it on.
func (e *Engine) searxng(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet || r.URL.Path != "/search" {
		http.NotFound(w, r)
		return
	}
	if r.URL.Query().Get("format") != "json" {
		http.Error(w, "403 Forbidden", http.StatusForbidden)
		return
	}
	if e.Key != "" && r.Header.Get("Authorization") != "Bearer "+e.Key {
		http.Error(w, "401 Unauthorized", http.StatusUnauthorized)
		return
	}
	if e.Status != 0 {
		http.Error(w, http.StatusText(e.Status), e.Status)
		return
	}
	q := r.URL.Query().Get("q")
	results := []map[string]any{}
	for i, p := range match(q) {
		u, _ := url.Parse(p.URL)
		results = append(results, map[string]any{
			"url": p.URL, "title": p.Title, "content": p.Text, "engine": "duckduckgo",
			"parsed_url": []string{u.Scheme, u.Host, u.Path, "", "", ""}, "template": "default.html",
			"engines": []string{"duckduckgo", "brave"}, "positions": []int{i + 1}, "score": 2.0 / float64(i+1),
			"category": "general", "publishedDate": p.Published + "T00:00:00",
		})
	}
	writeJSON(w, 200, map[string]any{
		"query": q, "number_of_results": 0, "results": results, "answers": []any{},
		"corrections": []any{}, "infoboxes": []any{}, "suggestions": []any{}, "unresponsive_engines": []any{},
	})
}

// exa: POST /search, key in x-api-key (or Authorization: Bearer).
func (e *Engine) exa(w http.ResponseWriter, r *http.Request, body []byte) {
	if r.Method != http.MethodPost || r.URL.Path != "/search" {
		writeJSON(w, 404, map[string]any{"requestId": "req_fake", "error": "Not found"})
		return
	}
	if r.Header.Get("x-api-key") != e.Key && r.Header.Get("Authorization") != "Bearer "+e.Key {
		writeJSON(w, 401, map[string]any{"requestId": "req_fake", "error": "Invalid API key", "tag": "INVALID_API_KEY"})
		return
	}
	if e.Status != 0 {
		writeJSON(w, e.Status, map[string]any{"requestId": "req_fake", "error": fmt.Sprintf("fake failure %d", e.Status)})
		return
	}
	var req struct {
		Query          string   `json:"query"`
		NumResults     int      `json:"numResults"`
		IncludeDomains []string `json:"includeDomains"`
		ExcludeDomains []string `json:"excludeDomains"`
		Contents       struct {
			Text any `json:"text"`
		} `json:"contents"`
	}
	if err := json.Unmarshal(body, &req); err != nil || req.Query == "" {
		writeJSON(w, 400, map[string]any{"requestId": "req_fake", "error": "query: Required"})
		return
	}
	if req.NumResults == 0 {
		req.NumResults = 10
	}
	results := []map[string]any{}
	for i, p := range domains(match(req.Query), req.IncludeDomains, req.ExcludeDomains) {
		if i == req.NumResults {
			break
		}
		x := map[string]any{"id": p.URL, "title": p.Title, "url": p.URL, "publishedDate": p.Published + "T00:00:00.000Z", "author": nil, "score": 0.5}
		if req.Contents.Text != nil {
			x["text"] = p.Text
		}
		results = append(results, x)
	}
	writeJSON(w, 200, map[string]any{"requestId": "req_fake", "resolvedSearchType": "neural", "searchType": "auto", "results": results, "costDollars": map[string]any{"total": 0.005}})
}

// brave: GET /res/v1/web/search?q=…&count=…, key in X-Subscription-Token.
func (e *Engine) brave(w http.ResponseWriter, r *http.Request) {
	braveErr := func(status int, code, detail string) {
		writeJSON(w, status, map[string]any{"type": "ErrorResponse", "error": map[string]any{"id": "fake", "status": status, "code": code, "detail": detail, "meta": map[string]any{}}, "time": 1700000000})
	}
	if r.Method != http.MethodGet || r.URL.Path != "/res/v1/web/search" {
		braveErr(404, "NOT_FOUND", "Resource not found.")
		return
	}
	if r.Header.Get("X-Subscription-Token") != e.Key {
		braveErr(422, "SUBSCRIPTION_TOKEN_INVALID", "The provided subscription token is invalid.")
		return
	}
	if e.Status != 0 {
		braveErr(e.Status, "FAKE", fmt.Sprintf("fake failure %d", e.Status))
		return
	}
	q := r.URL.Query().Get("q")
	if q == "" {
		braveErr(422, "VALIDATION", "Unable to validate request parameter(s)")
		return
	}
	count := 20
	if c, err := strconv.Atoi(r.URL.Query().Get("count")); err == nil && c > 0 && c <= 20 {
		count = c
	}
	results := []map[string]any{}
	for i, p := range match(q) {
		if i == count {
			break
		}
		desc := p.Text
		if w := strings.Fields(q); len(w) > 0 {
			desc = strings.Replace(desc, w[0], "<strong>"+w[0]+"</strong>", 1)
		}
		results = append(results, map[string]any{
			"type": "search_result", "title": p.Title, "url": p.URL, "is_source_local": false, "is_source_both": false,
			"description": desc, "page_age": p.Published + "T00:00:00", "language": "en", "family_friendly": true,
			"profile": map[string]any{"name": p.Title, "url": p.URL},
		})
	}
	writeJSON(w, 200, map[string]any{
		"type": "search", "query": map[string]any{"original": q, "more_results_available": false},
		"mixed": map[string]any{"type": "mixed", "main": []any{}},
		"web":   map[string]any{"type": "search", "results": results, "family_friendly": true},
	})
}

// tavily: POST /search, key as Authorization: Bearer tvly-….
func (e *Engine) tavily(w http.ResponseWriter, r *http.Request, body []byte) {
	if r.Method != http.MethodPost || r.URL.Path != "/search" {
		writeJSON(w, 404, map[string]any{"detail": map[string]any{"error": "Not Found"}})
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+e.Key {
		writeJSON(w, 401, map[string]any{"detail": map[string]any{"error": "Unauthorized: missing or invalid API key."}})
		return
	}
	if e.Status != 0 {
		writeJSON(w, e.Status, map[string]any{"detail": map[string]any{"error": fmt.Sprintf("fake failure %d", e.Status)}})
		return
	}
	var req struct {
		Query          string   `json:"query"`
		MaxResults     int      `json:"max_results"`
		IncludeDomains []string `json:"include_domains"`
		ExcludeDomains []string `json:"exclude_domains"`
	}
	if err := json.Unmarshal(body, &req); err != nil || req.Query == "" {
		writeJSON(w, 400, map[string]any{"detail": map[string]any{"error": "Query is missing."}})
		return
	}
	if req.MaxResults == 0 {
		req.MaxResults = 5
	}
	results := []map[string]any{}
	for i, p := range domains(match(req.Query), req.IncludeDomains, req.ExcludeDomains) {
		if i == req.MaxResults {
			break
		}
		results = append(results, map[string]any{"url": p.URL, "title": p.Title, "content": p.Text, "score": 0.8, "raw_content": nil})
	}
	writeJSON(w, 200, map[string]any{"query": req.Query, "follow_up_questions": nil, "answer": nil, "images": []any{}, "results": results, "response_time": "0.42", "request_id": "fake"})
}
