package flow

import (
	"testing"

	"github.com/switchyard/switchyard/host/validate"
	"github.com/tidwall/gjson"
)

// TestOnlineVariant: a model named with :online loses the suffix and the
// request gets the web plugin, as OpenRouter's shortcut defines it; an
// explicit web entry is kept; a catalog id ending in :online is a model.
func TestOnlineVariant(t *testing.T) {
	known := func(id string) bool { return id == "acme/search:online" }
	tests := []struct {
		name, body            string
		model, models, plugin string
	}{
		{"model", `{"model":"openai/gpt-4o:online","messages":[{"role":"user","content":"hi"}]}`,
			"openai/gpt-4o", "", `[{"id":"web"}]`},
		{"fallback and other plugins", `{"model":"openai/gpt-4o","models":["meta/llama-3:online"],"plugins":[{"id":"response-healing"}],"messages":[{"role":"user","content":"hi"}]}`,
			"openai/gpt-4o", `["meta/llama-3"]`, `[{"id":"response-healing"},{"id":"web"}]`},
		{"explicit web entry kept", `{"model":"openai/gpt-4o:online","plugins":[{"id":"web","enabled":false}],"messages":[{"role":"user","content":"hi"}]}`,
			"openai/gpt-4o", "", `[{"id":"web","enabled":false}]`},
		{"catalog id ending in :online", `{"model":"acme/search:online","messages":[{"role":"user","content":"hi"}]}`,
			"acme/search:online", "", ``},
		{"other variants untouched", `{"model":"openai/gpt-4o:nitro","messages":[{"role":"user","content":"hi"}]}`,
			"openai/gpt-4o:nitro", "", ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vr, aerr := validate.Chat([]byte(tt.body))
			if aerr != nil {
				t.Fatal(aerr)
			}
			out, _, aerr := openRouterCompat(vr, known, compatPlugins{online: "web"}) // the plugin declaring the online role
			if aerr != nil {
				t.Fatal(aerr)
			}
			b := gjson.ParseBytes(out.Body)
			if got := b.Get("model").Str; got != tt.model {
				t.Errorf("model = %s, want %s", got, tt.model)
			}
			if got := b.Get("models").Raw; got != tt.models {
				t.Errorf("models = %s, want %s", got, tt.models)
			}
			if got := b.Get("plugins").Raw; got != tt.plugin {
				t.Errorf("plugins = %s, want %s", got, tt.plugin)
			}
		})
	}
}
