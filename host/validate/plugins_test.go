package validate

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/switchyard/switchyard/abi/manifest"
	"github.com/switchyard/switchyard/host/apierr"
)

// firstParty are the config_schemas of the plugins in plugins/, read from
// their manifests as the gateway reads them from the active modules.
var firstParty = sync.OnceValue(func() map[string]*jsonschema.Schema {
	paths, _ := filepath.Glob("../../plugins/*/manifest.json")
	out := map[string]*jsonschema.Schema{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			panic(err)
		}
		m, err := manifest.Parse(b)
		if err != nil {
			panic(err)
		}
		if m.Kind != manifest.KindPlugin || len(m.ConfigSchema) == 0 {
			continue
		}
		sch, err := CompilePluginSchema(m.ConfigSchema)
		if err != nil {
			panic(p + ": " + err.Error())
		}
		out[m.Name] = sch
	}
	return out
})

// chatWithPlugins is what the gateway does with a chat body: Chat, then
// each plugin's options against its manifest's config_schema.
func chatWithPlugins(body []byte) (*ChatRequest, *apierr.Error) {
	req, err := Chat(body)
	if err != nil {
		return nil, err
	}
	if err := PluginOptions(req.Plugins, func(id string) *jsonschema.Schema { return firstParty()[id] }); err != nil {
		return nil, err
	}
	return req, nil
}

func TestFirstPartySchemasLoad(t *testing.T) {
	if len(firstParty()) < 9 {
		t.Fatalf("%d plugin schemas read from plugins/*/manifest.json, want the nine of spec 2.3 and more", len(firstParty()))
	}
}

// TestUnsupportedOptions: the options a schema marks x-unsupported.
func TestUnsupportedOptions(t *testing.T) {
	got := UnsupportedOptions([]byte(`{"properties":{"a":{"type":"string"},"mode":{"x-unsupported":true},"b":{"x-unsupported":false}}}`))
	if len(got) != 1 || got[0] != "mode" {
		t.Fatalf("unsupported %v, want [mode]", got)
	}
}
