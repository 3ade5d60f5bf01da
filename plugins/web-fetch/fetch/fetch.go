// Package fetch is the web-fetch module's logic, in a plain package so it is
// tested natively: fetching a URL through the host's http function under
// the caller's domain rules, following redirects itself, turning HTML into
// Markdown, caching pages, and the two hooks (the service:web_fetch tool and
// the web-fetch plugin). Package main only wires the host functions in.
package fetch

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding"
)

// Limits of one fetch.
const (
	// MaxRedirects bounds the redirect hops followed (the host's http
	// function never follows one itself, so each hop is re-checked here).
	MaxRedirects = 5
	// MaxPageBytes is the largest body converted. The host refuses larger
	// responses before they reach the module (its own response cap); this
	// bound holds whatever the host's cap is.
	MaxPageBytes = 4 << 20
	// MaxHTMLBytes is how much of an HTML page is converted: converting
	// costs about 1-2 ms per KB inside the module (BenchmarkModuleToolCall),
	// and a page's main content comes well before its first megabyte. The
	// rest is cut before parsing (the parser closes what is left open) and
	// the content is marked truncated.
	MaxHTMLBytes = 1 << 20
	// MaxCachedChars bounds the converted content stored in the cache and
	// given to the model when max_content_tokens is not set.
	MaxCachedChars = 200_000
	// CacheTTL is how long a fetched page is served from the cache.
	CacheTTL = 15 * 60
	// DefaultMaxUses bounds fetches per request when max_uses is not set
	// (the same hard cap as the reference gateway's).
	DefaultMaxUses = 50
	// PluginMaxURLs bounds the URLs the plugin form fetches from one message
	// when max_uses is not set.
	PluginMaxURLs = 3
)

// HTTPFunc makes one outbound GET through the host (sdk.HTTP): it returns
// the status, the headers as "Name: value" lines and the body, and does not
// follow redirects.
type HTTPFunc func(method, url, headers string, body []byte) (status int, respHeaders string, respBody []byte, err error)

// Env is what a fetch needs from the host. KVGet and KVPut may be nil (no
// cache, and max_uses counted per call only); CountTokens may be nil
// (tokens are then estimated as 4 bytes each).
type Env struct {
	HTTP        HTTPFunc
	KVGet       func(key string) ([]byte, bool, error)
	KVPut       func(key string, val []byte, ttlSeconds int) error
	CountTokens func(model, text string) (int, error)
	// Now is the time of the call (the tool_call ctx's "now").
	Now func() time.Time
}

// Options are the web-fetch plugin's options of spec 2.3, which are also
// the service:web_fetch tool's parameters.
type Options struct {
	AllowedDomains   []string `json:"allowed_domains,omitempty"`
	BlockedDomains   []string `json:"blocked_domains,omitempty"`
	MaxContentTokens int      `json:"max_content_tokens,omitempty"`
	MaxUses          int      `json:"max_uses,omitempty"`
	// model is the request's model, whose tokenizer counts
	// max_content_tokens.
	model string
}

// Result is what the model sees: {url, title, content, status:
// "completed", retrieved_at} or {url, status: "failed", error}.
type Result struct {
	URL         string `json:"url"`
	Title       string `json:"title,omitempty"`
	Content     string `json:"content,omitempty"`
	Status      string `json:"status"`
	RetrievedAt string `json:"retrieved_at,omitempty"`
	Error       string `json:"error,omitempty"`
	// HTTPStatus is the page's status code, kept for the plugin's summary
	// and service_metadata.
	HTTPStatus int  `json:"http_status,omitempty"`
	Truncated  bool `json:"truncated,omitempty"`
	// fitted: cut to fit the model's context (the plugin form; never
	// cached).
	fitted bool
}

const (
	StatusCompleted = "completed"
	StatusFailed    = "failed"
)

func failed(u, format string) Result { return Result{URL: u, Status: StatusFailed, Error: format} }

// Fetch fetches rawURL under opts and returns the page as Markdown (HTML),
// or as it is (text, JSON, XML), truncated to opts.MaxContentTokens.
func (env *Env) Fetch(opts Options, rawURL string) Result {
	rawURL = strings.TrimSpace(rawURL)
	u, err := checkURL(rawURL)
	if err != nil {
		return failed(rawURL, err.Error())
	}
	if err := opts.allows(u); err != nil {
		return failed(rawURL, err.Error())
	}
	key := cacheKey(u.String())
	var r Result
	if cached, ok := env.cacheGet(key); ok && json.Unmarshal(cached, &r) == nil && r.Status == StatusCompleted {
		r.URL = rawURL
	} else {
		r = env.fetch(opts, u)
		r.URL = rawURL
		if r.Status == StatusCompleted {
			if b, err := json.Marshal(r); err == nil {
				env.cachePut(key, b)
			}
		}
	}
	if r.Status == StatusCompleted {
		r.Content, r.Truncated = env.truncate(r.Content, opts.model, opts.MaxContentTokens)
	}
	return r
}

func (env *Env) fetch(opts Options, u *url.URL) Result {
	for hop := 0; ; hop++ {
		var status int
		var headers string
		var body []byte
		if isDemo(u) {
			status, headers, body = demoHTTP(u)
		} else {
			var err error
			status, headers, body, err = env.HTTP("GET", u.String(), "Accept: text/html,application/xhtml+xml,text/plain,application/json;q=0.9,*/*;q=0.5\nUser-Agent: Switchyard-web-fetch/1.0", nil)
			if err != nil {
				return failed(u.String(), "fetching "+u.Host+" failed: "+err.Error())
			}
		}
		if status >= 300 && status < 400 && status != 304 {
			loc := header(headers, "Location")
			if loc == "" {
				return failed(u.String(), "redirect ("+strconv.Itoa(status)+") without a Location header")
			}
			if hop >= MaxRedirects {
				return failed(u.String(), "more than "+strconv.Itoa(MaxRedirects)+" redirects")
			}
			next, err := u.Parse(loc)
			if err != nil {
				return failed(u.String(), "redirect to an invalid URL "+strconv.Quote(loc))
			}
			if next, err = checkURL(next.String()); err != nil {
				return failed(u.String(), "redirect refused: "+err.Error())
			}
			if err := opts.allows(next); err != nil {
				return failed(u.String(), "redirect to "+next.String()+" refused: "+err.Error())
			}
			u = next
			continue
		}
		if status < 200 || status >= 300 {
			msg := "the page answered HTTP " + strconv.Itoa(status)
			if isDemo(u) {
				msg += ": " + string(body)
			}
			r := failed(u.String(), msg)
			r.HTTPStatus = status
			return r
		}
		if len(body) > MaxPageBytes {
			return failed(u.String(), "the page is larger than "+strconv.Itoa(MaxPageBytes>>20)+" MB")
		}
		r := convert(u, header(headers, "Content-Type"), body)
		r.HTTPStatus = status
		if r.Status == StatusCompleted {
			// The server's Date is when the page was retrieved; the module
			// itself has no wall clock (the host runs it on a fixed one),
			// so without a Date the time the host gave the call is used.
			at, err := time.Parse(time.RFC1123, header(headers, "Date"))
			if err != nil {
				at = env.now()
			}
			r.RetrievedAt = at.UTC().Format(time.RFC3339)
		}
		return r
	}
}

// convert turns a successful response into content by its media type.
func convert(u *url.URL, contentType string, body []byte) Result {
	mt, params, _ := strings.Cut(strings.ToLower(contentType), ";")
	mt = strings.TrimSpace(mt)
	if mt == "" {
		mt = sniff(body)
	}
	kind := kindOf(mt)
	if kind == kindBinary {
		return failed(u.String(), "the page is "+mt+", not text: binary content is not fetched")
	}
	text, ok := decode(body, charsetOf(params), kind == kindHTML)
	if !ok {
		return failed(u.String(), "the page declares "+mt+" but its body is not text")
	}
	r := Result{URL: u.String(), Status: StatusCompleted}
	switch kind {
	case kindHTML:
		cutHTML := len(text) > MaxHTMLBytes
		if cutHTML {
			text = cut(text, MaxHTMLBytes)
		}
		title, md, err := Markdown([]byte(text), u.String())
		if err != nil {
			return failed(u.String(), "the HTML could not be read: "+err.Error())
		}
		r.Title, r.Content = title, md
		if cutHTML {
			r.Content += truncMark
			r.Truncated = true
		}
	default:
		r.Content = text
	}
	if len(r.Content) > MaxCachedChars {
		r.Content = cutBlock(r.Content, MaxCachedChars) + truncMark
		r.Truncated = true
	}
	return r
}

type kind int

const (
	kindBinary kind = iota
	kindHTML
	kindText
)

func kindOf(mt string) kind {
	switch {
	case mt == "text/html" || mt == "application/xhtml+xml":
		return kindHTML
	case strings.HasPrefix(mt, "text/"), mt == "application/json", strings.HasSuffix(mt, "+json"),
		mt == "application/xml", strings.HasSuffix(mt, "+xml"), mt == "application/javascript",
		mt == "application/x-ndjson", mt == "application/yaml", mt == "application/x-yaml":
		return kindText
	}
	return kindBinary
}

// sniff guesses the type of a body served without Content-Type: text when
// its start is valid UTF-8 without NUL bytes, HTML when it looks like it.
func sniff(body []byte) string {
	head := body[:min(len(body), 512)]
	for _, c := range head {
		if c == 0 {
			return "application/octet-stream"
		}
	}
	if !utf8.Valid(trimPartialRune(head)) {
		return "application/octet-stream"
	}
	h := strings.ToLower(strings.TrimSpace(string(head)))
	if strings.HasPrefix(h, "<!doctype html") || strings.HasPrefix(h, "<html") || strings.Contains(h, "<body") || strings.Contains(h, "<head") {
		return "text/html"
	}
	return "text/plain"
}

func trimPartialRune(b []byte) []byte {
	for i := 0; i < 3 && len(b) > 0 && !utf8.FullRune(b[max(0, len(b)-4):]); i++ {
		b = b[:len(b)-1]
	}
	return b
}

func charsetOf(params string) string {
	for _, p := range strings.Split(params, ";") {
		if k, v, ok := strings.Cut(strings.TrimSpace(p), "="); ok && k == "charset" {
			return strings.Trim(strings.TrimSpace(v), `"'`)
		}
	}
	return ""
}

// decode returns body as UTF-8. The charset is the one the Content-Type
// header names, else (HTML) the page's BOM or its <meta charset> / <meta
// http-equiv> in the first 1024 bytes, as the WHATWG encoding sniffing
// algorithm finds them (golang.org/x/net/html/charset: its labels are the
// Encoding Standard's, so "iso-8859-1" and "latin1" decode as windows-1252
// as browsers do). A page that names no charset, or one that is unknown,
// is read as UTF-8, with invalid bytes replaced. A body with NUL bytes in
// its start is not text, whatever it declares, unless it is UTF-16.
func decode(body []byte, cs string, isHTML bool) (string, bool) {
	var enc encoding.Encoding
	name := ""
	if cs != "" {
		enc, name = charset.Lookup(cs)
	}
	if enc == nil && isHTML {
		// DetermineEncoding falls back to windows-1252 when nothing is
		// declared; only a declared one is trusted here, so an undeclared
		// page that is UTF-8 stays UTF-8.
		if e, n, _ := charset.DetermineEncoding(body[:min(len(body), 1024)], ""); n != "windows-1252" || declaresCharset(body) {
			enc, name = e, n
		}
	}
	if !strings.HasPrefix(name, "utf-16") {
		for _, c := range body[:min(len(body), 8192)] {
			if c == 0 {
				return "", false
			}
		}
	}
	if enc != nil && name != "utf-8" {
		if s, err := enc.NewDecoder().Bytes(body); err == nil {
			return string(s), true
		}
	}
	if utf8.Valid(body) {
		return string(body), true
	}
	return strings.ToValidUTF8(string(body), "\uFFFD"), true
}

// declaresCharset reports whether the start of an HTML page names a
// charset itself (<meta charset> or <meta http-equiv> with one).
func declaresCharset(body []byte) bool {
	return bytes.Contains(bytes.ToLower(body[:min(len(body), 1024)]), []byte("charset"))
}

func header(headers, name string) string {
	for _, line := range strings.Split(headers, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(strings.TrimSpace(k), name) {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// checkURL accepts absolute http(s) URLs without credentials.
func checkURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || raw == "" {
		return nil, errors.New("not a valid URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, errors.New("only http and https URLs are fetched")
	}
	if u.Host == "" {
		return nil, errors.New("the URL has no host")
	}
	if u.User != nil {
		return nil, errors.New("URLs with credentials are not fetched")
	}
	u.Fragment = ""
	return u, nil
}

// allows applies blocked_domains, then allowed_domains (when set, the URL
// must match one). A rule is a host ("example.com", which also matches its
// subdomains), a wildcard ("*.example.com", subdomains only) or a host with
// a path prefix ("example.com/docs").
func (o Options) allows(u *url.URL) error {
	for _, d := range o.BlockedDomains {
		if matchDomain(d, u) {
			return errors.New("the domain " + u.Hostname() + " is blocked (blocked_domains)")
		}
	}
	if len(o.AllowedDomains) == 0 {
		return nil
	}
	for _, d := range o.AllowedDomains {
		if matchDomain(d, u) {
			return nil
		}
	}
	return errors.New("the domain " + u.Hostname() + " is not among allowed_domains")
}

func matchDomain(rule string, u *url.URL) bool {
	rule = strings.ToLower(strings.TrimSpace(rule))
	rule = strings.TrimPrefix(strings.TrimPrefix(rule, "https://"), "http://")
	host, path, _ := strings.Cut(rule, "/")
	h := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	switch {
	case host == "":
		return false
	case strings.HasPrefix(host, "*."):
		if !strings.HasSuffix(h, host[1:]) {
			return false
		}
	case h != host && !strings.HasSuffix(h, "."+host):
		return false
	}
	if path == "" {
		return true
	}
	p := strings.TrimPrefix(u.EscapedPath(), "/")
	return p == path || strings.HasPrefix(p, strings.TrimSuffix(path, "/")+"/")
}

const truncMark = "\n\n[… content truncated]"

// fitMark ends a page cut to fit the model's context (the plugin form).
const fitMark = "\n\n[… content truncated to fit the model's context]"

// truncate cuts content to maxTokens (0: no limit) at a block boundary and
// marks the cut.
func (env *Env) truncate(content, model string, maxTokens int) (string, bool) {
	c, cut := env.fit(content, model, maxTokens)
	if cut {
		return c + truncMark, true
	}
	return content, false
}

// fit returns the longest prefix of content that ends at a block boundary
// (cutBlock) and holds at most maxTokens tokens (maxTokens > 0), and
// whether it cut.
func (env *Env) fit(content, model string, maxTokens int) (string, bool) {
	if maxTokens <= 0 {
		return content, false
	}
	n := env.tokens(model, content)
	if n <= maxTokens {
		return content, false
	}
	// Cut proportionally, then shrink until it fits: two or three counts
	// at most, since the ratio of bytes to tokens is steady within a page.
	keep := len(content) * maxTokens / n
	for i := 0; i < 4 && keep > 0; i++ {
		c := cutBlock(content, keep)
		if m := env.tokens(model, c); m <= maxTokens {
			return c, true
		}
		keep = keep * 9 / 10
	}
	return cutBlock(content, keep), true
}

// cutBlock returns at most n bytes of s, ending at the end of a block (a
// blank line: a paragraph, a list, a code block, a whole table) when one
// ends in the second half of those bytes, else at the end of a line (a
// list item, a table row), else on a rune boundary: a cut mid-sentence or
// mid-row reads as if the page said less than it did.
func cutBlock(s string, n int) string {
	c := cut(s, n)
	if len(c) == len(s) {
		return c
	}
	if i := strings.LastIndex(c, "\n\n"); i > 0 && i >= len(c)/2 {
		return c[:i]
	}
	if i := strings.LastIndexByte(c, '\n'); i > 0 && i >= len(c)/2 {
		return c[:i]
	}
	return c
}

// tokens counts s with the host's tokenizer for model, or estimates 4
// bytes a token when the host cannot count.
func (env *Env) tokens(model, s string) int {
	if env.CountTokens != nil && model != "" {
		if n, err := env.CountTokens(model, s); err == nil {
			return n
		}
	}
	return (len(s) + 3) / 4
}

// cut returns at most n bytes of s, ending on a rune boundary.
func cut(s string, n int) string {
	if n >= len(s) {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func cacheKey(u string) string {
	sum := sha256.Sum256([]byte(u))
	return "page:" + hex.EncodeToString(sum[:16])
}

func (env *Env) cacheGet(key string) ([]byte, bool) {
	if env.KVGet == nil {
		return nil, false
	}
	v, ok, err := env.KVGet(key)
	return v, ok && err == nil
}

// cachePut stores a page; a full quota or a failing store only means the
// next fetch goes to the network again.
func (env *Env) cachePut(key string, val []byte) {
	if env.KVPut != nil {
		_ = env.KVPut(key, val, CacheTTL)
	}
}

func (env *Env) now() time.Time {
	if env.Now != nil {
		return env.Now()
	}
	return time.Now()
}
