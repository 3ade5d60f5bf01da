package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/abi/guestcheck"
)

// CheckGuest checks a module (its manifest JSON and binary) on host: it
// must load, and every hook it declares must answer typical input, and
// input over 64 KiB, in the shape docs/abi.md gives that hook's output
// (abi/guestcheck, which the gateway also runs when a module is published).
// A hook may fail (status byte 1) on input it does not accept, with a
// message; the host then answers 502. A passthrough hook is skipped by the
// host, so a module need not implement it, but if it does, it must return
// its input unchanged.
func CheckGuest(t *testing.T, host Host, manifestJSON, wasm []byte) {
	results, err := GuestReport(context.Background(), host, manifestJSON, wasm)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if r.Input == "" { // a hook name the ABI does not have
			t.Error(r.Problem)
			continue
		}
		t.Run(r.Hook+"/"+r.Input, func(t *testing.T) {
			if r.Note != "" {
				t.Log(r.Note)
			}
			if r.Problem != "" {
				t.Error(r.Problem)
			}
		})
	}
}

// Result is the verdict on one call of the guest check.
type Result = guestcheck.Result

// GuestReport runs the guest check (CheckGuest) and returns a verdict per
// call instead of failing a test: `syctl plugin test` prints it. An error
// means the module could not be checked at all (its manifest, or a host
// that refuses to load it, with the reason).
func GuestReport(ctx context.Context, host Host, manifestJSON, wasm []byte) ([]Result, error) {
	m, err := host.Load(ctx, manifestJSON, wasm)
	if err != nil {
		return nil, fmt.Errorf("does not load: %w", err)
	}
	defer m.Close(ctx)
	return guestcheck.Check(ctx, m, manifestJSON)
}

// CheckExtismGuest is CheckGuest for a module built with an Extism PDK
// (manifest "runtime": "extism"), plus the host's rule for Extism exports
// (docs/plugins.md): a hook the manifest declares must be exported under
// its name, unless it is passthrough (the host never calls it). The check
// declares one hook of the module's kind that it does not export: the host
// must refuse that at load, naming the hook, and load it as passthrough.
func CheckExtismGuest(t *testing.T, host Host, manifestJSON, wasm []byte) {
	CheckGuest(t, host, manifestJSON, wasm)
	var mf map[string]any
	if err := json.Unmarshal(manifestJSON, &mf); err != nil {
		t.Fatalf("manifest: %v", err)
	}
	if mf["runtime"] != "extism" {
		t.Fatalf("not an Extism module: runtime %v", mf["runtime"])
	}
	hooks, _ := mf["hooks"].([]any)
	declared := map[string]bool{}
	for _, h := range hooks {
		declared[h.(string)] = true
	}
	candidates := adapterHooks
	if mf["kind"] == "plugin" {
		candidates = pluginHooks
	}
	var extra string
	for _, h := range candidates {
		if !declared[h.String()] {
			extra = h.String()
			break
		}
	}
	if extra == "" {
		t.Log("the module declares every hook of its kind; the export rule is not checked")
		return
	}
	mf["hooks"] = append(hooks, extra)
	missing, _ := json.Marshal(mf)
	if m, err := host.Load(context.Background(), missing, wasm); err == nil {
		_ = m.Close(context.Background())
		t.Errorf("declaring %s, which the module does not export, loaded; the host must refuse it at load", extra)
	} else if !strings.Contains(err.Error(), extra) {
		t.Errorf("the refusal %q does not name the missing export %s", err, extra)
	}
	pt, _ := mf["passthrough"].([]any)
	mf["passthrough"] = append(pt, extra)
	passthrough, _ := json.Marshal(mf)
	t.Run("with passthrough "+extra, func(t *testing.T) { CheckGuest(t, host, passthrough, wasm) })
}
