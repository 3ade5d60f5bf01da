// Package modules is the module store: Wasm binaries and their manifests,
// versioned in bbolt, and the set of active versions the gateway runs.
// Activating a version builds and instantiates it fully before the pointer
// swaps, so a module that fails to load never replaces a working one, and
// requests in flight finish on the version they started with.
package modules

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchyard/switchyard/abi/manifest"
	"github.com/switchyard/switchyard/host/wasm"
	bolt "go.etcd.io/bbolt"
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
	db     *bolt.DB
	engine *wasm.Engine
	log    *slog.Logger

	mu       sync.Mutex // serialises activations
	active   atomic.Pointer[map[string]*wasm.Module]
	defaults atomic.Pointer[map[string][]string] // scope → default-on plugin names
}

// Open creates the buckets.
func Open(db *bolt.DB, engine *wasm.Engine, log *slog.Logger) (*Registry, error) {
	if log == nil {
		log = slog.Default()
	}
	err := db.Update(func(tx *bolt.Tx) error {
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
	r := &Registry{db: db, engine: engine, log: log}
	empty := map[string]*wasm.Module{}
	r.active.Store(&empty)
	r.loadDefaults()
	return r, nil
}

func (r *Registry) loadDefaults() {
	d := map[string][]string{}
	_ = r.db.View(func(tx *bolt.Tx) error {
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
	err := r.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketDefaults)
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
			return m, m.Release
		}
		m.Release()
	}
}

func key(name, version string) []byte { return []byte(name + "@" + version) }

// Publish stores a gateway-wide version after proving it loads. It does
// not activate it.
func (r *Registry) Publish(ctx context.Context, manifestJSON, bin []byte, source string) (*manifest.Manifest, error) {
	return r.PublishScoped(ctx, "", manifestJSON, bin, source)
}

// PublishScoped is Publish into a scope (an account id, or "" for the
// gateway). The module is stored as Scoped(scope, manifest name).
func (r *Registry) PublishScoped(ctx context.Context, scope string, manifestJSON, bin []byte, source string) (*manifest.Manifest, error) {
	m, err := manifest.Parse(manifestJSON)
	if err != nil {
		return nil, err
	}
	mod, err := r.engine.Load(ctx, m, bin)
	if err != nil {
		return nil, err
	}
	_ = mod.Close(ctx)
	sum := sha256.Sum256(bin)
	rec, _ := json.Marshal(Record{Manifest: manifestJSON, SHA256: hex.EncodeToString(sum[:]), Size: len(bin), Published: time.Now().UTC(), Source: source})
	err = r.db.Update(func(tx *bolt.Tx) error {
		k := key(Scoped(scope, m.Name), m.Version)
		if err := tx.Bucket(bucketBinaries).Put(k, bin); err != nil {
			return err
		}
		return tx.Bucket(bucketManifests).Put(k, rec)
	})
	return m, err
}

// Activate makes version the active one for name.
func (r *Registry) Activate(ctx context.Context, name, version string) error {
	name = strings.Clone(name) // kept as a map key; callers' strings may alias reused buffers
	r.mu.Lock()
	defer r.mu.Unlock()
	var rec Record
	var bin []byte
	err := r.db.View(func(tx *bolt.Tx) error {
		k := key(name, version)
		v := tx.Bucket(bucketManifests).Get(k)
		if v == nil {
			return fmt.Errorf("module %s@%s %w", name, version, ErrNotPublished)
		}
		bin = append([]byte(nil), tx.Bucket(bucketBinaries).Get(k)...)
		return json.Unmarshal(v, &rec)
	})
	if err != nil {
		return err
	}
	m, err := manifest.Parse(rec.Manifest)
	if err != nil {
		return err
	}
	mod, err := r.engine.Load(ctx, m, bin)
	if err != nil {
		return err
	}
	if err := r.db.Update(func(tx *bolt.Tx) error {
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
	_ = r.db.View(func(tx *bolt.Tx) error {
		v = string(tx.Bucket(bucketActive).Get([]byte(name)))
		return nil
	})
	return v
}

// LoadActive loads every active version, at start. A module that no longer
// loads is logged and skipped: the gateway serves what it can.
func (r *Registry) LoadActive(ctx context.Context) error {
	act := map[string]string{}
	_ = r.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketActive).ForEach(func(k, v []byte) error {
			act[string(k)] = string(v)
			return nil
		})
	})
	var errs []error
	for name, version := range act {
		if err := r.Activate(ctx, name, version); err != nil {
			r.log.Error("active module does not load", "module", name+"@"+version, "err", err)
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Seed publishes the built modules in dir (<name>.wasm beside <name>.json)
// that the store does not have yet, or whose binary or manifest changed (a
// rebuild of the same version), and activates a seeded version when no version of that
// module is active or the active one is the version just reseeded.
func (r *Registry) Seed(ctx context.Context, dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("modules: seed from %s: %w (run `make build`)", dir, err)
	}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			continue
		}
		mj, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		bin, err := os.ReadFile(filepath.Join(dir, name+".wasm"))
		if err != nil {
			return fmt.Errorf("modules: %s has a manifest but no binary: %w", name, err)
		}
		m, err := manifest.Parse(mj)
		if err != nil {
			return fmt.Errorf("modules: %s: %w", e.Name(), err)
		}
		sum := sha256.Sum256(bin)
		if rec := r.stored(m.Name, m.Version); rec.SHA256 != hex.EncodeToString(sum[:]) || !sameJSON(rec.Manifest, mj) {
			if _, err := r.Publish(ctx, mj, bin, "seed"); err != nil {
				return err
			}
			r.log.Info("module seeded", "module", m.Name+"@"+m.Version)
		}
		if cur := r.ActiveVersion(m.Name); cur == "" || cur == m.Version {
			if err := r.Activate(ctx, m.Name, m.Version); err != nil {
				return err
			}
		}
	}
	return nil
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
	_ = r.db.View(func(tx *bolt.Tx) error {
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
	_ = r.db.View(func(tx *bolt.Tx) error {
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

// Close retires every active module.
func (r *Registry) Close() {
	empty := map[string]*wasm.Module{}
	old := r.active.Swap(&empty)
	for _, m := range *old {
		m.Retire()
	}
}

// ErrNotPublished is returned by Activate when the name@version was never
// published (the management API answers 404).
var ErrNotPublished = errors.New("is not published")

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
