package modules

import (
	"context"
	"time"

	"github.com/switchyard/switchyard/host/store"
	"github.com/switchyard/switchyard/host/wasm"
)

// Notification topics: a module's active version changed (payload: its
// scoped name), a default-on plugin was set or cleared.
const (
	topicActive   = "module_active"
	topicDefaults = "module_defaults"
)

// RecheckInterval is how often a gateway on a shared store compares the
// stored active versions with what it runs, in case a notification was
// missed.
var RecheckInterval = 5 * time.Second

// follow makes this gateway run what the store says is active when another
// gateway activates, rolls back or seeds a module (a shared store), so a
// version activated on one instance answers from all within about a second
// (the time to compile it). Notifications only wake the follower: it
// compares the stored active versions with the loaded ones, so a burst of
// them, a missed one or a resync all end in the same state. On a single
// gateway the notifications are its own, and the follower finds nothing to
// do.
func (r *Registry) follow() {
	r.wake = make(chan struct{}, 1)
	poke := func(string) {
		select {
		case r.wake <- struct{}{}:
		default:
		}
	}
	r.unsub = append(r.unsub,
		r.db.Subscribe(topicActive, poke),
		r.db.Subscribe(topicDefaults, func(string) { r.loadDefaults() }))
	r.followWG.Add(1)
	go func() {
		defer r.followWG.Done()
		var tick <-chan time.Time
		if r.db.Shared() {
			t := time.NewTicker(RecheckInterval)
			defer t.Stop()
			tick = t.C
		}
		for {
			select {
			case <-r.stop:
				return
			case <-r.wake:
			case <-tick:
				r.loadDefaults()
			}
			r.converge()
		}
	}()
}

// converge loads the stored active version of every module whose loaded
// version differs.
func (r *Registry) converge() {
	want := map[string]string{}
	if err := r.db.View(func(tx store.Tx) error {
		return tx.Bucket(bucketActive).ForEach(func(k, v []byte) error {
			want[string(k)] = string(v)
			return nil
		})
	}); err != nil {
		r.log.Warn("modules: reading the active versions", "err", err)
		return
	}
	for name, version := range want {
		select {
		case <-r.stop:
			return
		default:
		}
		if m := (*r.active.Load())[name]; m != nil && m.ID == name+"@"+version {
			continue
		}
		r.converge1(name, version)
	}
}

// converge1 loads and swaps in name@version unless an activation here got
// there first.
func (r *Registry) converge1(name, version string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id := name + "@" + version
	if m := (*r.active.Load())[name]; (m != nil && m.ID == id) || r.unloadable[id] {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m, bin, err := r.read(name, version)
	var mod *wasm.Module
	if err == nil {
		mod, err = r.load(ctx, name, m, bin)
	}
	if err != nil {
		// Logged once: the version stays what the store says is active,
		// and this gateway keeps the one it runs until another activation.
		r.log.Error("modules: cannot run the version another gateway activated", "module", id, "err", err)
		if r.unloadable == nil {
			r.unloadable = map[string]bool{}
		}
		r.unloadable[id] = true
		return
	}
	r.swap(name, mod)
	r.log.Info("module activated by another gateway", "module", mod.ID)
}
