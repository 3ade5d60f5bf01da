package websearch

import (
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
)

// Engine names (the `engine` option and settings.engine).
const (
	EngineDemo    = "demo"
	EngineNative  = "native"
	EngineSearXNG = "searxng"
	EngineExa     = "exa"
	EngineBrave   = "brave"
	EngineTavily  = "tavily"
)

// Engines lists every engine the module knows, for messages.
var Engines = []string{EngineDemo, EngineNative, EngineSearXNG, EngineExa, EngineBrave, EngineTavily}

// EngineSettings is the operator's configuration of one engine.
type EngineSettings struct {
	// BaseURL is where the engine's API lives (no trailing slash).
	BaseURL string `json:"base_url"`
	// Secret names the operator secret holding the engine's API key. The
	// module writes it as a ${secret:NAME} placeholder that the host
	// substitutes; the module never sees the key.
	Secret string `json:"secret"`
	// Fee is what one search costs, in dollars (decimal string), charged
	// to the caller as the tool's cost.
	Fee string `json:"fee"`
}

// defaults are the engines' public endpoints, the secret names the
// operator is expected to set, and list prices per search (Exa: $7 per
// 1,000 searches of up to 10 results; Brave Search API: $5 per 1,000
// requests; Tavily: one credit, $0.008, per basic search). The operator
// overrides any of them in module_settings.
var defaults = map[string]EngineSettings{
	EngineDemo:    {Fee: "0"},
	EngineNative:  {Fee: "0"},
	EngineSearXNG: {Fee: "0"}, // self-hosted: no default URL, no key
	EngineExa:     {BaseURL: "https://api.exa.ai", Secret: "EXA_API_KEY", Fee: "0.007"},
	EngineBrave:   {BaseURL: "https://api.search.brave.com", Secret: "BRAVE_API_KEY", Fee: "0.005"},
	EngineTavily:  {BaseURL: "https://api.tavily.com", Secret: "TAVILY_API_KEY", Fee: "0.008"},
}

// Query is one search to run.
type Query struct {
	Text       string
	MaxResults int
	Include    []string // domain patterns (filter.go)
	Exclude    []string
	Country    string // two-letter code from user_location, when given
}

// Request is an outbound HTTP call, in the shape sdk.HTTP takes.
type Request struct {
	Method, URL, Headers string
	Body                 []byte
}

// placeholder is what the host replaces with the operator's secret.
func placeholder(name string) string { return "${secret:" + name + "}" }

// BuildRequest is the HTTP call that asks engine for q, in each engine's
// documented wire format.
func BuildRequest(engine string, es EngineSettings, q Query) (Request, error) {
	base := strings.TrimRight(es.BaseURL, "/")
	if base == "" {
		return Request{}, errorf("engine " + engine + " has no base_url: the operator sets module_settings.web.engines." + engine + ".base_url")
	}
	n := q.MaxResults
	switch engine {
	case EngineSearXNG:
		// GET /search?q=…&format=json (the instance must enable the json
		// format in its settings.yml). SearXNG takes no result count; the
		// module cuts the list.
		v := url.Values{"q": {q.Text}, "format": {"json"}}
		if q.Country != "" {
			v.Set("language", "all")
		}
		h := "Accept: application/json"
		if es.Secret != "" { // an instance behind an authenticating proxy
			h += "\nAuthorization: Bearer " + placeholder(es.Secret)
		}
		return Request{Method: "GET", URL: base + "/search?" + v.Encode(), Headers: h}, nil
	case EngineExa:
		body := map[string]any{
			"query":      q.Text,
			"numResults": n,
			"type":       "auto",
			"contents":   map[string]any{"text": map[string]any{"maxCharacters": maxContent}},
		}
		if d := hostsOf(q.Include, true); len(d) > 0 {
			body["includeDomains"] = d
		}
		if d := hostsOf(q.Exclude, false); len(d) > 0 {
			body["excludeDomains"] = d
		}
		if q.Country != "" {
			body["userLocation"] = q.Country
		}
		b, _ := json.Marshal(body)
		return Request{Method: "POST", URL: base + "/search", Headers: "Content-Type: application/json\nAccept: application/json\nx-api-key: " + placeholder(es.Secret), Body: b}, nil
	case EngineBrave:
		// GET /res/v1/web/search?q=…&count=… (count at most 20). Brave
		// has no domain filter parameter: with filters the module asks for
		// the most results and filters them itself.
		if len(q.Include)+len(q.Exclude) > 0 {
			n = 20
		}
		v := url.Values{"q": {q.Text}, "count": {strconv.Itoa(min(n, 20))}}
		if q.Country != "" {
			v.Set("country", strings.ToLower(q.Country))
		}
		return Request{Method: "GET", URL: base + "/res/v1/web/search?" + v.Encode(),
			Headers: "Accept: application/json\nX-Subscription-Token: " + placeholder(es.Secret)}, nil
	case EngineTavily:
		body := map[string]any{"query": q.Text, "max_results": min(n, 20), "search_depth": "basic", "topic": "general"}
		if d := hostsOf(q.Include, true); len(d) > 0 {
			body["include_domains"] = d
		}
		if d := hostsOf(q.Exclude, false); len(d) > 0 {
			body["exclude_domains"] = d
		}
		b, _ := json.Marshal(body)
		return Request{Method: "POST", URL: base + "/search", Headers: "Content-Type: application/json\nAuthorization: Bearer " + placeholder(es.Secret), Body: b}, nil
	}
	return Request{}, errorf("engine " + engine + " is not an HTTP engine")
}

// ParseResponse reads the results out of engine's answer.
func ParseResponse(engine string, body []byte) ([]Result, error) {
	var out []Result
	switch engine {
	case EngineSearXNG:
		var r struct {
			Results []struct {
				URL           string `json:"url"`
				Title         string `json:"title"`
				Content       string `json:"content"`
				PublishedDate string `json:"publishedDate"`
			} `json:"results"`
		}
		if err := json.Unmarshal(body, &r); err != nil {
			return nil, errorf("searxng answered something that is not its JSON format (is format=json enabled on the instance?)")
		}
		for _, x := range r.Results {
			out = append(out, Result{URL: x.URL, Title: x.Title, Content: x.Content, Published: x.PublishedDate})
		}
	case EngineExa:
		var r struct {
			Results []struct {
				URL           string   `json:"url"`
				Title         string   `json:"title"`
				Text          string   `json:"text"`
				Highlights    []string `json:"highlights"`
				Summary       string   `json:"summary"`
				PublishedDate string   `json:"publishedDate"`
			} `json:"results"`
		}
		if err := json.Unmarshal(body, &r); err != nil {
			return nil, errorf("exa answered something that is not its JSON format")
		}
		for _, x := range r.Results {
			c := x.Text
			if c == "" && len(x.Highlights) > 0 {
				c = strings.Join(x.Highlights, " [...] ")
			}
			if c == "" {
				c = x.Summary
			}
			out = append(out, Result{URL: x.URL, Title: x.Title, Content: c, Published: x.PublishedDate})
		}
	case EngineBrave:
		var r struct {
			Web struct {
				Results []struct {
					URL           string   `json:"url"`
					Title         string   `json:"title"`
					Description   string   `json:"description"`
					ExtraSnippets []string `json:"extra_snippets"`
					PageAge       string   `json:"page_age"`
				} `json:"results"`
			} `json:"web"`
		}
		if err := json.Unmarshal(body, &r); err != nil {
			return nil, errorf("brave answered something that is not its JSON format")
		}
		for _, x := range r.Web.Results {
			c := stripTags(x.Description)
			if len(x.ExtraSnippets) > 0 {
				c += " " + strings.Join(x.ExtraSnippets, " ")
			}
			out = append(out, Result{URL: x.URL, Title: stripTags(x.Title), Content: c, Published: x.PageAge})
		}
	case EngineTavily:
		var r struct {
			Results []struct {
				URL           string `json:"url"`
				Title         string `json:"title"`
				Content       string `json:"content"`
				PublishedDate string `json:"published_date"`
			} `json:"results"`
		}
		if err := json.Unmarshal(body, &r); err != nil {
			return nil, errorf("tavily answered something that is not its JSON format")
		}
		for _, x := range r.Results {
			out = append(out, Result{URL: x.URL, Title: x.Title, Content: x.Content, Published: x.PublishedDate})
		}
	default:
		return nil, errorf("engine " + engine + " is not an HTTP engine")
	}
	return out, nil
}

// EngineError is the message of an engine's error body (each engine's own
// shape), for the error the caller sees.
func EngineError(engine string, status int, body []byte) string {
	var r struct {
		Error   any    `json:"error"`
		Detail  any    `json:"detail"`
		Message string `json:"message"`
	}
	msg := ""
	if json.Unmarshal(body, &r) == nil {
		switch e := r.Error.(type) {
		case string:
			msg = e
		case map[string]any: // Brave: {"error": {"detail": …, "code": …}}
			if d, ok := e["detail"].(string); ok {
				msg = d
			}
		}
		if msg == "" {
			switch d := r.Detail.(type) { // Tavily: {"detail": {"error": …}}
			case string:
				msg = d
			case map[string]any:
				if s, ok := d["error"].(string); ok {
					msg = s
				}
			}
		}
		if msg == "" {
			msg = r.Message
		}
	}
	s := engine + " answered HTTP " + strconv.Itoa(status)
	if status == 401 || status == 403 {
		return s + ": the operator's API key for it is missing or rejected"
	}
	if msg != "" {
		s += ": " + truncate(msg, 200)
	}
	return s
}

// hostsOf is the host part of domain patterns, for engines that take plain
// domain lists: paths and a leading "*." are dropped here (the engine then
// returns a superset) and enforced by the module's own filter on the
// results. A pattern with a wildcard elsewhere has no plain-domain form: an
// include list holding one is not sent at all (sending the rest would lose
// its matches), an exclude list just leaves it out.
func hostsOf(patterns []string, include bool) []string {
	var out []string
	for _, p := range patterns {
		h, _ := splitPattern(p)
		h = strings.TrimPrefix(h, "*.")
		if h == "" || strings.Contains(h, "*") {
			if include {
				return nil
			}
			continue
		}
		out = append(out, h)
	}
	return out
}

// stripTags removes the <strong> markup Brave puts around matched words.
func stripTags(s string) string {
	if !strings.Contains(s, "<") {
		return s
	}
	var b strings.Builder
	in := false
	for _, r := range s {
		switch {
		case r == '<':
			in = true
		case r == '>' && in:
			in = false
		case !in:
			b.WriteRune(r)
		}
	}
	return b.String()
}
