package dispatch

import (
	"net/http"
	"reflect"
	"testing"

	"github.com/switchyard/switchyard/host/catalog"
)

// The adapter's key placeholder becomes the provider's key in the path
// (query-escaped) and in headers; the configured base query is kept.
func TestUpstreamURL(t *testing.T) {
	azure := &catalog.Provider{BaseURL: "https://x.openai.azure.com/openai", BaseQuery: "api-version=2024-10-21"}
	gemini := &catalog.Provider{BaseURL: "https://generativelanguage.googleapis.com/v1beta"}
	for _, tc := range []struct {
		p         *catalog.Provider
		path, key string
		want      string
	}{
		{azure, "/chat/completions", "k", "https://x.openai.azure.com/openai/chat/completions?api-version=2024-10-21"},
		{azure, "/chat/completions?stream=1", "k", "https://x.openai.azure.com/openai/chat/completions?stream=1&api-version=2024-10-21"},
		{gemini, "/models/m:generateContent?key=${API_KEY}", "a b&c", "https://generativelanguage.googleapis.com/v1beta/models/m:generateContent?key=a+b%26c"},
		{gemini, "/models/m:generateContent?key=${API_KEY}", "", "https://generativelanguage.googleapis.com/v1beta/models/m:generateContent?key="},
	} {
		if got := upstreamURL(tc.p, tc.path, tc.key); got != tc.want {
			t.Errorf("upstreamURL(%q, key %q) = %q, want %q", tc.path, tc.key, got, tc.want)
		}
	}
}

func TestSetHeaders(t *testing.T) {
	lines := "Authorization: Bearer ${API_KEY}\r\nanthropic-version: 2023-06-01\n: no name\nno colon\n X-Api-Key : ${API_KEY} \n"
	for _, tc := range []struct {
		key  string
		want http.Header
	}{
		{"sk-1", http.Header{"Authorization": {"Bearer sk-1"}, "Anthropic-Version": {"2023-06-01"}, "X-Api-Key": {"sk-1"}}},
		// A keyless local server, or a credential an auth scheme adds:
		// no header carries an empty key.
		{"", http.Header{"Anthropic-Version": {"2023-06-01"}}},
	} {
		h := http.Header{}
		setHeaders(h, []byte(lines), tc.key)
		if !reflect.DeepEqual(h, tc.want) {
			t.Errorf("key %q: headers %v, want %v", tc.key, h, tc.want)
		}
	}
	// Set's semantics: a name given twice keeps its last value; the
	// values share one array, and a header added to afterwards (trace
	// context, an auth scheme's) leaves the others as they were.
	h := http.Header{}
	setHeaders(h, []byte("a: 1\nb: 2\nA: 3\n"), "")
	h.Add("A", "4")
	if want := (http.Header{"A": {"3", "4"}, "B": {"2"}}); !reflect.DeepEqual(h, want) {
		t.Errorf("headers %v, want %v", h, want)
	}
	line := []byte("Authorization: Bearer ${API_KEY}\nContent-Type: application/json\nX-A: 1\nX-B: 2\n")
	if n := testing.AllocsPerRun(100, func() { setHeaders(http.Header{}, line, "sk-1") }); n > 5 {
		t.Errorf("setHeaders of four headers allocated %v times, want at most 5 (the map, its entries, the text, the values, the key's header)", n)
	}
}
