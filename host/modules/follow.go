package modules

import (
	"context"
	"strings"
	"time"

	"github.com/switchyard/switchyard/host/store"
	"github.com/switchyard/switchyard/host/wasm"
)

// Notification topics: a module's active version changed (payload: its
// scoped name), a default-on plugin was set or cleared.
const (
	topicActive    = "module_active"
	topicDefaults  = "module_defaults"
	topicPublished = "module_published" // payload: publisher's token, space, name@version
)

// A version published elsewhere is compiled here ahead of its activation
// (prewarm), so the activation that follows — usually the same request's,
// a compile time later — swaps in a module that is ready instead of
// starting a compile of its own: the version answers from every instance
// about when it answers from the one that published it. Bounded, because
// tenants publish: at most warmMax versions are kept compiled, each for
// warmTTL, and publications beyond warmQueue waiting are not prewarmed
// (their activation compiles, as without prewarming).
var (
	warmMax   = 2
	warmTTL   = time.Minute
	warmQueue = 4
)

// warmMod is a version being (or done being) compiled ahead of activation.
type warmMod struct {
	ready chan struct{} // closed when mod/err are set
	mod   *wasm.Module
	err   error
	at    time.Time
}

// done reports whether the compilation has ended.
func (w *warmMod) done() bool {
	select {
	case <-w.ready:
		return true
	default:
		return false
	}
}

// discard closes the module once its compilation has ended.
func (w *warmMod) discard() {
	<-w.ready
	if w.mod != nil {
		_ = w.mod.Close(context.Background())
	}
}

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
	if r.db.Shared() {
		r.prewarm = make(chan string, warmQueue)
		r.unsub = append(r.unsub, r.db.Subscribe(topicPublished, func(payload string) {
			from, id, ok := strings.Cut(payload, " ")
			if !ok || from == r.self {
				return // a Resync, or this gateway's own publication
			}
			select {
			case r.prewarm <- id:
			default: // too many waiting: their activations compile
			}
		}))
		r.followWG.Add(1)
		go r.warmLoop()
	}
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

// runs reports whether m, the module loaded under a registry name, is
// version. Its ID cannot say: an account's module is named without its
// scope there (acct/name's ID is name@version), and comparing the two
// made every activation reload every account module on every gateway.
func runs(m *wasm.Module, version string) bool {
	return m != nil && m.Manifest != nil && m.Manifest.Version == version
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
		if runs((*r.active.Load())[name], version) {
			continue
		}
		r.converge1(name)
	}
	for name := range *r.active.Load() {
		if _, ok := want[name]; !ok {
			r.forget(name)
		}
	}
}

// converge1 loads and swaps in the version of name the store has active,
// unless this gateway runs it already.
func (r *Registry) converge1(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// The version is read again under r.mu, not taken from converge's
	// snapshot: an activation here may have committed a newer one and
	// swapped it in since, and loading the older would roll it back until
	// the next notification (a test's requests right after its publish ran
	// the previous version on PostgreSQL). Activations hold r.mu while
	// they write the store, so what the store says now is the latest.
	var version string
	if err := r.db.View(func(tx store.Tx) error {
		version = string(tx.Bucket(bucketActive).Get([]byte(name)))
		return nil
	}); err != nil || version == "" {
		return // a read that failed, or a module removed: the next converge
	}
	id := name + "@" + version
	if runs((*r.active.Load())[name], version) || r.unloadable[id] {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	mod, err := r.warmOrLoad(ctx, name, version)
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

// warmLoop compiles the versions other gateways publish, one at a time,
// and closes the ones nobody activated within warmTTL.
func (r *Registry) warmLoop() {
	defer r.followWG.Done()
	t := time.NewTicker(warmTTL / 2)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			r.warmMu.Lock()
			for id, w := range r.warm {
				w.discard() // compiled by this goroutine: done
				delete(r.warm, id)
			}
			r.warmMu.Unlock()
			return
		case <-t.C:
			r.expireWarm(time.Now())
		case id := <-r.prewarm:
			r.warmUp(id)
		}
	}
}

// warmUp compiles id unless it is active here already or being warmed.
func (r *Registry) warmUp(id string) {
	i := strings.LastIndexByte(id, '@')
	if i <= 0 {
		return
	}
	name, version := id[:i], id[i+1:]
	if runs((*r.active.Load())[name], version) {
		return
	}
	w := &warmMod{ready: make(chan struct{}), at: time.Now()}
	if !r.addWarm(id, w) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	go func() {
		select {
		case <-r.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	w.mod, w.err = r.readAndLoad(ctx, name, version)
	close(w.ready)
	if w.err != nil {
		r.log.Warn("modules: compiling a version published by another gateway", "module", id, "err", w.err)
	}
}

// keepWarm keeps mod, compiled for a publication here, for its activation.
func (r *Registry) keepWarm(id string, mod *wasm.Module) {
	w := &warmMod{ready: make(chan struct{}), mod: mod, at: time.Now()}
	close(w.ready)
	if !r.addWarm(id, w) {
		// Cannot happen (a version is published once); keep the first.
		w.discard()
	}
}

// addWarm records w for id, making room by evicting the oldest finished
// entries, unless id has one already (then it reports false).
func (r *Registry) addWarm(id string, w *warmMod) bool {
	r.warmMu.Lock()
	defer r.warmMu.Unlock()
	if _, ok := r.warm[id]; ok {
		return false
	}
	if r.warm == nil {
		r.warm = map[string]*warmMod{}
	}
	for len(r.warm) >= warmMax && r.evictOldestWarm() {
	}
	r.warm[id] = w
	return true
}

// evictOldestWarm closes the oldest finished entry (warmMu held) and
// reports whether there was one: an entry still compiling (there is at
// most one, warmLoop's) is not evicted.
func (r *Registry) evictOldestWarm() bool {
	var oldest string
	for id, w := range r.warm {
		if w.done() && (oldest == "" || w.at.Before(r.warm[oldest].at)) {
			oldest = id
		}
	}
	if oldest == "" {
		return false
	}
	r.warm[oldest].discard()
	delete(r.warm, oldest)
	return true
}

func (r *Registry) expireWarm(now time.Time) {
	r.warmMu.Lock()
	defer r.warmMu.Unlock()
	for id, w := range r.warm {
		if w.done() && now.Sub(w.at) > warmTTL {
			w.discard()
			delete(r.warm, id)
		}
	}
}

// takeWarm returns the module compiled ahead for id, waiting for a compile
// in progress; nil, nil when there is none (or it failed: the caller loads
// it again and reports that failure).
func (r *Registry) takeWarm(ctx context.Context, id string) (*wasm.Module, error) {
	r.warmMu.Lock()
	w, ok := r.warm[id]
	if ok {
		delete(r.warm, id)
	}
	r.warmMu.Unlock()
	if !ok {
		return nil, nil
	}
	select {
	case <-w.ready:
	case <-ctx.Done():
		// Not ours any more: close it when it is done.
		go w.discard()
		return nil, ctx.Err()
	}
	return w.mod, nil
}

// warmOrLoad is the module of name@version for an activation: the one
// compiled ahead if there is one (waiting for it), else read and loaded now.
func (r *Registry) warmOrLoad(ctx context.Context, name, version string) (*wasm.Module, error) {
	mod, err := r.takeWarm(ctx, name+"@"+version)
	if mod != nil || err != nil {
		return mod, err
	}
	return r.readAndLoad(ctx, name, version)
}
