package conformance_test

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/abi/conformance"
	"github.com/switchyard/switchyard/host/wasm/kithost"
)

// A module author checks their own guest with
//
//	go test ./abi/conformance -run TestGuest -guest path/to/x.wasm -manifest path/to/manifest.json
var (
	guestFlag    = flag.String("guest", "", "check this module binary (with -manifest) instead of the built ones")
	manifestFlag = flag.String("manifest", "", "the manifest of -guest")
)

// TestGuest checks a guest given with -guest, or else every module the
// build makes: the first-party adapters and plugins (build/wasm) and the
// example plugins in C, Go and AssemblyScript through Extism
// (build/examples, made by `make build`).
func TestGuest(t *testing.T) {
	h, err := kithost.New(filepath.Join(os.TempDir(), "switchyard-test-wazero-cache"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	if *guestFlag != "" {
		check(t, h, *manifestFlag, *guestFlag)
		return
	}
	root := filepath.Join("..", "..")
	var n int
	for _, dir := range []string{"wasm", "examples"} {
		manifests, _ := filepath.Glob(filepath.Join(root, "build", dir, "*.json"))
		if len(manifests) == 0 {
			t.Errorf("no modules in build/%s (run make build)", dir)
		}
		for _, mf := range manifests {
			n++
			t.Run(dir+"/"+strings.TrimSuffix(filepath.Base(mf), ".json"), func(t *testing.T) {
				check(t, h, mf, strings.TrimSuffix(mf, ".json")+".wasm")
			})
		}
	}
	t.Logf("checked %d modules", n)
}

func check(t *testing.T, h conformance.Host, manifestPath, wasmPath string) {
	if manifestPath == "" {
		t.Fatal("-guest needs -manifest")
	}
	mf, err := os.ReadFile(manifestPath)
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(wasmPath)
	if err != nil {
		t.Fatal(err)
	}
	var runtime struct {
		Runtime string `json:"runtime"`
	}
	if err := json.Unmarshal(mf, &runtime); err != nil {
		t.Fatalf("manifest: %v", err)
	}
	if runtime.Runtime == "extism" {
		conformance.CheckExtismGuest(t, h, mf, bin)
		return
	}
	conformance.CheckGuest(t, h, mf, bin)
}

// The guest check fails the modules a newcomer broke (issue 37; until
// 2026-11-29 the first and the third passed): a Go plugin whose
// post_response panics on every call, the same built without
// -buildmode=c-shared (every call traps), and a manifest declaring a
// post_chunk the module does not implement. The hooks that work pass.
func TestGuestFailsBrokenModules(t *testing.T) {
	h, err := kithost.New(filepath.Join(os.TempDir(), "switchyard-test-wazero-cache"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	root := filepath.Join("..", "..")
	for _, tc := range []struct {
		name, wasm, manifest string
		problems             map[string]string // hook/input → what its problem says; others must pass
	}{
		{"post_response panics", "broken.wasm", "manifest.json", map[string]string{
			"post_response/typical": "panicked", "post_response/large": "panicked"}},
		{"declared post_chunk missing", "broken.wasm", "lacking.json", map[string]string{
			"post_chunk/typical": "declares post_chunk, which the module does not implement", "post_chunk/large": "declares post_chunk, which the module does not implement"}},
		{"built without c-shared", "broken-noshared.wasm", "good.json", map[string]string{
			"pre_request/typical": "the call broke", "pre_request/large": "the call broke"}},
		{"the hooks that work", "broken.wasm", "good.json", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin, err := os.ReadFile(filepath.Join(root, "build", "testdata", tc.wasm))
			if err != nil {
				t.Fatalf("%v (run make wasm)", err)
			}
			mf, err := os.ReadFile(filepath.Join("testdata", "broken", tc.manifest))
			if err != nil {
				t.Fatal(err)
			}
			results, err := conformance.GuestReport(context.Background(), h, mf, bin)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range results {
				want, bad := tc.problems[r.Hook+"/"+r.Input]
				switch {
				case bad && !strings.Contains(r.Problem, want):
					t.Errorf("%s/%s: problem %q, want one saying %q", r.Hook, r.Input, r.Problem, want)
				case !bad && r.Problem != "":
					t.Errorf("%s/%s failed: %s", r.Hook, r.Input, r.Problem)
				}
			}
		})
	}
}

// The guest check runs through the Extism runtime too (issue 37): an
// AssemblyScript module built with the Extism PDK that misreads frame
// lengths past 255 bytes, traps in post_response, and lacks the post_chunk
// one manifest declares fails it; pre_request on typical input passes. The example
// built the same way (as-extism-plugin) passes, in TestGuest.
func TestGuestFailsBrokenExtismModule(t *testing.T) {
	h, err := kithost.New(filepath.Join(os.TempDir(), "switchyard-test-wazero-cache"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	bin, err := os.ReadFile(filepath.Join("..", "..", "build", "examples", "testdata", "broken-extism.wasm"))
	if err != nil {
		t.Fatalf("%v (run make -C examples)", err)
	}
	dir := filepath.Join("testdata", "broken-extism")
	for _, tc := range []struct {
		name, manifest string
		problems       map[string]string // hook/input → what its problem says; others must pass
	}{
		{"misreads large frames, post_response traps", "manifest.json", map[string]string{
			"pre_request/large":     "a replacement body must be a JSON object",
			"post_response/typical": "the call broke",
			"post_response/large":   "the call broke",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mf, err := os.ReadFile(filepath.Join(dir, tc.manifest))
			if err != nil {
				t.Fatal(err)
			}
			results, err := conformance.GuestReport(context.Background(), h, mf, bin)
			if err != nil {
				t.Fatal(err)
			}
			seen := 0
			for _, r := range results {
				want, bad := tc.problems[r.Hook+"/"+r.Input]
				switch {
				case bad && !strings.Contains(r.Problem, want):
					t.Errorf("%s/%s: problem %q, want one saying %q", r.Hook, r.Input, r.Problem, want)
				case !bad && r.Problem != "":
					t.Errorf("%s/%s failed: %s", r.Hook, r.Input, r.Problem)
				case bad:
					seen++
				}
			}
			if seen != len(tc.problems) {
				t.Errorf("%d of the %d expected problems found in %+v", seen, len(tc.problems), results)
			}
		})
	}
	// A declared hook the module does not export: refused at load, named.
	mf, err := os.ReadFile(filepath.Join(dir, "lacking.json"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conformance.GuestReport(context.Background(), h, mf, bin); err == nil || !strings.Contains(err.Error(), "missing export post_chunk") {
		t.Errorf("declaring the missing post_chunk: %v, want a load refusal naming it", err)
	}
}
