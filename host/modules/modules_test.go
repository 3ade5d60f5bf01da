package modules_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/switchyard/switchyard/host/modules"
	"github.com/switchyard/switchyard/host/store"
	"github.com/switchyard/switchyard/host/wasm"
)

func open(t testing.TB, path string) (*modules.Registry, func()) {
	t.Helper()
	db, err := store.OpenBolt(path)
	if err != nil {
		t.Fatal(err)
	}
	e := wasm.NewEngine(wasm.Config{CacheDir: filepath.Join(os.TempDir(), "switchyard-test-wazero-cache")})
	r, err := modules.Open(db, e, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r, func() { r.Close(); e.Close(context.Background()); db.Close() }
}

func manifest(t *testing.T, version string) []byte {
	b, err := os.ReadFile(filepath.Join(gatewaytest.Root(), "plugins", "openai", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	return []byte(strings.Replace(string(b), `"version": "1.0.0"`, `"version": "`+version+`"`, 1))
}

// builtOpenAI is a seed directory with the built OpenAI adapter only.
func builtOpenAI(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"openai.wasm", "openai.json"} {
		b, err := os.ReadFile(filepath.Join(gatewaytest.Root(), "build", "wasm", f))
		if err != nil {
			t.Fatalf("%v (run make wasm)", err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestRegistryLifecycle(t *testing.T) {
	ctx := context.Background()
	root := gatewaytest.Root()
	bin, err := os.ReadFile(filepath.Join(root, "build", "wasm", "openai.wasm"))
	if err != nil {
		t.Fatalf("%v (run make build)", err)
	}
	path := filepath.Join(t.TempDir(), "sy.db")
	r, closeAll := open(t, path)

	// Seeding publishes and activates the built modules.
	if err := r.Seed(ctx, filepath.Join(root, "build", "wasm")); err != nil {
		t.Fatal(err)
	}
	if v := r.ActiveVersion("openai"); v != "1.0.0" {
		t.Fatalf("seeded version %q", v)
	}
	// A bad module is refused and the active one stays.
	if _, err := r.Publish(ctx, manifest(t, "2.0.0"), []byte("not wasm"), "test"); err == nil {
		t.Fatal("a module that does not compile was published")
	}
	if err := r.Activate(ctx, "openai", "2.0.0"); err == nil {
		t.Fatal("an unpublished version was activated")
	}
	if _, err := r.Publish(ctx, manifest(t, "1.1.0"), bin, "test"); err != nil {
		t.Fatal(err)
	}
	m, release := r.Acquire("openai")
	if m == nil || m.ID != "openai@1.0.0" {
		t.Fatalf("publishing activated a version: %v", m)
	}
	if err := r.Activate(ctx, "openai", "1.1.0"); err != nil {
		t.Fatal(err)
	}
	// A request that started on 1.0.0 keeps it usable until it lets go.
	if out, err := m.Call(ctx, 1, []byte(`{"model":"x","drop":[]}`), []byte(`{"messages":[{"role":"user","content":"hi"}]}`)); err != nil || len(out.Fields) != 4 {
		t.Fatalf("pinned old version failed after the swap: %v", err)
	}
	release()
	if n, _ := r.Acquire("openai"); n == nil || n.ID != "openai@1.1.0" {
		t.Fatalf("active after swap: %v", n)
	}
	if v, err := r.Rollback(ctx, "openai"); err != nil || v != "1.0.0" {
		t.Fatalf("rollback: %q %v", v, err)
	}
	if _, err := r.Rollback(ctx, "openai"); !errors.Is(err, modules.ErrNoEarlier) {
		t.Fatalf("second rollback: %v", err)
	}

	// Scopes: an account's module is its own; defaults per scope.
	if _, err := r.PublishScoped(ctx, "acct_a", manifest(t, "3.0.0"), bin, "test"); err != nil {
		t.Fatal(err)
	}
	if err := r.Activate(ctx, modules.Scoped("acct_a", "openai"), "3.0.0"); err != nil {
		t.Fatal(err)
	}
	if err := r.SetDefault(modules.Scoped("acct_a", "openai"), true); err != nil {
		t.Fatal(err)
	}
	if d := r.Defaults("acct_a"); len(d) != 1 || d[0] != "openai" {
		t.Fatalf("defaults of acct_a %v", d)
	}
	if d := r.Defaults("acct_b"); len(d) != 0 {
		t.Fatalf("defaults leak to acct_b: %v", d)
	}
	for _, info := range r.List("acct_b") {
		if strings.HasPrefix(info.Name, "acct_a/") {
			t.Fatalf("acct_b sees acct_a's module %v", info)
		}
	}
	closeAll()

	// After a restart the active versions and defaults are what they were.
	r2, closeAll2 := open(t, path)
	defer closeAll2()
	if err := r2.LoadActive(ctx); err != nil {
		t.Fatal(err)
	}
	if m, rel := r2.Acquire("openai"); m == nil || m.ID != "openai@1.0.0" {
		t.Fatalf("after restart: %v", m)
	} else {
		rel()
	}
	// Nothing is compiled at the restart, the account's module included
	// (issue 31 item 2: memory grows with the modules in use, not those
	// stored); its first call compiles it from the store.
	if n := r2.Compiled(); n != 0 {
		t.Fatalf("%d modules compiled by the restart, want none before a call", n)
	}
	if m, rel := r2.Acquire(modules.Scoped("acct_a", "openai")); m == nil || m.ID != "openai@3.0.0" {
		t.Fatalf("account module after restart: %v", m)
	} else {
		_, err := m.Call(ctx, abi.HookChatRequest, []byte(`{"model":"gpt-4o"}`), []byte(`{"model":"openai/gpt-4o","messages":[{"role":"user","content":"hi"}]}`))
		rel()
		if err != nil || r2.Compiled() != 1 {
			t.Fatalf("first call of the account's module after restart: %v; %d compiled, want 1", err, r2.Compiled())
		}
	}
	if d := r2.Defaults("acct_a"); len(d) != 1 {
		t.Fatalf("defaults after restart %v", d)
	}
}

// TestSeedIsIdempotent: a restart with the same build publishes nothing; a
// changed manifest of the same version is republished.
func TestSeedIsIdempotent(t *testing.T) {
	ctx := context.Background()
	dir := builtOpenAI(t)
	r, closeAll := open(t, filepath.Join(t.TempDir(), "sy.db"))
	defer closeAll()
	if err := r.Seed(ctx, dir); err != nil {
		t.Fatal(err)
	}
	first := r.List("")[0].Published
	if err := r.Seed(ctx, dir); err != nil {
		t.Fatal(err)
	}
	if again := r.List("")[0].Published; !again.Equal(first) {
		t.Fatal("seeding the same build twice republished it")
	}
	mf, _ := os.ReadFile(filepath.Join(dir, "openai.json"))
	changed := strings.Replace(string(mf), `"pool_size": 32`, `"pool_size": 8`, 1)
	if err := os.WriteFile(filepath.Join(dir, "openai.json"), []byte(changed), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := r.Seed(ctx, dir); err != nil {
		t.Fatal(err)
	}
	m, rel := r.Acquire("openai")
	defer rel()
	if m.Manifest.Limits.PoolSize != 8 {
		t.Fatalf("changed manifest not applied: pool %d", m.Manifest.Limits.PoolSize)
	}
}

// TestPublishedVersionsAreImmutable: publishing a name@version again is
// refused with 409 (before, it silently replaced the stored module, even the
// active one, and rollback then went to the wrong version).
func TestPublishedVersionsAreImmutable(t *testing.T) {
	ctx := context.Background()
	root := gatewaytest.Root()
	bin, err := os.ReadFile(filepath.Join(root, "build", "wasm", "openai.wasm"))
	if err != nil {
		t.Fatalf("%v (run make build)", err)
	}
	r, closeAll := open(t, filepath.Join(t.TempDir(), "sy.db"))
	defer closeAll()
	if _, err := r.Publish(ctx, manifest(t, "1.0.0"), bin, "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.PublishAndActivate(ctx, "", manifest(t, "1.1.0"), bin, "test"); err != nil {
		t.Fatal(err)
	}
	before := r.List("")
	// The same versions again, one of them active, with another binary
	// (a different build of a module that loads).
	other, err := os.ReadFile(filepath.Join(root, "build", "testdata", "openai-variant.wasm"))
	if err != nil {
		t.Fatalf("%v (run make wasm)", err)
	}
	for _, v := range []string{"1.0.0", "1.1.0"} {
		for _, publish := range []func() error{
			func() error { _, err := r.Publish(ctx, manifest(t, v), other, "test"); return err },
			func() error { _, err := r.PublishAndActivate(ctx, "", manifest(t, v), other, "test"); return err },
		} {
			err := publish()
			if !errors.Is(err, modules.ErrExists) {
				t.Fatalf("republishing %s: %v, want ErrExists", v, err)
			}
			if ae := apierr.From(err); ae.Status != http.StatusConflict || !strings.Contains(ae.Message, "openai@"+v+" is already published") {
				t.Fatalf("republishing %s: %d %q", v, ae.Status, ae.Message)
			}
		}
	}
	if after := r.List(""); !reflect.DeepEqual(before, after) {
		t.Fatalf("a refused publish changed the store:\n%v\n%v", before, after)
	}
	if m, rel := r.Acquire("openai"); m == nil || m.ID != "openai@1.1.0" {
		t.Fatalf("active after refused publishes: %v", m)
	} else {
		rel()
	}
	if v, err := r.Rollback(ctx, "openai"); err != nil || v != "1.0.0" {
		t.Fatalf("rollback after a refused re-publish: %q %v, want 1.0.0", v, err)
	}
	// In an account's scope the message names the module as its publisher
	// knows it, without the account id.
	if _, err := r.PublishScoped(ctx, "acct_a", manifest(t, "1.0.0"), bin, "test"); err != nil {
		t.Fatal(err)
	}
	_, err = r.PublishScoped(ctx, "acct_a", manifest(t, "1.0.0"), bin, "test")
	if ae := apierr.From(err); !errors.Is(err, modules.ErrExists) || ae.Status != http.StatusConflict ||
		ae.Message != "module openai@1.0.0 is already published in this account's scope; a published version cannot be replaced, publish it under a new version" {
		t.Fatalf("scoped republish: %v", err)
	}
	err = r.Activate(ctx, "openai", "9.9.9")
	if !errors.Is(err, modules.ErrNotPublished) || apierr.From(err).Status != http.StatusNotFound {
		t.Fatalf("activating an unpublished version: %v", err)
	}
}

// TestStartLoadsEachModuleOnce: a restart with stored active versions and
// the same build directory activates each module once (LoadActive then Seed
// activated every module twice), and a restart applies a rebuilt seed.
func TestStartLoadsEachModuleOnce(t *testing.T) {
	ctx := context.Background()
	seedDir := filepath.Join(gatewaytest.Root(), "build", "wasm")
	seeds, _ := filepath.Glob(filepath.Join(seedDir, "*.json"))
	if len(seeds) < 2 {
		t.Fatalf("want the built modules in %s (run make wasm)", seedDir)
	}
	path := filepath.Join(t.TempDir(), "sy.db")
	for _, restart := range []string{"fresh store", "stored actives"} {
		db, err := store.OpenBolt(path)
		if err != nil {
			t.Fatal(err)
		}
		var logs logRecorder
		e := wasm.NewEngine(wasm.Config{CacheDir: filepath.Join(os.TempDir(), "switchyard-test-wazero-cache")})
		r, err := modules.Open(db, e, slog.New(&logs))
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Start(ctx, seedDir); err != nil {
			t.Fatal(err)
		}
		activated := map[string]int{}
		for _, m := range logs.attrs("module activated", "module") {
			activated[m]++
		}
		if len(activated) != len(seeds) {
			t.Errorf("%s: activated %v, want the %d built modules", restart, activated, len(seeds))
		}
		for m, n := range activated {
			if n != 1 {
				t.Errorf("%s: %s activated %d times", restart, m, n)
			}
		}
		if m, rel := r.Acquire("openai"); m == nil {
			t.Errorf("%s: openai is not active", restart)
		} else {
			rel()
		}
		r.Close()
		e.Close(ctx)
		db.Close()
	}
}

// logRecorder is a slog.Handler that keeps the records.
type logRecorder struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, r.Clone())
	return nil
}
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecorder) WithGroup(string) slog.Handler      { return l }

// attrs returns attribute key of every record with message msg.
func (l *logRecorder) attrs(msg, key string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, r := range l.recs {
		if r.Message != msg {
			continue
		}
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == key {
				out = append(out, a.Value.String())
			}
			return true
		})
	}
	return out
}

// TestStartRefusesABrokenSeed: a built module that does not load stops the
// start with its name, and nothing half-started stays active.
func TestStartRefusesABrokenSeed(t *testing.T) {
	ctx := context.Background()
	dir := builtOpenAI(t)
	broken := strings.Replace(string(manifest(t, "1.0.0")), `"name": "openai"`, `"name": "broken"`, 1)
	if err := os.WriteFile(filepath.Join(dir, "broken.json"), []byte(broken), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "broken.wasm"), []byte("not wasm"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, closeAll := open(t, filepath.Join(t.TempDir(), "sy.db"))
	defer closeAll()
	err := r.Start(ctx, dir)
	if err == nil || !strings.Contains(err.Error(), "seeding broken@1.0.0") {
		t.Fatalf("start with a broken seed: %v", err)
	}
	if m, _ := r.Acquire("openai"); m != nil {
		t.Fatalf("a failed start left %s active", m.ID)
	}
	if len(r.List("")) != 0 {
		t.Fatalf("a failed start stored modules: %v", r.List(""))
	}
}

// TestStartCompilesOnFirstCall: a start — fresh store or restart — compiles
// no module; the first calls (several at once) compile, check and
// instantiate it and are served.
func TestStartCompilesOnFirstCall(t *testing.T) {
	ctx := context.Background()
	dir := builtOpenAI(t)
	path := filepath.Join(t.TempDir(), "sy.db")
	for _, restart := range []string{"fresh store", "restart"} {
		r, closeAll := open(t, path)
		if err := r.Start(ctx, dir); err != nil {
			t.Fatal(err)
		}
		m, rel := r.Acquire("openai")
		if m == nil {
			t.Fatalf("%s: openai is not active", restart)
		}
		if n := m.Live(); n != 0 {
			t.Errorf("%s: %d instances before any call, want none (compiled on first use)", restart, n)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := m.Call(ctx, abi.HookChatRequest, []byte(`{"model":"gpt-4o"}`), []byte(`{"model":"openai/gpt-4o","messages":[{"role":"user","content":"hi"}]}`))
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("%s: first calls: %v", restart, err)
			}
		}
		if n := m.Live(); n < 1 || n > 4 {
			t.Errorf("%s: %d instances after 4 calls", restart, n)
		}
		rel()
		closeAll()
	}
}
