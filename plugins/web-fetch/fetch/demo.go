package fetch

import (
	"embed"
	"net/url"
	"strings"
)

// DemoHost is the demo web site built into the module, so the plugin and
// the tool can be tried after `make run` with no network (README,
// docs/web-fetch.md). Its pages say on their face that they are demo pages,
// and their titles end in "(Switchyard demo page)". No request for this
// host leaves the module: "demo" is not a delegated top-level domain, and
// the same name is where the web plugin's demo search engine points.
const DemoHost = "switchyard.demo"

//go:embed demosite
var demoSite embed.FS

var demoPages = map[string]struct{ file, contentType string }{
	"/web-fetch/tides":      {"demosite/harbour.html", "text/html; charset=utf-8"},
	"/web-fetch/glossary":   {"demosite/glossary.html", "text/html; charset=utf-8"},
	"/web-fetch/tides.json": {"demosite/tides.json", "application/json"},
}

// isDemo reports whether u is on the demo site.
func isDemo(u *url.URL) bool {
	h := strings.ToLower(u.Hostname())
	return h == DemoHost || strings.HasSuffix(h, "."+DemoHost)
}

// demoHTTP answers a GET of the demo site like the host's http function
// would: 200 with the page, or 404 naming the pages there are.
func demoHTTP(u *url.URL) (int, string, []byte) {
	p, ok := demoPages[u.Path]
	if !ok || strings.ToLower(u.Hostname()) != DemoHost {
		return 404, "Content-Type: text/plain\n", []byte("no such demo page; the demo site has https://switchyard.demo/web-fetch/tides, /web-fetch/glossary and /web-fetch/tides.json")
	}
	b, err := demoSite.ReadFile(p.file)
	if err != nil {
		return 500, "", nil
	}
	return 200, "Content-Type: " + p.contentType + "\n", b
}
