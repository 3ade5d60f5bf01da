package modules_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/switchyard/switchyard/host/modules"
	"github.com/switchyard/switchyard/host/store"
	"github.com/switchyard/switchyard/host/wasm"
)

// On one gateway, a publication and activation change only what they
// name: no other module is reloaded, and nothing is logged as activated
// by another gateway (there is none).
func TestPublishOnOneGatewayReloadsNothingElse(t *testing.T) {
	ctx := context.Background()
	db, err := store.OpenBolt(filepath.Join(t.TempDir(), "sy.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var logs logRecorder
	e := wasm.NewEngine(wasm.Config{CacheDir: filepath.Join(os.TempDir(), "switchyard-test-wazero-cache")})
	defer e.Close(ctx)
	r, err := modules.Open(db, e, slog.New(&logs))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Start(ctx, builtOpenAI(t)); err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(filepath.Join(gatewaytest.Root(), "build", "wasm", "openai.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"2.0.0", "2.1.0", "2.2.0"} {
		for _, scope := range []string{"acct_a", "acct_b"} {
			if _, err := r.PublishAndActivate(ctx, scope, manifest(t, v), bin, "test"); err != nil {
				t.Fatal(err)
			}
		}
	}
	time.Sleep(200 * time.Millisecond) // the follower would have run by now
	if got := logs.attrs("module activated by another gateway", "module"); len(got) > 0 {
		t.Fatalf("a single gateway reloaded %v as if another gateway had activated them", got)
	}
}
