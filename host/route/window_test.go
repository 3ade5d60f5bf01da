package route

import (
	"strings"
	"testing"
)

func TestWindow(t *testing.T) {
	c := testCatalog()
	c.Providers["groq"].MaxMessages = 1000
	c.Providers["free"].MaxMessages = 500
	r := New(c, Options{Rand: seeded(1)})
	tests := []struct {
		name     string
		models   []string
		provider string
		prompt   int
		want     Window
	}{
		{name: "one model, every endpoint", models: []string{gpt}, want: Window{MinContext: 32000, MaxContext: 128000}},
		{name: "preferences apply", models: []string{gpt}, provider: `{"ignore":["deepinfra"]}`, want: Window{MinContext: 128000, MaxContext: 128000}},
		{name: "the context check does not", models: []string{gpt}, prompt: 100000, want: Window{MinContext: 32000, MaxContext: 128000}},
		{name: "max output and message limits", models: []string{llama}, want: Window{MinContext: 8192, MaxContext: 8192, MaxOutput: 1024, MaxMessages: 500}},
		{name: "fallback models count", models: []string{llama, gpt}, want: Window{MinContext: 8192, MaxContext: 128000, MaxOutput: 1024, MaxMessages: 500}},
		{name: "nothing left", models: []string{gpt}, provider: `{"only":["nope"]}`, want: Window{}},
		{name: "unknown model", models: []string{"x/y"}, want: Window{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prov := tt.provider
			if prov == "" {
				prov = `{}`
			}
			got := r.Window(Request{Models: tt.models, Prefs: prefs(t, prov), PromptTokens: tt.prompt})
			if got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// A prompt too long for every endpoint the preferences leave is the
// caller's to fix: a 400 naming the largest context and the plugin that
// would make it fit; a 404 when a preference is what eliminated the
// endpoints that were large enough.
func TestContextTooLong(t *testing.T) {
	r := New(testCatalog(), Options{Rand: seeded(1)})
	tests := []struct {
		name     string
		model    string
		provider string
		req      Request
		status   int
		want     []string
	}{
		{name: "every endpoint too small", model: llama, req: Request{PromptTokens: 9000}, status: 400,
			want: []string{"messages: the prompt (about 9000 tokens) does not fit the largest context available for meta/llama-3: 8192 tokens", `"plugins": [{"id": "context-compression"}]`}},
		{name: "with max output", model: gpt, req: Request{PromptTokens: 127000, MaxOutputTokens: 4000}, status: 400,
			want: []string{"(about 127000 tokens) plus 4000 output tokens (max_tokens)", "128000 tokens (openai/gpt-4o at "}},
		{name: "the large endpoints ignored", model: gpt, provider: `{"only":["deepinfra"]}`, req: Request{PromptTokens: 40000}, status: 400,
			want: []string{"32000 tokens (openai/gpt-4o at deepinfra)"}},
		{name: "preferences removed every endpoint", model: llama, provider: `{"zdr":true,"data_collection":"deny"}`, req: Request{PromptTokens: 9000}, status: 404,
			want: []string{"no endpoint for meta/llama-3 satisfies provider.zdr=true, provider.data_collection=deny and a context length of 9000 tokens (9000 prompt + 0 max output)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := tt.req
			req.Models = []string{tt.model}
			req.Compression = "context-compression" // the flow finds it by its manifest's role
			prov := tt.provider
			if prov == "" {
				prov = `{}`
			}
			req.Prefs = prefs(t, prov)
			_, err := r.Plan(req)
			if err == nil || err.Status != tt.status {
				t.Fatalf("got %v, want status %d", err, tt.status)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Message, w) {
					t.Fatalf("message %q lacks %q", err.Message, w)
				}
			}
			if tt.status == 400 && err.Metadata["suggestion"] != "context-compression" {
				t.Fatalf("metadata %v", err.Metadata)
			}
		})
	}
}

// native_files is true only when every endpoint left takes file parts
// itself: the model accepts files and each endpoint's adapter translates
// them; one endpoint that does not (a preference can remove it) makes the
// file-parser plugin extract the text instead.
func TestWindowNativeFiles(t *testing.T) {
	c := testCatalog()
	for _, p := range c.Providers {
		p.Adapter = "openai"
	}
	c.Providers["deepinfra"].Adapter = "custom"
	c.Models[gpt].InputModalities = []string{"text", "file"}
	r := New(c, Options{Rand: seeded(1), Adapters: fileInput{"openai": true}})
	tests := []struct {
		name     string
		models   []string
		provider string
		want     bool
	}{
		{"one endpoint's adapter does not translate files", []string{gpt}, `{}`, false},
		{"a preference removes it", []string{gpt}, `{"ignore":["deepinfra"]}`, true},
		{"the model does not take files", []string{llama}, `{"ignore":["deepinfra"]}`, false},
		{"a fallback model that does not", []string{gpt, llama}, `{"ignore":["deepinfra"]}`, false},
		{"nothing left", []string{gpt}, `{"only":["nope"]}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := r.Window(Request{Models: tt.models, Prefs: prefs(t, tt.provider)}).NativeFiles; got != tt.want {
				t.Fatalf("native_files = %v, want %v", got, tt.want)
			}
		})
	}
}

// fileInput is the adapters whose manifests declare file_input.
type fileInput map[string]bool

func (f fileInput) NativeFiles(adapter string) bool { return f[adapter] }
