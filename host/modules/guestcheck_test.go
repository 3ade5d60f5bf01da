package modules_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/switchyard/switchyard/host/modules"
)

// Publishing runs the guest check (issue 37): a module that loads but
// cannot work — a hook that panics on every call, a declared hook the
// module lacks, a Go build without c-shared whose every call traps — is
// refused with a 400 naming the hook and the problem, and nothing is
// stored; in an account's scope too. A module whose hooks work publishes.
func TestPublishRefusesWhatCannotWork(t *testing.T) {
	ctx := context.Background()
	root := gatewaytest.Root()
	r, closeAll := open(t, filepath.Join(t.TempDir(), "sy.db"))
	defer closeAll()
	read := func(path string) []byte {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run make wasm)", err)
		}
		return b
	}
	broken := read(filepath.Join(root, "build", "testdata", "broken.wasm"))
	noshared := read(filepath.Join(root, "build", "testdata", "broken-noshared.wasm"))
	mf := func(name string) []byte {
		return read(filepath.Join(root, "abi", "conformance", "testdata", "broken", name))
	}
	for _, tc := range []struct {
		name, scope string
		manifest    []byte
		bin         []byte
		want        []string // in the 400's message; none: published
	}{
		{"post_response panics", "", mf("manifest.json"), broken, []string{"broken@1.0.0 fails the guest check", "post_response on the typical input", "panicked", "panic: runtime error: index out of range"}},
		{"declared post_chunk missing", "acct-1", mf("lacking.json"), broken, []string{"post_chunk on the typical input", "declares post_chunk, which the module does not implement"}},
		{"built without c-shared", "", mf("good.json"), noshared, []string{"pre_request on the typical input", "the call broke"}},
		{"hooks that work", "acct-1", mf("good.json"), broken, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := r.PublishScoped(ctx, tc.scope, tc.manifest, tc.bin, "api")
			if tc.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var ae *apierr.Error
			if !errors.Is(err, modules.ErrGuestCheck) || !errors.As(err, &ae) || ae.Status != http.StatusBadRequest {
				t.Fatalf("publish: %v, want a 400 ErrGuestCheck", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(ae.Message, w) {
					t.Errorf("message %q lacks %q", ae.Message, w)
				}
			}
			for _, m := range r.List(tc.scope) {
				if strings.HasSuffix(m.Name, "broken") && m.Version != "1.0.2" {
					t.Errorf("a refused module was stored: %s@%s", m.Name, m.Version)
				}
			}
		})
	}
}
