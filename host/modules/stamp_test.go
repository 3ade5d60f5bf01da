package modules_test

import (
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/abi"
	mf "github.com/switchyard/switchyard/abi/manifest"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/switchyard/switchyard/host/modules"
	"github.com/switchyard/switchyard/host/wasm"
)

// TestStampSeeds: a build records the seeds it validated; a second run
// validates only what changed; a broken module fails the build with its
// name; a changed manifest (its grants decide which imports pass) is a new
// key.
func TestStampSeeds(t *testing.T) {
	ctx := context.Background()
	dir := builtOpenAI(t)
	stamp := func() string {
		b, err := os.ReadFile(filepath.Join(dir, modules.StampFile))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, tc := range []struct {
		name            string
		change          func()
		validated, kept int
		err             string
	}{
		{name: "first build", validated: 1},
		{name: "nothing changed", kept: 1},
		{name: "a manifest changed", change: func() {
			m := strings.Replace(string(manifest(t, "1.0.0")), `"description": "`, `"description": "Rebuilt. `, 1)
			if err := os.WriteFile(filepath.Join(dir, "openai.json"), []byte(m), 0o600); err != nil {
				t.Fatal(err)
			}
		}, validated: 1},
		{name: "a broken module", change: func() {
			broken := strings.Replace(string(manifest(t, "1.0.0")), `"name": "openai"`, `"name": "broken-build"`, 1)
			if err := os.WriteFile(filepath.Join(dir, "broken-build.json"), []byte(broken), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "broken-build.wasm"), []byte("\x00asm\x01\x00\x00\x00\x01"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, err: "broken-build@1.0.0"},
	} {
		if tc.change != nil {
			tc.change()
		}
		before := ""
		if tc.err != "" {
			before = stamp()
		}
		n, kept, err := modules.StampSeeds(ctx, dir)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("%s: %v, want an error naming %s", tc.name, err, tc.err)
			}
			if stamp() != before {
				t.Fatalf("%s: a failed build rewrote the record", tc.name)
			}
			continue
		}
		if err != nil || n != tc.validated || kept != tc.kept {
			t.Fatalf("%s: validated %d, kept %d, %v; want %d, %d", tc.name, n, kept, err, tc.validated, tc.kept)
		}
		if !strings.Contains(stamp(), "\nopenai@1.0.0 ") {
			t.Fatalf("%s: the record does not list openai@1.0.0:\n%s", tc.name, stamp())
		}
	}
}

// TestStartTrustsTheBuildsRecord: a seed the build's record vouches for is
// not validated at start — shown with a record that lies about a module
// that does not compile: the start succeeds, and the module's first call
// refuses it (wazero validates it when compiling) instead of the gateway
// running it. A module without a record is still refused at start
// (TestStartRefusesABrokenSeed).
func TestStartTrustsTheBuildsRecord(t *testing.T) {
	ctx := context.Background()
	dir := builtOpenAI(t)
	if _, _, err := modules.StampSeeds(ctx, dir); err != nil {
		t.Fatal(err)
	}
	mj := strings.Replace(string(manifest(t, "1.0.0")), `"name": "openai"`, `"name": "forged"`, 1)
	bin := []byte("\x00asm\x01\x00\x00\x00 a record lies about this")
	m, err := mf.Parse([]byte(mj))
	if err != nil {
		t.Fatal(err)
	}
	key, _ := wasm.ValidationKey(m, sha256.Sum256(bin))
	for f, b := range map[string][]byte{"forged.json": []byte(mj), "forged.wasm": bin} {
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	rec, err := os.OpenFile(filepath.Join(dir, modules.StampFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rec.WriteString("forged@1.0.0 " + key + "\n"); err != nil {
		t.Fatal(err)
	}
	rec.Close()

	r, closeAll := open(t, filepath.Join(t.TempDir(), "sy.db"))
	defer closeAll()
	if err := r.Start(ctx, dir); err != nil {
		t.Fatalf("start with a vouched seed: %v", err)
	}
	mod, release := r.Acquire("forged")
	if mod == nil {
		t.Fatal("the vouched seed is not active")
	}
	defer release()
	if _, err := mod.Call(ctx, abi.HookChatRequest, []byte(`{}`), []byte(`{}`)); err == nil || !strings.Contains(err.Error(), "forged@1.0.0") {
		t.Fatalf("first call of a module that does not compile: %v", err)
	}
	ok, release2 := r.Acquire("openai")
	if ok == nil {
		t.Fatal("openai is not active")
	}
	defer release2()
	if _, err := ok.Call(ctx, abi.HookChatRequest, []byte(`{"model":"gpt-4o-mini","provider":"openai"}`), []byte(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`)); err != nil {
		t.Fatalf("the recorded openai seed: %v", err)
	}
}

// BenchmarkFreshStart is a registry's start on a fresh data dir with every
// module `make build` made, with the build's record of them and without it
// (every seed validated by wazero's interpreter). `make bench` runs it 3
// times; at its usual 2000 iterations it would run for an hour.
func BenchmarkFreshStart(b *testing.B) {
	if b.N > 20 {
		b.Skip("a start takes up to seconds: run with -benchtime=3x (make bench does)")
	}
	built := filepath.Join(gatewaytest.Root(), "build", "wasm")
	if _, err := os.Stat(filepath.Join(built, modules.StampFile)); err != nil {
		b.Skipf("%v (run make build)", err)
	}
	entries, err := os.ReadDir(built)
	if err != nil {
		b.Fatal(err)
	}
	for _, withRecord := range []bool{true, false} {
		name := "record"
		if !withRecord {
			name = "no-record"
		}
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			for _, e := range entries {
				if e.Name() == modules.StampFile || e.IsDir() {
					continue
				}
				if err := os.Symlink(filepath.Join(built, e.Name()), filepath.Join(dir, e.Name())); err != nil {
					b.Fatal(err)
				}
			}
			if withRecord {
				// This binary's own record: the validator's identity
				// (the wazero release) is read from the build info,
				// which a test binary does not carry as the gateway's
				// does.
				if _, _, err := modules.StampSeeds(context.Background(), dir); err != nil {
					b.Fatal(err)
				}
			}
			for b.Loop() {
				wasm.ForgetValidations() // a fresh process
				r, closeAll := open(b, filepath.Join(b.TempDir(), "sy.db"))
				if err := r.Start(context.Background(), dir); err != nil {
					b.Fatal(err)
				}
				closeAll()
			}
		})
	}
}
