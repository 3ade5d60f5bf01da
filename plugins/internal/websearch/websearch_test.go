package websearch

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

func TestRequested(t *testing.T) {
	cases := []struct {
		name, body string
		on         bool
		check      func(o Options) bool
	}{
		{"nothing", `{"messages":[]}`, false, nil},
		{"web plugin, other engine", `{"plugins":[{"id":"web","engine":"exa"}]}`, false, nil},
		{"web plugin disabled", `{"plugins":[{"id":"web","engine":"native","enabled":false}]}`, false, nil},
		{"web plugin native", `{"plugins":[{"id":"web-fetch"},{"id":"web","engine":"native","max_uses":3,"include_domains":["a.com"],"exclude_domains":["b.com"],"user_location":{"type":"approximate","city":"Oslo"}}]}`, true,
			func(o Options) bool {
				return o.MaxUses == 3 && strings.Join(o.Include, ",") == "a.com" && strings.Join(o.Exclude, ",") == "b.com" && gjson.Get(o.Location, "city").Str == "Oslo"
			}},
		{"web_search_options", `{"web_search_options":{"search_context_size":"high","user_location":{"type":"approximate","approximate":{"country":"GB","city":"London"}}}}`, true,
			func(o Options) bool {
				return o.ContextSize == "high" && o.Location == `{"type":"approximate","city":"London","country":"GB"}`
			}},
		{"the plugin's location wins", `{"plugins":[{"id":"web","engine":"native","user_location":{"type":"approximate","city":"Oslo"}}],"web_search_options":{"user_location":{"type":"approximate","approximate":{"city":"London"}}}}`, true,
			func(o Options) bool { return gjson.Get(o.Location, "city").Str == "Oslo" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, on := Requested(gjson.Parse(tc.body))
			if on != tc.on || (tc.check != nil && !tc.check(o)) {
				t.Fatalf("on %v, options %+v", on, o)
			}
		})
	}
}

func TestAnnotationAndIndices(t *testing.T) {
	a := gjson.Parse(Annotation("https://x.example/a?b=\"c\"", "T \"q\"", "", 1, 4))
	if a.Get("type").Str != "url_citation" || a.Get("url_citation.url").Str != `https://x.example/a?b="c"` || a.Get("url_citation.title").Str != `T "q"` ||
		a.Get("url_citation.content").Exists() || a.Get("url_citation.start_index").Int() != 1 || a.Get("url_citation.end_index").Int() != 4 {
		t.Fatalf("annotation %s", a.Raw)
	}
	if n := RuneIndex("a°b°c", 4); n != 3 { // a, °(2 bytes), b
		t.Fatalf("RuneIndex %d", n)
	}
	if d := Domain("https://*.substack.com/p"); d != "substack.com/p" {
		t.Fatalf("Domain %q", d)
	}
}
