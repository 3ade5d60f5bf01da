package websearch

import (
	"net/url"
	"path"
	"strings"
)

// Domain patterns of include_domains / exclude_domains:
//
//	example.com          example.com and every subdomain of it
//	*.substack.com       subdomains of substack.com only
//	docs.*.io            '*' matches any run of characters in the host
//	openai.com/blog      example host rules, and the URL path is /blog or below
//	                     it (/blog/x, not /blogs)
//
// A scheme (https://) and a leading "www." in a pattern are ignored, and so
// is case.

// splitPattern cuts a pattern into its host pattern and path prefix.
func splitPattern(p string) (host, prefix string) {
	p = strings.ToLower(strings.TrimSpace(p))
	if i := strings.Index(p, "://"); i >= 0 {
		p = p[i+3:]
	}
	host, prefix, _ = strings.Cut(p, "/")
	host = strings.TrimPrefix(host, "www.")
	if prefix != "" {
		prefix = "/" + strings.TrimRight(prefix, "/")
	}
	return host, prefix
}

// matchPattern reports whether rawURL falls under pattern.
func matchPattern(pattern string, u *url.URL) bool {
	hp, prefix := splitPattern(pattern)
	if hp == "" {
		return false
	}
	host := strings.TrimPrefix(strings.ToLower(strings.TrimSuffix(u.Hostname(), ".")), "www.")
	switch {
	case strings.HasPrefix(hp, "*.") && !strings.Contains(hp[2:], "*"):
		if !strings.HasSuffix(host, hp[1:]) {
			return false
		}
	case strings.Contains(hp, "*"):
		// path.Match's '*' stops at '/', never present in a host, so it
		// spans dots as the pattern's author means.
		if ok, _ := path.Match(hp, host); !ok {
			return false
		}
	default:
		if host != hp && !strings.HasSuffix(host, "."+hp) {
			return false
		}
	}
	if prefix == "" || prefix == "/" {
		return true
	}
	p := strings.ToLower(u.EscapedPath())
	return p == prefix || strings.HasPrefix(p, prefix+"/")
}

// Allowed reports whether rawURL passes the filters: it matches one of
// include (when include is not empty) and none of exclude. A URL that does
// not parse, or is not http(s), never passes.
func Allowed(rawURL string, include, exclude []string) bool {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false
	}
	for _, p := range exclude {
		if matchPattern(p, u) {
			return false
		}
	}
	if len(include) == 0 {
		return true
	}
	for _, p := range include {
		if matchPattern(p, u) {
			return true
		}
	}
	return false
}

// Filter keeps the results the filters allow, at most max of them, and
// drops duplicates of a URL.
func Filter(rs []Result, include, exclude []string, max int) []Result {
	out := rs[:0:0]
	seen := map[string]bool{}
	for _, r := range rs {
		if len(out) >= max {
			break
		}
		if seen[r.URL] || !Allowed(r.URL, include, exclude) {
			continue
		}
		seen[r.URL] = true
		out = append(out, r)
	}
	return out
}
