package modules

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/store"
	"github.com/switchyard/switchyard/host/wasm"
)

// ErrActiveVersion: the version asked to be deleted is the active one;
// activate another first, or delete the whole module.
var ErrActiveVersion = errors.New("module version is active")

// DeleteVersion removes a stored version that is not active: its binary
// and manifest leave the store (bbolt or PostgreSQL), so the space counts
// no more against the account's quota. The active version is refused
// (ErrActiveVersion, 409): requests run it.
func (r *Registry) DeleteVersion(scopedName, version string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	err := r.db.Update(func(tx store.Tx) error {
		k := key(scopedName, version)
		if tx.Bucket(bucketManifests).Get(k) == nil {
			return errNotPublished(publicName(scopedName), version)
		}
		if string(tx.Bucket(bucketActive).Get([]byte(scopedName))) == version {
			return &statusError{sentinel: ErrActiveVersion, api: apierr.New(http.StatusConflict,
				"module %s@%s is the active version: activate another version first, or delete the module (DELETE /modules/%s)",
				publicName(scopedName), version, publicName(scopedName))}
		}
		if err := tx.Bucket(bucketBinaries).Delete(k); err != nil {
			return err
		}
		return tx.Bucket(bucketManifests).Delete(k)
	})
	if err == nil {
		r.dropWarm(scopedName + "@" + version)
	}
	return err
}

// DeleteModule removes every stored version of scopedName, its active
// record and its default-on flag, and stops running it here (requests in
// flight finish on the version they hold) and, through the store's
// notification, on every gateway sharing the store. It returns how many
// versions were removed; none stored is ErrNotPublished (404).
func (r *Registry) DeleteModule(ctx context.Context, scopedName string) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var versions []string
	err := r.db.Update(func(tx store.Tx) error {
		versions = versions[:0]
		if err := tx.Bucket(bucketManifests).ForEach(func(k, _ []byte) error {
			if name, version, _ := strings.Cut(string(k), "@"); name == scopedName {
				versions = append(versions, version)
			}
			return nil
		}); err != nil {
			return err
		}
		if len(versions) == 0 {
			return &statusError{sentinel: ErrNotPublished, api: apierr.New(http.StatusNotFound,
				"module %s is not published in this scope", publicName(scopedName))}
		}
		for _, v := range versions {
			k := key(scopedName, v)
			if err := tx.Bucket(bucketBinaries).Delete(k); err != nil {
				return err
			}
			if err := tx.Bucket(bucketManifests).Delete(k); err != nil {
				return err
			}
		}
		if err := tx.Bucket(bucketDefaults).Delete([]byte(scopedName)); err != nil {
			return err
		}
		if err := tx.Notify(topicDefaults, scopedName); err != nil {
			return err
		}
		if err := tx.Notify(topicActive, scopedName); err != nil {
			return err
		}
		return tx.Bucket(bucketActive).Delete([]byte(scopedName))
	})
	if err != nil {
		return 0, err
	}
	for _, v := range versions {
		r.dropWarm(scopedName + "@" + v)
	}
	r.unswap(scopedName)
	r.loadDefaults()
	r.log.Info("module deleted", "module", scopedName, "versions", len(versions))
	return len(versions), nil
}

// unswap stops running name: it leaves the active set and is retired
// (closed once the requests holding it finish). The caller holds r.mu.
func (r *Registry) unswap(name string) {
	cur := *r.active.Load()
	old, ok := cur[name]
	if !ok {
		return
	}
	next := make(map[string]*wasm.Module, len(cur))
	for k, v := range cur {
		if k != name {
			next[k] = v
		}
	}
	r.active.Store(&next)
	old.Retire()
}

// publicName is scopedName as its publisher knows it: without the
// account id.
func publicName(scopedName string) string {
	if i := strings.LastIndexByte(scopedName, '/'); i >= 0 {
		return scopedName[i+1:]
	}
	return scopedName
}

// Quota bounds what one account may keep in its scope; zero fields are
// unlimited. The gateway's own scope has none.
type Quota struct {
	Modules           int   // distinct module names
	VersionsPerModule int   // versions kept of one module
	Bytes             int64 // binaries, all versions of all modules
}

// SetQuota installs the accounts' quota. Call it before serving.
func (r *Registry) SetQuota(q Quota) { r.quota = q }

// ErrQuota: a publication would take an account past its quota.
var ErrQuota = errors.New("module quota exceeded")

// checkQuota refuses a publication of name (scoped, a new version of
// size bytes) that would take its account past the quota. It reads the
// transaction it is given, so the check and the write are one step.
func (r *Registry) checkQuota(tx store.Tx, name string, size int) error {
	i := strings.LastIndexByte(name, '/')
	q := r.quota
	if i < 0 || q == (Quota{}) {
		return nil // the gateway's scope, or no quota
	}
	prefix := name[:i+1]
	names := map[string]bool{}
	versions, bytes := 0, int64(size)
	if err := tx.Bucket(bucketManifests).ForEach(func(k, v []byte) error {
		n, _, _ := strings.Cut(string(k), "@")
		if !strings.HasPrefix(n, prefix) {
			return nil
		}
		names[n] = true
		if n == name {
			versions++
		}
		var rec Record
		if json.Unmarshal(v, &rec) == nil {
			bytes += int64(rec.Size)
		}
		return nil
	}); err != nil {
		return err
	}
	quota := func(format string, args ...any) error {
		return &statusError{sentinel: ErrQuota, api: apierr.New(http.StatusForbidden,
			"%s; delete versions you no longer need (DELETE /modules/{name}/versions/{version}) or whole modules (DELETE /modules/{name})",
			fmt.Sprintf(format, args...))}
	}
	switch {
	case q.Modules > 0 && !names[name] && len(names) >= q.Modules:
		return quota("this account keeps %d modules, its quota", len(names))
	case q.VersionsPerModule > 0 && versions >= q.VersionsPerModule:
		return quota("this account keeps %d versions of module %s, its quota", versions, publicName(name))
	case q.Bytes > 0 && bytes > q.Bytes:
		return quota("this version would take the account's modules to %d bytes, past its quota of %d", bytes, q.Bytes)
	}
	return nil
}

// dropWarm closes the version id kept compiled for an activation that
// will not come (it was deleted).
func (r *Registry) dropWarm(id string) {
	r.warmMu.Lock()
	w, ok := r.warm[id]
	if ok {
		delete(r.warm, id)
	}
	r.warmMu.Unlock()
	if ok {
		go w.discard()
	}
}

// forget stops running name when the store no longer has it active (a
// module another gateway deleted), checked again under r.mu so an
// activation racing with it wins.
func (r *Registry) forget(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var active bool
	_ = r.db.View(func(tx store.Tx) error {
		active = tx.Bucket(bucketActive).Get([]byte(name)) != nil
		return nil
	})
	if !active {
		r.unswap(name)
		r.log.Info("module deleted by another gateway", "module", name)
	}
}
