// Package websearch is the translation inside the `web` module: which
// engine to ask and how (each engine's wire format), the domain filters,
// the results injected into a request, the url_citation annotations of the
// answer, and the service:web_search tool. It is plain Go, so it is tested
// natively; the module's main package only wires it to the ABI and to the
// host's outbound HTTP (sdk.HTTP).
package websearch

import (
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// Result is one search hit.
type Result struct {
	URL       string `json:"url"`
	Title     string `json:"title"`
	Content   string `json:"content"`
	Published string `json:"published_date,omitempty"`
}

// Limits of what a search returns and injects.
const (
	DefaultMaxResults = 5
	MaxResults        = 25 // a larger max_results is cut to this
	maxContent        = 1000
	maxQuery          = 400 // Brave refuses longer queries; no engine needs more
)

// HTTPFunc makes an outbound call: sdk.HTTP inside the module, a
// net/http client in the tests.
type HTTPFunc func(method, url, headers string, body []byte) (status int, respBody []byte, err error)

// Settings are the operator's configuration of the module
// (module_settings.web in the gateway's config, ctx.settings in every
// hook): the default engine and each engine's endpoint, secret and fee.
type Settings struct {
	Engine     string                    `json:"engine"`
	MaxResults int                       `json:"max_results"`
	Engines    map[string]EngineSettings `json:"engines"`
}

// ParseSettings reads ctx.settings; absent, every default applies: the
// demo engine, the engines' public endpoints and list prices.
func ParseSettings(raw gjson.Result) (Settings, error) {
	var s Settings
	if raw.Exists() && raw.Type != gjson.Null {
		if !raw.IsObject() {
			return s, errorf("module_settings.web must be an object")
		}
		s.Engine = raw.Get("engine").String()
		s.MaxResults = int(raw.Get("max_results").Int())
		var bad error
		raw.Get("engines").ForEach(func(k, v gjson.Result) bool {
			if !v.IsObject() {
				bad = errorf("module_settings.web.engines." + k.String() + " must be an object")
				return false
			}
			if s.Engines == nil {
				s.Engines = map[string]EngineSettings{}
			}
			s.Engines[k.String()] = EngineSettings{BaseURL: v.Get("base_url").String(), Secret: v.Get("secret").String(), Fee: v.Get("fee").String()}
			return true
		})
		if bad != nil {
			return s, bad
		}
	}
	if s.Engine == "" {
		s.Engine = EngineDemo
	}
	return s, nil
}

// For is the settings of engine name: the operator's values over the
// defaults, field by field.
func (s Settings) For(name string) EngineSettings {
	es := defaults[name]
	if o, ok := s.Engines[name]; ok {
		if o.BaseURL != "" {
			es.BaseURL = o.BaseURL
		}
		if o.Secret != "" {
			es.Secret = o.Secret
		}
		if o.Fee != "" {
			es.Fee = o.Fee
		}
	}
	return es
}

// Options are one search's knobs: the plugin's options (spec 2.3) or the
// tool's parameters and arguments.
type Options struct {
	Engine       string
	Include      []string
	Exclude      []string
	MaxResults   int
	MaxUses      int
	SearchPrompt string
	UserLocation gjson.Result
}

// Resolve fills what o leaves open from the operator's settings and checks
// the engine: an unknown engine is the caller's mistake (a 400 in the
// plugin, an error result in the tool).
func (o *Options) Resolve(s Settings) error {
	if o.Engine == "" || o.Engine == "auto" {
		o.Engine = s.Engine
	}
	if !slices.Contains(Engines, o.Engine) {
		return errorf(`unknown engine "` + o.Engine + `": one of ` + strings.Join(Engines, ", ") + ` (or auto, the operator's default: ` + s.Engine + `)`)
	}
	if o.MaxResults <= 0 {
		o.MaxResults = s.MaxResults
	}
	if o.MaxResults <= 0 {
		o.MaxResults = DefaultMaxResults
	}
	o.MaxResults = min(o.MaxResults, MaxResults)
	return nil
}

// country is user_location.country, when it is a two-letter code.
func (o *Options) country() string {
	c := o.UserLocation.Get("country").Str
	if len(c) == 2 {
		return strings.ToUpper(c)
	}
	return ""
}

// Search runs one search with engine o.Engine (not native) and returns the
// filtered results.
func Search(do HTTPFunc, s Settings, o Options, query string) ([]Result, error) {
	query = truncate(strings.TrimSpace(query), maxQuery)
	if query == "" {
		return nil, errorf("the search query is empty")
	}
	var rs []Result
	if o.Engine == EngineDemo {
		rs = demoSearch(query, o.Include, o.Exclude, o.MaxResults)
	} else {
		req, err := BuildRequest(o.Engine, s.For(o.Engine), Query{Text: query, MaxResults: o.MaxResults, Include: o.Include, Exclude: o.Exclude, Country: o.country()})
		if err != nil {
			return nil, err
		}
		status, body, err := do(req.Method, req.URL, req.Headers, req.Body)
		if err != nil {
			return nil, errorf("calling " + o.Engine + ": " + err.Error())
		}
		if status < 200 || status > 299 {
			return nil, errorf(EngineError(o.Engine, status, body))
		}
		if rs, err = ParseResponse(o.Engine, body); err != nil {
			return nil, err
		}
	}
	rs = Filter(rs, o.Include, o.Exclude, o.MaxResults)
	for i := range rs {
		rs[i].Title = strings.TrimSpace(rs[i].Title)
		if rs[i].Title == "" {
			rs[i].Title = rs[i].URL
		}
		rs[i].Content = truncate(strings.TrimSpace(rs[i].Content), maxContent)
	}
	return rs, nil
}

// truncate cuts s to at most n bytes on a character boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

type errorString string

func (e errorString) Error() string { return string(e) }

func errorf(msg string) error { return errorString(msg) }

// strings of a JSON array of strings.
func stringsOf(r gjson.Result) []string {
	var out []string
	r.ForEach(func(_, v gjson.Result) bool {
		if v.Type == gjson.String && strings.TrimSpace(v.Str) != "" {
			out = append(out, v.Str)
		}
		return true
	})
	return out
}
