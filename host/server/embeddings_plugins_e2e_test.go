package server_test

import (
	"strings"
	"testing"

	"github.com/switchyard/switchyard/host/gatewaytest"
)

// TestEmbeddingsRunPlugins: POST /embeddings runs the request core's
// pre_request phase for the plugins whose manifest declares the
// embeddings capability, and only for them: two default-on copies of the
// test plugin, one declaring it, and an embeddings request runs that one
// (a chat request runs both).
func TestEmbeddingsRunPlugins(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	wasmPath, mf := testPlugin(t)
	embedMF := strings.Replace(strings.Replace(mf, `"name": "testplugin"`, `"name": "embedwatch"`, 1),
		`"kind": "plugin",`, `"kind": "plugin", "capabilities": ["embeddings"],`, 1)
	for _, m := range []string{mf, embedMF} {
		if resp, body := publish(t, g, g.Key, wasmPath, m, "", true); resp.StatusCode/100 != 2 {
			t.Fatalf("publish: %d %s", resp.StatusCode, body.Raw)
		}
	}
	for _, name := range []string{"testplugin", "embedwatch"} {
		if resp, b, _ := g.Request("PUT", "/modules/"+name+"/default", `{"enabled":true}`); resp.StatusCode != 200 {
			t.Fatalf("default %s: %d %s", name, resp.StatusCode, b)
		}
	}
	resp, body := post(t, g, "/embeddings", `{"model":"test/embed","input":"x"}`, "X-Service-Metadata", "enabled")
	if resp.StatusCode != 200 || len(body.Get("data.0.embedding").Array()) == 0 {
		t.Fatalf("embeddings: %d %s", resp.StatusCode, body.Raw)
	}
	st := body.Get("service_metadata.pipeline")
	if st.Get("#").Int() != 1 || st.Get("0.name").Str != "embedwatch" || st.Get("0.hook").Str != "pre_request" {
		t.Fatalf("embeddings pipeline %s, want embedwatch's pre_request alone", st.Raw)
	}
	_, body = post(t, g, "/chat/completions", hello, "X-Service-Metadata", "enabled")
	if n := body.Get(`service_metadata.pipeline.#(hook=="pre_request")#`).Get("#").Int(); n != 2 {
		t.Fatalf("chat pipeline %s, want both plugins", body.Get("service_metadata.pipeline").Raw)
	}
}
