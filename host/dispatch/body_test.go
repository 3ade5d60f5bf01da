package dispatch

import (
	"fmt"
	"slices"
	"testing"

	"github.com/switchyard/switchyard/abi/chatparams"
	"github.com/switchyard/switchyard/abi/manifest"
	"github.com/switchyard/switchyard/host/catalog"
	"github.com/switchyard/switchyard/host/route"
	"github.com/tidwall/gjson"
)

// TestBodyFor: what each endpoint's adapter gets, and that shaping one
// attempt's body leaves the job's (every attempt's) untouched.
func TestBodyFor(t *testing.T) {
	const custom = `{"type":"custom","custom":{"name":"c"}}`
	const fn = `{"type":"function","function":{"name":"f"}}`
	chat := func(max int, body string) *Job {
		return &Job{Route: routeKind(catalog.KindChat), MaxOutput: max, Body: []byte(body)}
	}
	small := &catalog.Endpoint{MaxOutput: 100, Provider: &catalog.Provider{}}
	large := &catalog.Endpoint{MaxOutput: 0, Provider: &catalog.Provider{}}
	yes, no := true, false
	// "ids-adapter" declares embedding_token_ids in its manifest; a
	// provider's configuration overrides it either way.
	ids := &catalog.Endpoint{Provider: &catalog.Provider{Adapter: "ids-adapter"}}
	idsConfigured := &catalog.Endpoint{Provider: &catalog.Provider{Adapter: "text-adapter", EmbeddingTokenIDs: &yes}}
	text := &catalog.Endpoint{Provider: &catalog.Provider{Adapter: "text-adapter"}}
	textConfigured := &catalog.Endpoint{Provider: &catalog.Provider{Adapter: "ids-adapter", EmbeddingTokenIDs: &no}}
	embed := &Job{Route: routeKind(catalog.KindEmbedding), Body: []byte(`{"input":[1,2]}`), TextBody: []byte(`{"input":"hi"}`)}
	cases := []struct {
		name string
		job  *Job
		ep   *catalog.Endpoint
		drop []string
		want string
	}{
		{"nothing to shape", chat(50, `{"max_tokens":50}`), small, nil, `{"max_tokens":50}`},
		{"max output clamped", chat(500, `{"max_tokens":500,"max_completion_tokens":80}`), small, nil,
			`{"max_tokens":100,"max_completion_tokens":80}`},
		{"no endpoint maximum", chat(500, `{"max_tokens":500}`), large, nil, `{"max_tokens":500}`},
		{"custom tools dropped", chat(0, `{"tools":[`+fn+`,`+custom+`],"tool_choice":"auto"}`), large,
			[]string{chatparams.CustomTools}, `{"tools":[` + fn + `],"tool_choice":"auto"}`},
		{"only custom tools dropped, with their choice", chat(0, `{"tools":[`+custom+`],"tool_choice":{"type":"custom","custom":{"name":"c"}}}`), large,
			[]string{chatparams.CustomTools}, `{}`},
		{"custom tools kept", chat(0, `{"tools":[`+custom+`]}`), large, nil, `{"tools":[` + custom + `]}`},
		{"token ids to a provider whose adapter takes them", embed, ids, nil, `{"input":[1,2]}`},
		{"token ids to a provider configured to take them", embed, idsConfigured, nil, `{"input":[1,2]}`},
		{"token ids decoded for the others", embed, text, nil, `{"input":"hi"}`},
		{"token ids decoded for a provider configured not to take them", embed, textConfigured, nil, `{"input":"hi"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := string(tc.job.Body)
			got := tc.job.bodyFor(tc.ep, tc.drop, fakeCapabilities{"ids-adapter": {manifest.CapabilityEmbeddingTokenIDs}})
			if !gjson.ValidBytes(got) || compact(got) != compact([]byte(tc.want)) {
				t.Errorf("body %s, want %s", got, tc.want)
			}
			if string(tc.job.Body) != before {
				t.Errorf("the job's body changed to %s", tc.job.Body)
			}
		})
	}
}

// fakeCapabilities is the capabilities each adapter's manifest declares.
type fakeCapabilities map[string][]string

func (f fakeCapabilities) AdapterHas(adapter, c string) bool { return slices.Contains(f[adapter], c) }

func compact(b []byte) string { return gjson.ParseBytes(b).Get("@ugly").Raw }

func routeKind(k catalog.Kind) route.Request { return route.Request{Kind: k} }

// interned gives the string of its bytes, shares it once it has been seen,
// and stops adding past its bound.
func TestInterned(t *testing.T) {
	if s := interned([]byte("/chat/completions")); s != "/chat/completions" {
		t.Fatalf("interned %q", s)
	}
	if n := testing.AllocsPerRun(100, func() { _ = interned([]byte("/chat/completions")) }); n != 0 {
		t.Fatalf("a path seen before allocated %v times", n)
	}
	for i := range 2 * maxInterned {
		if s, want := interned([]byte(fmt.Sprintf("/p/%d", i))), fmt.Sprintf("/p/%d", i); s != want {
			t.Fatalf("interned %q, want %q", s, want)
		}
	}
	if n := len(*internTable.Load()); n > maxInterned {
		t.Fatalf("the table grew to %d entries (bound %d)", n, maxInterned)
	}
}

// TestNativeFor: a native body's max_tokens above the endpoint's maximum
// is clamped as the chat body's is, in a copy; the rest is the client's.
func TestNativeFor(t *testing.T) {
	const body = `{"model":"m", "max_tokens":500,"messages":[{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"}]}]}`
	job := &Job{Route: routeKind(catalog.KindChat), Native: &Native{API: "messages", Body: []byte(body), Beta: "b"}}
	small := &catalog.Endpoint{MaxOutput: 100, Provider: &catalog.Provider{}}
	large := &catalog.Endpoint{Provider: &catalog.Provider{}}
	if n := job.nativeFor(large); n != job.Native {
		t.Fatalf("unclamped: %s", n.Body)
	}
	n := job.nativeFor(small)
	want := `{"model":"m", "max_tokens":100,"messages":[{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"}]}]}`
	if string(n.Body) != want || n.Beta != "b" || n.API != "messages" || string(job.Native.Body) != body {
		t.Fatalf("clamped %s (job's now %s)", n.Body, job.Native.Body)
	}
	if (&Job{}).nativeFor(small) != nil {
		t.Fatal("no native request")
	}
}
