package validate

import (
	"slices"
	"testing"
)

func TestChatRequestFields(t *testing.T) {
	cases := []struct {
		name string
		body string
		// what the typed request must say
		models    []string
		stream    bool
		session   string
		params    []string
		maxOut, n int
		only      []string
		plugins   bool
		echo      bool
	}{
		{name: "defaults", body: base + `}`, models: []string{"openai/gpt-4o"}, n: 1},
		{name: "models primary first, deduplicated",
			body:   `{"model":"a/b","models":["c/d","a/b","c/d","e/f"],"messages":[{"role":"user","content":"x"}]}`,
			models: []string{"a/b", "c/d", "e/f"}, n: 1},
		{name: "stream, session, n, echo", body: with(`"stream":true,"session_id":"s1","n":3,"debug":{"echo_upstream_body":true}`),
			models: []string{"openai/gpt-4o"}, stream: true, session: "s1", n: 3, echo: true},
		{name: "params present, null ones left out, larger max output wins",
			body:   with(`"temperature":0.5,"top_p":null,"max_tokens":10,"max_completion_tokens":20,"user":"u"`),
			models: []string{"openai/gpt-4o"}, params: []string{"temperature", "max_tokens", "max_completion_tokens"}, maxOut: 20, n: 1},
		{name: "preferences parsed", body: with(`"provider":{"only":["x","y"],"max_price":{"prompt":" 1e-3 "}}`),
			models: []string{"openai/gpt-4o"}, only: []string{"x", "y"}, n: 1},
		{name: "plugins kept", body: with(`"plugins":[{"id":"web"}]`), models: []string{"openai/gpt-4o"}, plugins: true, n: 1},
		{name: "custom tools route as custom_tools; null tools are absent",
			body:   with(`"tools":[{"type":"function","function":{"name":"f"}},{"type":"custom","custom":{"name":"c"}}],"tool_choice":null`),
			models: []string{"openai/gpt-4o"}, params: []string{"tools", "custom_tools"}, n: 1},
		{name: "a top-level custom_tools member is not the parameter",
			body:   with(`"tools":null,"custom_tools":true`),
			models: []string{"openai/gpt-4o"}, n: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Chat([]byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(r.Models, tc.models) || r.Stream != tc.stream || r.SessionID != tc.session ||
				!slices.Equal(r.Params, tc.params) || r.MaxOutput != tc.maxOut || r.N != tc.n ||
				!slices.Equal(r.Prefs.Only, tc.only) || r.Plugins.IsArray() != tc.plugins || r.EchoUpstream != tc.echo {
				t.Fatalf("got %+v", r)
			}
			if r.PromptTokens == 0 {
				t.Fatal("no prompt estimate")
			}
		})
	}
}

func TestSessionHeader(t *testing.T) {
	r, _ := Chat([]byte(with(`"session_id":"body"`)))
	if err := r.SessionHeader("header"); err != nil || r.SessionID != "body" {
		t.Fatalf("the body's session must win: %q %v", r.SessionID, err)
	}
	r, _ = Chat([]byte(base + `}`))
	if err := r.SessionHeader("header"); err != nil || r.SessionID != "header" {
		t.Fatalf("header session: %q %v", r.SessionID, err)
	}
	r, _ = Chat([]byte(base + `}`))
	long := make([]rune, maxSessionID+1)
	for i := range long {
		long[i] = 'é'
	}
	if err := r.SessionHeader(string(long)); err == nil || err.Status != 400 {
		t.Fatalf("a header over %d characters must be a 400, got %v", maxSessionID, err)
	}
}

func TestEmbeddingsRequestFields(t *testing.T) {
	r, err := Embeddings([]byte(`{"model":"a/b","input":[{"content":[{"type":"image_url","image_url":{"url":"u"}}]},{"content":[{"type":"text","text":"x"}]}],"encoding_format":"base64","provider":{"order":["p"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if r.Model != "a/b" || r.Inputs != 2 || !r.HasImage || !r.Base64 || !slices.Equal(r.Prefs.Order, []string{"p"}) {
		t.Fatalf("got %+v", r)
	}
	r, _ = Embeddings([]byte(`{"model":"a/b","input":"x"}`))
	if r.Inputs != 1 || r.HasImage || r.Base64 {
		t.Fatalf("got %+v", r)
	}
	// Token ids: one array is one input, an array of arrays one per array.
	for body, want := range map[string]int{`[1,2,3]`: 1, `[[1,2],[3],[4]]`: 3} {
		r, err = Embeddings([]byte(`{"model":"a/b","input":` + body + `}`))
		if err != nil {
			t.Fatalf("input %s: %v", body, err)
		}
		if r.Inputs != want {
			t.Errorf("input %s: %d inputs, want %d", body, r.Inputs, want)
		}
	}
}

func TestDecimalGrammarShared(t *testing.T) {
	// validate accepts exactly the prices routing can read.
	for _, s := range []string{`"0.5"`, `" 2 "`, `".5"`, `"1e-6"`, `"1E+3"`, `"-1"`, `"0x10"`, `"NaN"`, `"1e"`, `"."`, `"1.2.3"`, `"inf"`, `"1e999"`} {
		_, err := Chat([]byte(prov(`{"max_price":{"prompt":` + s + `}}`)))
		r, perr := Chat([]byte(prov(`{"max_price":{"prompt":` + s + `}}`)))
		if (err == nil) != (perr == nil) || (err == nil && r.Prefs.MaxPrice.Prompt == nil) {
			t.Errorf("%s: validation and preferences disagree", s)
		}
	}
}
