// Package modules is the module store: Wasm binaries and their manifests,
// versioned in bbolt, and the set of active versions the gateway runs.
// Activating a version builds and instantiates it fully before the pointer
// swaps, so a module that fails to load never replaces a working one, and
// requests in flight finish on the version they started with.
package modules

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchyard/switchyard/abi/manifest"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/store"
	"github.com/switchyard/switchyard/host/wasm"
)

var (
	bucketBinaries  = []byte("module_binaries")  // name@version → wasm
	bucketManifests = []byte("module_manifests") // name@version → Record JSON
	bucketActive    = []byte("module_active")    // name → version
	bucketDefaults  = []byte("module_defaults")  // scoped plugin name → "1": runs on every request of its scope
)

// Scoped is the registry name of module name installed for one account
// (scope = account id); the empty scope is the gateway-wide one. A plugin
// installed in an account's scope runs only for that account's keys.
func Scoped(scope, name string) string {
	if scope == "" {
		return name
	}
	return scope + "/" + name
}

// Record is what is stored beside a binary.
type Record struct {
	Manifest  json.RawMessage `json:"manifest"`
	SHA256    string          `json:"sha256"`
	Size      int             `json:"size"`
	Published time.Time       `json:"published"`
	Source    string          `json:"source"` // "seed" or "admin"
}

// Info describes a stored version for listings.
type Info struct {
	Name, Version, SHA256, Source string
	Active                        bool
	Published                     time.Time
}

// Registry is safe for concurrent use.
type Registry struct {
	db     store.DB
	engine *wasm.Engine
	log    *slog.Logger

	mu       sync.Mutex // serialises activations
	active   atomic.Pointer[map[string]*wasm.Module]
	defaults atomic.Pointer[map[string][]string] // scope → default-on plugin names
	// defaultsMu makes loadDefaults' read of the store and its store of
	// the result one step: SetDefault's own reload and the follower's (a
	// notification, asynchronous on PostgreSQL) could interleave, and the
	// one that read first but stored last put back the older set.
	defaultsMu sync.Mutex
	routers    atomic.Pointer[routerIndex] // of active, rebuilt after a swap (routers.go)

	// settings are the operator's settings of global modules (config
	// module_settings), by module name, as JSON.
	settings map[string][]byte
	// quota bounds each account's scope (delete.go).
	quota Quota

	// Following other gateways on a shared store (follow.go).
	stop      chan struct{}
	unsub     []func()
	closeOnce sync.Once
	followWG  sync.WaitGroup
	wake      chan struct{}
	// unloadable are the versions activated elsewhere that did not load
	// here (guarded by mu).
	unloadable map[string]bool
	// Versions published elsewhere, compiled ahead of their activation
	// (follow.go, warmUp).
	prewarm chan string
	warmMu  sync.Mutex
	warm    map[string]*warmMod
	loads   atomic.Int64
	// self tells this registry's publications from others' (random).
	self string
}

// SetSettings installs the operator's module settings (config
// module_settings, each module's as JSON). Call it before serving.
func (r *Registry) SetSettings(s map[string][]byte) { r.settings = s }

// Settings is the operator's settings of global module name (JSON), or
// nil. Every caller of a global module's hooks hands them over in
// ctx.settings (the pipeline's plugin hooks, the server tools' tool_call);
// a module in an account's scope never gets them, whatever its name.
func (r *Registry) Settings(name string) []byte { return r.settings[name] }

// Open creates the buckets.
func Open(db store.DB, engine *wasm.Engine, log *slog.Logger) (*Registry, error) {
	if log == nil {
		log = slog.Default()
	}
	err := db.Update(func(tx store.Tx) error {
		for _, b := range [][]byte{bucketBinaries, bucketManifests, bucketActive, bucketDefaults} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	r := &Registry{db: db, engine: engine, log: log, stop: make(chan struct{}), self: rand.Text()}
	empty := map[string]*wasm.Module{}
	r.active.Store(&empty)
	r.loadDefaults()
	r.follow()
	return r, nil
}

func (r *Registry) loadDefaults() {
	r.defaultsMu.Lock()
	defer r.defaultsMu.Unlock()
	d := map[string][]string{}
	_ = r.db.View(func(tx store.Tx) error {
		return tx.Bucket(bucketDefaults).ForEach(func(k, _ []byte) error {
			scope, name := "", string(k)
			if i := strings.LastIndexByte(name, '/'); i >= 0 {
				scope, name = name[:i], name[i+1:]
			}
			d[scope] = append(d[scope], name)
			return nil
		})
	})
	r.defaults.Store(&d)
}

// SetDefault makes plugin scopedName run on every request of its scope
// (unless the request disables it), or stops that.
func (r *Registry) SetDefault(scopedName string, on bool) error {
	err := r.db.Update(func(tx store.Tx) error {
		b := tx.Bucket(bucketDefaults)
		if err := tx.Notify(topicDefaults, scopedName); err != nil {
			return err
		}
		if on {
			return b.Put([]byte(scopedName), []byte("1"))
		}
		return b.Delete([]byte(scopedName))
	})
	if err == nil {
		r.loadDefaults()
	}
	return err
}

// Defaults lists the default-on plugins for a request of account: the
// gateway-wide ones, then the account's own.
func (r *Registry) Defaults(account string) []string {
	d := *r.defaults.Load()
	out := append([]string(nil), d[""]...)
	if account != "" {
		out = append(out, d[account]...)
	}
	return out
}

// Acquire returns the active version of module name, pinned until release
// is called, or nil when no version is active.
func (r *Registry) Acquire(name string) (*wasm.Module, func()) {
	for {
		m := (*r.active.Load())[name]
		if m == nil {
			return nil, func() {}
		}
		m.Retain()
		// If a swap happened between the load and the retain, the module may
		// already be retired: let go and take the new one.
		if (*r.active.Load())[name] == m {
			return m, m.ReleaseFunc()
		}
		m.Release()
	}
}

func key(name, version string) []byte { return []byte(name + "@" + version) }

// Sentinels of the typed errors below; callers check them with errors.Is.
var (
	// ErrExists: a version is immutable once published (rollback and the
	// running gateway rely on it); publish a new version instead.
	ErrExists = errors.New("module version already published")
	// ErrNotPublished: the store has no such name@version.
	ErrNotPublished = errors.New("module version not published")
)

// statusError is an *apierr.Error (so the server answers with its status)
// that is also one of the sentinels above.
type statusError struct {
	api      *apierr.Error
	sentinel error
}

func (e *statusError) Error() string   { return e.api.Message }
func (e *statusError) Unwrap() []error { return []error{e.sentinel, e.api} }

// errExists names the module as its publisher knows it: scopedName without
// the account id.
func errExists(scopedName, version string) error {
	where := "the gateway-wide scope"
	if strings.Contains(scopedName, "/") {
		where = "this account's scope"
	}
	name := publicName(scopedName)
	return &statusError{sentinel: ErrExists, api: apierr.New(http.StatusConflict,
		"module %s@%s is already published in %s; a published version cannot be replaced, publish it under a new version", name, version, where)}
}

func errNotPublished(name, version string) error {
	return &statusError{sentinel: ErrNotPublished, api: apierr.New(http.StatusNotFound, "module %s@%s is not published", name, version)}
}

// Publish stores a gateway-wide version after proving it loads. It does
// not activate it.
func (r *Registry) Publish(ctx context.Context, manifestJSON, bin []byte, source string) (*manifest.Manifest, error) {
	return r.PublishScoped(ctx, "", manifestJSON, bin, source)
}

// PublishScoped is Publish into a scope (an account id, or "" for the
// gateway). The module is stored as Scoped(scope, manifest name). A
// name@version already stored is refused with ErrExists (409).
func (r *Registry) PublishScoped(ctx context.Context, scope string, manifestJSON, bin []byte, source string) (*manifest.Manifest, error) {
	m, mod, err := r.publish(ctx, scope, manifestJSON, bin, source)
	if err != nil {
		return nil, err
	}
	if r.prewarm != nil {
		// A shared store: kept compiled for an activation that follows.
		r.keepWarm(Scoped(scope, m.Name)+"@"+m.Version, mod)
	} else {
		_ = mod.Close(ctx)
	}
	return m, nil
}

// PublishAndActivate publishes like PublishScoped and activates the version,
// loading the module once for both.
func (r *Registry) PublishAndActivate(ctx context.Context, scope string, manifestJSON, bin []byte, source string) (*manifest.Manifest, error) {
	m, mod, err := r.publish(ctx, scope, manifestJSON, bin, source)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return m, r.commit(ctx, Scoped(scope, m.Name), m.Version, mod)
}

// publish loads the module (proving it loads), runs the guest check on it
// (proving its hooks answer: checkGuest) and stores it, returning the
// loaded module.
func (r *Registry) publish(ctx context.Context, scope string, manifestJSON, bin []byte, source string) (*manifest.Manifest, *wasm.Module, error) {
	m, err := manifest.Parse(manifestJSON)
	if err != nil {
		return nil, nil, err
	}
	name := Scoped(scope, m.Name)
	// Checked before the (slow) load as well as in the write below, which
	// is what makes the refusal race-free.
	if r.stored(name, m.Version).SHA256 != "" {
		return nil, nil, errExists(name, m.Version)
	}
	// The quota too, before the load; the write checks it again.
	if err := r.db.View(func(tx store.Tx) error { return r.checkQuota(tx, name, len(bin)) }); err != nil {
		return nil, nil, err
	}
	if r.db.Shared() {
		return r.publishShared(ctx, name, m, manifestJSON, bin, source)
	}
	mod, err := r.load(ctx, name, m, bin)
	if err != nil {
		return nil, nil, err
	}
	if err := checkGuest(ctx, m, manifestJSON, mod); err != nil {
		_ = mod.Close(ctx)
		return nil, nil, err
	}
	if err := r.store(name, m.Version, manifestJSON, bin, source, false); err != nil {
		_ = mod.Close(ctx)
		return nil, nil, err
	}
	return m, mod, nil
}

// publishShared is publish on a shared store: the version is validated
// (cheaply: decoded and checked, not compiled), stored and announced
// first, so the other gateways compile it while this one does (follow.go,
// warmUp), then loaded here. A version that validates but does not load
// (its start function traps, say) is deleted again; until then the others
// may have compiled it for nothing, and it was listed but never active.
func (r *Registry) publishShared(ctx context.Context, name string, m *manifest.Manifest, manifestJSON, bin []byte, source string) (*manifest.Manifest, *wasm.Module, error) {
	if err := r.engine.Validate(ctx, m, bin); err != nil {
		return nil, nil, err
	}
	id := name + "@" + m.Version
	if err := r.db.Update(func(tx store.Tx) error {
		if err := r.checkQuota(tx, name, len(bin)); err != nil {
			return err
		}
		if err := storeTx(tx, name, m.Version, manifestJSON, bin, sha256.Sum256(bin), source, false, time.Now().UTC()); err != nil {
			return err
		}
		return tx.Notify(topicPublished, r.self+" "+id)
	}); err != nil {
		return nil, nil, err
	}
	mod, err := r.load(ctx, name, m, bin)
	if err == nil {
		if err = checkGuest(ctx, m, manifestJSON, mod); err != nil {
			_ = mod.Close(ctx)
		}
	}
	if err != nil {
		if derr := r.db.Update(func(tx store.Tx) error {
			k := key(name, m.Version)
			if err := tx.Bucket(bucketBinaries).Delete(k); err != nil {
				return err
			}
			return tx.Bucket(bucketManifests).Delete(k)
		}); derr != nil {
			r.log.Error("modules: removing a published version that does not load", "module", id, "err", derr)
		}
		return nil, nil, err
	}
	return m, mod, nil
}

// load loads a module stored as name: an account's module (Scoped with an
// account) as a tenant's, under the operator's ceilings and on fresh
// memory per call; the gateway's as trusted.
func (r *Registry) load(ctx context.Context, name string, m *manifest.Manifest, bin []byte) (*wasm.Module, error) {
	r.loads.Add(1)
	if i := strings.LastIndexByte(name, '/'); i > 0 {
		// bin nil: a stored version, compiled on its first call. Either
		// way an idle one gives its compiled code back and reads its
		// binary again from the store (wasm.LoadTenantStored).
		return r.engine.LoadTenantStored(ctx, name[:i], m, bin, r.binary(name, m.Version))
	}
	return r.engine.Load(ctx, m, bin)
}

// store writes a version. Only seeding may replace one (a rebuild of the
// same version from the build directory).
func (r *Registry) store(name, version string, manifestJSON, bin []byte, source string, replace bool) error {
	return r.db.Update(func(tx store.Tx) error {
		if !replace {
			if err := r.checkQuota(tx, name, len(bin)); err != nil {
				return err
			}
		}
		return storeTx(tx, name, version, manifestJSON, bin, sha256.Sum256(bin), source, replace, time.Now().UTC())
	})
}

func storeTx(tx store.Tx, name, version string, manifestJSON, bin []byte, sum [sha256.Size]byte, source string, replace bool, now time.Time) error {
	rec, _ := json.Marshal(Record{Manifest: manifestJSON, SHA256: hex.EncodeToString(sum[:]), Size: len(bin), Published: now, Source: source})
	k := key(name, version)
	if !replace && tx.Bucket(bucketManifests).Get(k) != nil {
		return errExists(name, version)
	}
	if err := tx.Bucket(bucketBinaries).Put(k, bin); err != nil {
		return err
	}
	return tx.Bucket(bucketManifests).Put(k, rec)
}

// Activate makes version the active one for name. An unknown version is
// ErrNotPublished (404).
func (r *Registry) Activate(ctx context.Context, name, version string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	mod, err := r.warmOrLoad(ctx, name, version)
	if err != nil {
		return err
	}
	return r.commit(ctx, name, version, mod)
}

// readAndLoad loads the stored version name@version.
func (r *Registry) readAndLoad(ctx context.Context, name, version string) (*wasm.Module, error) {
	m, bin, err := r.read(name, version)
	if err != nil {
		return nil, err
	}
	return r.load(ctx, name, m, bin)
}

// read returns a stored version's manifest and binary.
func (r *Registry) read(name, version string) (*manifest.Manifest, []byte, error) {
	var rec Record
	var bin []byte
	err := r.db.View(func(tx store.Tx) error {
		k := key(name, version)
		v := tx.Bucket(bucketManifests).Get(k)
		if v == nil {
			return errNotPublished(name, version)
		}
		bin = append([]byte(nil), tx.Bucket(bucketBinaries).Get(k)...)
		return json.Unmarshal(v, &rec)
	})
	if err != nil {
		return nil, nil, err
	}
	m, err := manifest.Parse(rec.Manifest)
	return m, bin, err
}

// readManifest returns a stored version's manifest and its binary's size,
// without reading the binary.
func (r *Registry) readManifest(name, version string) (*manifest.Manifest, int, error) {
	var rec Record
	err := r.db.View(func(tx store.Tx) error {
		v := tx.Bucket(bucketManifests).Get(key(name, version))
		if v == nil {
			return errNotPublished(name, version)
		}
		return json.Unmarshal(v, &rec)
	})
	if err != nil {
		return nil, 0, err
	}
	m, err := manifest.Parse(rec.Manifest)
	return m, rec.Size, err
}

// commit records version as active and swaps the loaded mod in. The caller
// holds r.mu; mod is closed when the record cannot be written.
func (r *Registry) commit(ctx context.Context, name, version string, mod *wasm.Module) error {
	name = strings.Clone(name) // kept as a map key; callers' strings may alias reused buffers
	if err := r.db.Update(func(tx store.Tx) error {
		if err := tx.Notify(topicActive, name); err != nil {
			return err
		}
		return tx.Bucket(bucketActive).Put([]byte(name), []byte(version))
	}); err != nil {
		_ = mod.Close(ctx)
		return err
	}
	r.swap(name, mod)
	r.log.Info("module activated", "module", mod.ID)
	return nil
}

func (r *Registry) swap(name string, mod *wasm.Module) {
	cur := *r.active.Load()
	next := make(map[string]*wasm.Module, len(cur)+1)
	for k, v := range cur {
		next[k] = v
	}
	old := cur[name]
	next[name] = mod
	r.active.Store(&next)
	if old != nil {
		old.Retire()
	}
}

// ActiveVersion returns the stored active version of name.
func (r *Registry) ActiveVersion(name string) string {
	var v string
	_ = r.db.View(func(tx store.Tx) error {
		v = string(tx.Bucket(bucketActive).Get([]byte(name)))
		return nil
	})
	return v
}

// Start brings the gateway's modules up: it loads every stored active
// version and seeds the built modules in seedDir (see Seed), compiling each
// module once and several at a time (up to GOMAXPROCS). A stored version
// that no longer loads is logged and skipped, so the gateway serves what it
// can; a seeded module that does not load is an error.
func (r *Registry) Start(ctx context.Context, seedDir string) error {
	_, err := r.start(ctx, true, seedDir)
	return err
}

// LoadActive loads every stored active version (Start without seeding). It
// returns the failures it logged and skipped.
func (r *Registry) LoadActive(ctx context.Context) error {
	skipped, err := r.start(ctx, true, "")
	return errors.Join(skipped, err)
}

// Seed publishes the built modules in dir (<name>.wasm beside <name>.json)
// that the store does not have yet, or whose binary or manifest changed (a
// rebuild of the same version), and activates a seeded version when no
// version of that module is active or the active one is the version seeded.
// Start does this and loads the stored active versions in one pass.
func (r *Registry) Seed(ctx context.Context, dir string) error {
	_, err := r.start(ctx, false, dir)
	return err
}

// startJob is one module to load at start.
type startJob struct {
	name, version string
	m             *manifest.Manifest
	bin, mj       []byte            // a seed's; a stored version's binary is read on first call
	size          int               // of the binary, to load the largest first
	sum           [sha256.Size]byte // of bin, for a seed (hashed once, in parallel)
	seeded        bool              // from the seed directory: a failure is fatal
	changed       bool              // seeded and new or rebuilt: store it
	activate      bool

	mod *wasm.Module
	err error
}

// start returns the stored versions it skipped (logged) and what makes the
// start fail.
func (r *Registry) start(ctx context.Context, stored bool, seedDir string) (skipped, fatal error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	jobs := map[string]*startJob{} // by name: at most one version of a module is loaded for activation
	if stored {
		skipped = r.activeJobs(jobs)
	}
	var extra []*startJob // seeded versions loaded only to prove they load
	if seedDir != "" {
		var err error
		if extra, err = r.seedJobs(seedDir, jobs); err != nil {
			return skipped, err
		}
	}
	all := extra
	for _, j := range jobs {
		all = append(all, j)
	}
	r.loadAll(ctx, all)

	if skipped, fatal = r.loadFailures(all, skipped); fatal != nil {
		closeJobs(ctx, all)
		return skipped, fatal
	}
	if err := r.storeSeeds(all); err != nil {
		closeJobs(ctx, all)
		return skipped, err
	}
	act := r.toActivate(ctx, all)
	if err := r.activateJobs(act); err != nil {
		closeJobs(ctx, all)
		return skipped, err
	}
	for _, j := range act {
		r.swap(strings.Clone(j.name), j.mod)
		r.log.Info("module activated", "module", j.mod.ID)
	}
	return skipped, nil
}

// activeJobs adds to jobs the stored active version of every module, and
// returns the ones it could not read (logged and skipped).
func (r *Registry) activeJobs(jobs map[string]*startJob) (skipped error) {
	act := map[string]string{}
	_ = r.db.View(func(tx store.Tx) error {
		return tx.Bucket(bucketActive).ForEach(func(k, v []byte) error {
			act[string(k)] = string(v)
			return nil
		})
	})
	for name, version := range act {
		// Only the manifest: every stored module is loaded lazily (its
		// binary read on its first call), and a seed supersedes most of
		// them — reading tens of MiB of binaries here made a start on
		// the cluster store take seconds.
		j := &startJob{name: name, version: version, activate: true}
		if j.m, j.size, j.err = r.readManifest(name, version); j.err != nil {
			r.log.Error("active module does not load", "module", name+"@"+version, "err", j.err)
			skipped = errors.Join(skipped, j.err)
			continue
		}
		jobs[name] = j
	}
	return skipped
}

// seedJobs reads the built modules in seedDir: one to activate (no version
// of it is active, or the active one is the version seeded) replaces the
// module's job in jobs; another is returned when it is new or rebuilt, to
// be loaded only to prove it loads.
func (r *Registry) seedJobs(seedDir string, jobs map[string]*startJob) (extra []*startJob, err error) {
	seeds, err := r.seeds(seedDir)
	if err != nil {
		return nil, err
	}
	vouchStamp(seedDir) // the build validated them (StampSeeds)
	for _, j := range seeds {
		if cur := r.ActiveVersion(j.name); cur == "" || cur == j.version {
			j.activate = true
			jobs[j.name] = j // the seed supersedes the stored copy of the same version
		} else if j.changed {
			extra = append(extra, j)
		}
	}
	return extra, nil
}

// loadFailures sorts the jobs that did not load: a seed's failure is fatal,
// a stored version's is logged and added to skipped.
func (r *Registry) loadFailures(all []*startJob, skipped error) (_, fatal error) {
	for _, j := range all {
		switch {
		case j.err != nil && j.seeded:
			fatal = errors.Join(fatal, fmt.Errorf("modules: seeding %s@%s: %w", j.name, j.version, j.err))
		case j.err != nil:
			r.log.Error("active module does not load", "module", j.name+"@"+j.version, "err", j.err)
			skipped = errors.Join(skipped, j.err)
		}
	}
	return skipped, fatal
}

// closeJobs closes the loaded modules not handed to the registry.
func closeJobs(ctx context.Context, all []*startJob) {
	for _, j := range all {
		if j.mod != nil {
			_ = j.mod.Close(ctx)
		}
	}
}

// storeSeeds stores the new and rebuilt seeds that loaded, in
// transactions of at most seedBatchBytes of binaries: few commits (each
// waits on the disk, and a fresh start stores some 65 MB), and none that
// holds the cluster store's write lock for long — in one transaction, a
// loaded PostgreSQL took more than the store's 10 s timeout, and the
// gateway did not start. A start cut short stores the rest the next time
// (a seed is stored when it is new or changed). On bbolt (one process,
// no lock to hold up others) they are stored in one transaction: bbolt
// rewrites a leaf with every value in it, and each later transaction
// that rewrote a leaf of binaries read the earlier ones back through its
// mapping — a fresh start ended with nearly all 65 MB of them resident.
func (r *Registry) storeSeeds(all []*startJob) error {
	now := time.Now().UTC()
	var batch []*startJob
	size := 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := r.db.Update(func(tx store.Tx) error {
			for _, j := range batch {
				if err := storeTx(tx, j.name, j.version, j.mj, j.bin, j.sum, "seed", true, now); err != nil {
					return err
				}
			}
			return nil
		})
		batch, size = batch[:0], 0
		return err
	}
	for _, j := range all {
		if j.err != nil || !j.changed {
			continue
		}
		if r.db.Shared() && size > 0 && size+len(j.bin) > seedBatchBytes {
			if err := flush(); err != nil {
				return err
			}
		}
		batch, size = append(batch, j), size+len(j.bin)
	}
	return flush()
}

// seedBatchBytes bounds the binaries one seeding transaction writes.
const seedBatchBytes = 16 << 20

// toActivate returns the loaded jobs to activate, and closes the modules
// of the others (seeds loaded only to prove they load).
func (r *Registry) toActivate(ctx context.Context, all []*startJob) []*startJob {
	var act []*startJob
	for _, j := range all {
		switch {
		case j.err != nil:
			continue
		case j.changed:
			r.log.Info("module seeded", "module", j.name+"@"+j.version)
		}
		if j.activate {
			act = append(act, j)
		} else {
			_ = j.mod.Close(ctx)
		}
	}
	return act
}

// activateJobs records the jobs' versions as active, in one transaction,
// and tells the other instances.
func (r *Registry) activateJobs(act []*startJob) error {
	return r.db.Update(func(tx store.Tx) error {
		for _, j := range act {
			if err := tx.Bucket(bucketActive).Put([]byte(j.name), []byte(j.version)); err != nil {
				return err
			}
			if err := tx.Notify(topicActive, j.name); err != nil {
				return err
			}
		}
		return nil
	})
}

// seeds reads the built modules in dir.
func (r *Registry) seeds(dir string) ([]*startJob, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("modules: seed from %s: %w (run `make build`)", dir, err)
	}
	var names []string
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".json"); ok {
			names = append(names, name)
		}
	}
	// Reading and hashing tens of MiB of binaries is most of a fresh
	// start after validation: done on every CPU, in the directory's order.
	out := make([]*startJob, len(names))
	errs := make([]error, len(names))
	sem := make(chan struct{}, goruntime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			out[i], errs[i] = r.seed(dir, name)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// seed reads the built module name (name.json and name.wasm in dir) and
// compares it with the stored version of the same name and version.
func (r *Registry) seed(dir, name string) (*startJob, error) {
	mj, err := os.ReadFile(filepath.Join(dir, name+".json"))
	if err != nil {
		return nil, err
	}
	bin, err := os.ReadFile(filepath.Join(dir, name+".wasm"))
	if err != nil {
		return nil, fmt.Errorf("modules: %s has a manifest but no binary: %w", name, err)
	}
	m, err := manifest.Parse(mj)
	if err != nil {
		return nil, fmt.Errorf("modules: %s.json: %w", name, err)
	}
	sum := sha256.Sum256(bin)
	rec := r.stored(m.Name, m.Version)
	return &startJob{
		name: m.Name, version: m.Version, m: m, bin: bin, mj: mj, size: len(bin), sum: sum, seeded: true,
		changed: rec.SHA256 != hex.EncodeToString(sum[:]) || !sameJSON(rec.Manifest, mj),
	}, nil
}

// loadAll loads the jobs' modules, up to GOMAXPROCS at a time. The
// gateway's are loaded lazily (wasm.Engine.LoadLazy: compiled on first
// call, so a gateway keeps in memory only the code of the modules it
// uses); a new or rebuilt seed is validated first unless the build's
// record vouches for it (stamp.go), so a broken build still stops the
// start. A tenant's module is lazy too, and parks when idle.
func (r *Registry) loadAll(ctx context.Context, jobs []*startJob) {
	ctx = wasm.WithCompilationWorkers(ctx, 1)
	// Largest first: the start waits for the last job, and a big module
	// started last would run alone on one CPU.
	slices.SortStableFunc(jobs, func(a, b *startJob) int { return b.size - a.size })
	sem := make(chan struct{}, goruntime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			switch {
			case strings.Contains(j.name, "/"):
				// A tenant's, proven to load when it was published:
				// compiled on its first call, so a restart does not
				// compile (and keep) every module accounts ever activated.
				j.mod, j.err = r.load(ctx, j.name, j.m, nil)
			case j.changed:
				// A new or rebuilt seed: validated now (a broken build stops
				// the start) unless the build's record vouches for it,
				// compiled on its first call.
				if j.err = r.engine.ValidateSum(ctx, j.m, j.bin, j.sum); j.err == nil {
					j.mod, j.err = r.engine.LoadLazyFrom(j.m, nil, r.binary(j.name, j.version))
				}
			default:
				// Proven to load when it was stored.
				j.mod, j.err = r.engine.LoadLazyFrom(j.m, nil, r.binary(j.name, j.version))
			}
		}()
	}
	wg.Wait()
}

// binary reads a stored binary when a lazily loaded module is first called
// (start stores a new seed before it activates it), so the binaries of
// modules nobody calls stay on disk.
func (r *Registry) binary(name, version string) func() ([]byte, error) {
	return func() ([]byte, error) {
		var bin []byte
		err := r.db.View(func(tx store.Tx) error {
			v := tx.Bucket(bucketBinaries).Get(key(name, version))
			if v == nil {
				return errNotPublished(name, version)
			}
			bin = append([]byte(nil), v...)
			return nil
		})
		return bin, err
	}
}

// sameJSON compares two JSON documents ignoring insignificant white space
// (stored manifests are compacted).
func sameJSON(a, b []byte) bool {
	var ca, cb bytes.Buffer
	return json.Compact(&ca, a) == nil && json.Compact(&cb, b) == nil && bytes.Equal(ca.Bytes(), cb.Bytes())
}

// stored is the record of a published version (zero when there is none).
func (r *Registry) stored(name, version string) Record {
	var rec Record
	_ = r.db.View(func(tx store.Tx) error {
		if v := tx.Bucket(bucketManifests).Get(key(name, version)); v != nil {
			return json.Unmarshal(v, &rec)
		}
		return nil
	})
	return rec
}

// List returns the stored versions visible from scope: the gateway's and,
// for an account, its own (all of them for the empty scope).
func (r *Registry) List(scope string) []Info {
	prefix := scope + "/"
	if scope == "" {
		prefix = ""
	}
	var out []Info
	_ = r.db.View(func(tx store.Tx) error {
		act := tx.Bucket(bucketActive)
		return tx.Bucket(bucketManifests).ForEach(func(k, v []byte) error {
			var rec Record
			if json.Unmarshal(v, &rec) != nil {
				return nil
			}
			name, version, _ := strings.Cut(string(k), "@")
			if strings.Contains(name, "/") && !strings.HasPrefix(name, prefix) {
				return nil // another account's module
			}
			out = append(out, Info{
				Name: name, Version: version, SHA256: rec.SHA256, Source: rec.Source,
				Published: rec.Published, Active: string(act.Get([]byte(name))) == version,
			})
			return nil
		})
	})
	sort.Slice(out, func(i, j int) bool {
		return string(key(out[i].Name, out[i].Version)) < string(key(out[j].Name, out[j].Version))
	})
	return out
}

// Close stops following other gateways and retires every active module.
func (r *Registry) Close() {
	r.closeOnce.Do(func() {
		close(r.stop)
		for _, u := range r.unsub {
			u()
		}
	})
	r.followWG.Wait()
	empty := map[string]*wasm.Module{}
	old := r.active.Swap(&empty)
	for _, m := range *old {
		m.Retire()
	}
}

// ErrNoEarlier is returned by Rollback when there is nothing to go back to.
var ErrNoEarlier = errors.New("no earlier version to roll back to")

// Rollback activates the version of scopedName published before the active
// one, and returns it.
func (r *Registry) Rollback(ctx context.Context, scopedName string) (string, error) {
	scope := ""
	if i := strings.LastIndexByte(scopedName, '/'); i >= 0 {
		scope = scopedName[:i]
	}
	var versions []Info
	for _, m := range r.List(scope) {
		if m.Name == scopedName {
			versions = append(versions, m)
		}
	}
	sort.Slice(versions, func(i, j int) bool { return versions[i].Published.Before(versions[j].Published) })
	for i, v := range versions {
		if v.Active {
			if i == 0 {
				break
			}
			prev := versions[i-1].Version
			return prev, r.Activate(ctx, scopedName, prev)
		}
	}
	return "", fmt.Errorf("module %s: %w", scopedName, ErrNoEarlier)
}

// Logs returns the last lines module name of scope (an account id, or ""
// for the gateway's) logged through the log host function on this
// gateway, oldest first (wasm.ModuleLogs: bounded, in memory).
func (r *Registry) Logs(scope, name string) []wasm.LogLine {
	return r.engine.ModuleLogs().Lines(scope, name)
}
