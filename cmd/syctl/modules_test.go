package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/host/gatewaytest"
)

func TestModuleCommands(t *testing.T) {
	root := gatewaytest.Root()
	db := newStore(t)
	manifest := filepath.Join(root, "plugins", "openai", "manifest.json")
	bin := filepath.Join(root, "build", "wasm", "openai.wasm")
	variant := filepath.Join(root, "build", "testdata", "openai-variant.wasm")
	mf, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	next := filepath.Join(t.TempDir(), "next.json")
	if err := os.WriteFile(next, []byte(strings.Replace(string(mf), `"1.0.0"`, `"1.0.1"`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(strings.Replace(string(mf), `"abi": 1`, `"abi": 2`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args    []string
		code    int
		want    string
		wantErr string
	}{
		{[]string{"module", "publish", "-manifest", manifest, "-wasm", bin, "-activate"}, 0, "published openai@1.0.0 (active: true)", ""},
		{[]string{"module", "publish", "-manifest", next, "-wasm", bin}, 0, "published openai@1.0.1 (active: false)", ""},
		{[]string{"module", "publish", "-manifest", bad, "-wasm", bin}, 1, "", ""},
		{[]string{"module", "publish", "-manifest", manifest, "-wasm", manifest}, 1, "", ""},
		{[]string{"module", "activate", "openai", "1.0.1"}, 0, "activated openai@1.0.1", ""},
		{[]string{"module", "list"}, 0, "1.0.1    true", ""},
		// A published version cannot be replaced, active or not: rollback
		// below still finds 1.0.0 as the version before 1.0.1.
		{[]string{"module", "publish", "-manifest", manifest, "-wasm", variant, "-activate"}, 1, "", "openai@1.0.0 is already published"},
		{[]string{"module", "publish", "-manifest", next, "-wasm", variant}, 1, "", "openai@1.0.1 is already published"},
		{[]string{"module", "rollback", "openai"}, 0, "rolled back openai to 1.0.0", ""},
		{[]string{"module", "rollback", "openai"}, 1, "", ""},
		{[]string{"module", "activate", "openai", "9.9.9"}, 1, "", ""},
		{[]string{"module", "activate", "openai"}, 2, "", ""},
		// 1.0.0 is active again: it cannot go alone, 1.0.1 can.
		{[]string{"module", "delete", "openai", "1.0.0"}, 1, "", "openai@1.0.0 is the active version"},
		{[]string{"module", "delete", "openai", "1.0.1"}, 0, "deleted openai@1.0.1", ""},
		{[]string{"module", "delete", "openai", "1.0.1"}, 1, "", "openai@1.0.1 is not published"},
		{[]string{"module", "delete", "openai"}, 0, "deleted openai (1 versions)", ""},
		{[]string{"module", "list"}, 0, "NAME", ""},
		{[]string{"module", "delete", "openai"}, 1, "", "module openai is not published"},
	} {
		code, out, stderr := syctl(t, db, tc.args...)
		if code != tc.code || !strings.Contains(out, tc.want) || !strings.Contains(stderr, tc.wantErr) {
			t.Fatalf("%v: code %d out %q stderr %q; want %d and %q", tc.args, code, out, stderr, tc.code, tc.want)
		}
	}
}
