package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/host/gatewaytest"
)

// syctl plugin test runs the conformance kit's guest check on a module
// with no store and no gateway: a working module passes (exit 0, a line
// per call), and a manifest declaring a hook the module does not
// implement fails (exit 1, the hook named).
func TestPluginTest(t *testing.T) {
	root := gatewaytest.Root()
	bin := filepath.Join(root, "build", "testdata", "testplugin.wasm")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%v (run make wasm)", err)
	}
	good := filepath.Join(root, "host", "pipeline", "testdata", "testplugin", "manifest.json")
	mf, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	// The test plugin implements pre_request, post_response and
	// post_chunk; a manifest that also declares tool_call lies.
	lying := filepath.Join(t.TempDir(), "manifest.json")
	lie := bytes.Replace(mf, []byte(`"post_chunk"],`), []byte(`"post_chunk", "tool_call"],
  "tools": [{"type": "service:kit_tool", "name": "kit_tool", "description": "A tool.", "parameters": {"type": "object"}}],`), 1)
	if err := os.WriteFile(lying, lie, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, manifest string
		code           int
		want           []string
	}{
		{"passes", good, 0, []string{"pre_request    large", " KiB  ok", "memory ", "6 calls passed, 3 cases ran", "shipped/post_chunk (post_chunk)"}},
		{"declared, not implemented", lying, 1, []string{"FAIL: the manifest declares tool_call, which the module does not implement", "2 of 8 calls failed the check"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run([]string{"plugin", "test", bin, "-manifest", tc.manifest, "-cache", filepath.Join(os.TempDir(), "switchyard-test-wazero-cache")}, &out, &errb)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.code, out.String(), errb.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Fatalf("output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
}
