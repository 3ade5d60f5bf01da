package gateway

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/gofiber/fiber/v2"
	"github.com/switchyard/switchyard/host/admin"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/catalog"
	"github.com/switchyard/switchyard/host/config"
	"github.com/switchyard/switchyard/host/credentials"
	"github.com/switchyard/switchyard/host/keys"
	"github.com/switchyard/switchyard/host/wasm"
)

// Reloaded describes a configuration reload that was applied.
type Reloaded struct {
	Source    string    `json:"source"`  // the file read ("" = the embedded default)
	Trigger   string    `json:"trigger"` // "api", "SIGHUP", "file change"
	At        time.Time `json:"at"`
	Models    int       `json:"models"`
	Providers int       `json:"providers"`
	Aliases   int       `json:"aliases"`
	// RestartRequired names the changed settings a reload does not apply
	// (listen address, data directory, connection limits, timeouts …):
	// they keep their values until the gateway restarts.
	RestartRequired []string `json:"restart_required"`
}

// Reload reads the configuration again (the file the gateway started with,
// with the same environment overrides), builds and checks the new catalog
// completely, and only then swaps it in with the default rate limits.
// Requests already routed keep the catalog and prices they were planned
// with; requests routed after the swap use the new ones. An invalid file
// changes nothing: the error says why, as a 422, and the gateway keeps
// serving what it had. Reloads are serialised.
func (g *Gateway) Reload(trigger string) (*Reloaded, error) {
	g.reloadMu.Lock()
	defer g.reloadMu.Unlock()
	r, err := g.reload(trigger)
	if err != nil {
		g.log.Error("configuration reload refused; the previous configuration keeps serving",
			"trigger", trigger, "source", g.sourceName(), "err", err)
		return nil, apierr.Wrap(http.StatusUnprocessableEntity, err,
			"configuration reload refused, the previous configuration keeps serving: %v", err)
	}
	g.log.Info("configuration reloaded", "trigger", trigger, "source", g.sourceName(),
		"models", r.Models, "providers", r.Providers, "aliases", r.Aliases, "restart_required", r.RestartRequired)
	return r, nil
}

func (g *Gateway) sourceName() string {
	if g.configPath == "" {
		return "embedded default"
	}
	return g.configPath
}

func (g *Gateway) reload(trigger string) (*Reloaded, error) {
	cfg, err := config.Load(g.configPath)
	if err != nil {
		return nil, err
	}
	cat, err := cfg.Catalog(g.DemoURL, g.getenv)
	if err != nil {
		return nil, err
	}
	if err := g.checkAdapters(cat); err != nil {
		return nil, err
	}
	if err := g.stampCreated(cat, time.Now()); err != nil {
		return nil, err
	}
	keepCredentials(g.Router.Catalog(), cat)
	// Everything is built and checked: publish. The router's swap is the
	// one atomic step requests see; the rate-limit defaults follow.
	g.Router.Swap(cat)
	g.Server.RateDefaults.Store(cfg.RateLimits, cfg.KeyRateLimits)
	g.lastConfig = fingerprint(g.configPath)
	return &Reloaded{
		Source: g.configPath, Trigger: trigger, At: time.Now().UTC(),
		Models: len(cat.Models), Providers: len(cat.Providers), Aliases: len(cat.Aliases),
		RestartRequired: restartRequired(g.started, cfg),
	}, nil
}

// keepCredentials gives each provider of next whose credentials were
// built from exactly what built them in old (configuration, variables,
// files) the running scheme, with the tokens it holds: otherwise every
// reload would mint new OAuth tokens for every cloud provider.
func keepCredentials(old, next *catalog.Catalog) {
	if old == nil {
		return
	}
	for slug, p := range next.Providers {
		if o := old.Providers[slug]; o != nil && o.Auth != nil && p.Auth != nil {
			p.Auth = credentials.Reuse(o.Auth, p.Auth)
		}
	}
}

// checkAdapters refuses a catalog whose providers name an adapter module
// the gateway has not loaded, or an api form the module does not list in
// its manifest: every request to them would fail or be mistranslated.
func (g *Gateway) checkAdapters(cat *catalog.Catalog) error {
	slugs := make([]string, 0, len(cat.Providers))
	for s := range cat.Providers {
		slugs = append(slugs, s)
	}
	sort.Strings(slugs)
	for _, s := range slugs {
		p := cat.Providers[s]
		mod, release := g.Modules.Acquire(p.Adapter)
		if mod == nil {
			return fmt.Errorf("config: provider %q: adapter module %q is not loaded (publish and activate it first)", s, p.Adapter)
		}
		err := checkAPI(s, p, mod)
		release()
		if err != nil {
			return err
		}
	}
	return nil
}

// checkAPI refuses provider p's api form unless its adapter module mod
// lists it in its manifest (config.Provider.API).
func checkAPI(slug string, p *catalog.Provider, mod *wasm.Module) error {
	if p.API == "" || mod.Manifest.SpeaksAPI(p.API) {
		return nil
	}
	return fmt.Errorf("config: provider %q: api %q is not a form adapter %q speaks (its manifest lists %v)", slug, p.API, p.Adapter, mod.Manifest.APIs)
}

// checkAPIs is checkAPI for each provider whose adapter is loaded, at
// start, when an adapter may still be published after the gateway starts.
func (g *Gateway) checkAPIs(cat *catalog.Catalog) error {
	for s, p := range cat.Providers {
		mod, release := g.Modules.Acquire(p.Adapter)
		if mod == nil {
			continue
		}
		err := checkAPI(s, p, mod)
		release()
		if err != nil {
			return err
		}
	}
	return nil
}

// restartRequired lists the top-level settings (by their YAML names) that
// differ between the file at start and the new one and that only a restart
// applies. The catalog (providers, models, aliases) and
// rate_limits are applied live.
func restartRequired(old, cur *config.Config) []string {
	live := map[string]bool{"providers": true, "models": true, "aliases": true, "rate_limits": true}
	ov, nv := reflect.ValueOf(old).Elem(), reflect.ValueOf(cur).Elem()
	out := []string{}
	for i := 0; i < ov.NumField(); i++ {
		f := ov.Type().Field(i)
		name, _, _ := cutTag(f.Tag.Get("yaml"))
		if name == "" || live[name] {
			continue
		}
		if name == "bootstrap_key" || name == "bootstrap_credits" {
			continue // used once, when the store is created
		}
		if !reflect.DeepEqual(ov.Field(i).Interface(), nv.Field(i).Interface()) {
			out = append(out, name)
		}
	}
	return out
}

func cutTag(tag string) (string, string, bool) {
	for i := 0; i < len(tag); i++ {
		if tag[i] == ',' {
			return tag[:i], tag[i+1:], true
		}
	}
	return tag, "", false
}

// fingerprint is the hash of the file's content ("" when unreadable), so
// the watcher reloads only when the content really changed.
func fingerprint(path string) string {
	if path == "" {
		return ""
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	h := sha256.Sum256(b)
	return string(h[:])
}

// WatchConfig reloads the configuration on SIGHUP (ReloadOnSIGHUP) and
// when the file the gateway started with changes (WatchFile), until ctx
// ends. When the file cannot be watched it says so, and SIGHUP still works.
func (g *Gateway) WatchConfig(ctx context.Context) error {
	g.ReloadOnSIGHUP(ctx)
	return g.WatchFile(ctx)
}

// ReloadOnSIGHUP reloads the configuration on each SIGHUP until ctx ends.
func (g *Gateway) ReloadOnSIGHUP(ctx context.Context) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				_, _ = g.Reload("SIGHUP")
			}
		}
	}()
}

// WatchFile reloads the configuration when its file changes, until ctx
// ends. The file is watched with fsnotify on its directory, not on the
// file itself: editors save by writing a new file and renaming it over the
// old one, and Kubernetes swaps a ConfigMap by replacing a symlink, and
// both replace the inode a watch on the file would hold. fsnotify rather
// than polling: a change applies within the debounce instead of a poll
// interval, and an idle gateway does no work; on file systems without
// change events (some network mounts) SIGHUP or the reload endpoint
// remain. Events on other files are ignored; the file's are debounced (a
// save is several) and then its content is compared with what was last
// loaded, so saves that change nothing reload nothing.
func (g *Gateway) WatchFile(ctx context.Context) error {
	if g.configPath == "" {
		return nil // the embedded default cannot change
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("config watch: %w", err)
	}
	if err := w.Add(filepath.Dir(g.configPath)); err != nil {
		_ = w.Close()
		return fmt.Errorf("config watch: %w", err)
	}
	g.reloadMu.Lock()
	g.lastConfig = fingerprint(g.configPath)
	g.reloadMu.Unlock()
	base := filepath.Base(g.configPath)
	go func() {
		defer w.Close()
		var settle <-chan time.Time
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				// The file itself, or Kubernetes' ..data symlink swap; a
				// busy directory (the store's own files) is not a change.
				if b := filepath.Base(ev.Name); b != base && !strings.HasPrefix(b, "..") {
					continue
				}
				// Not reset by later events: a save applies within the
				// debounce even when events keep coming.
				if settle == nil {
					settle = time.After(debounce)
				}
			case err, ok := <-w.Errors:
				if ok {
					g.log.Warn("config watch", "err", err)
				}
			case <-settle:
				settle = nil
				g.reloadMu.Lock()
				changed := fingerprint(g.configPath) != g.lastConfig
				g.reloadMu.Unlock()
				// A file caught mid-save fails to parse and is refused
				// (logged); the save's next event reloads it whole.
				if changed {
					_, _ = g.Reload("file change")
				}
			}
		}
	}()
	return nil
}

// debounce is how long the watcher waits after a file event for more.
const debounce = 250 * time.Millisecond

// mountReload adds POST /api/v1/admin/reload: an operator's management key
// reloads the configuration and gets what changed, or the 422 saying why
// the file was refused.
func (g *Gateway) mountReload(api fiber.Router) {
	api.Post("/admin/reload", admin.ManagementOnly, func(c *fiber.Ctx) error {
		if !g.Keys.IsOperator(c.Locals(admin.LocalsKey).(*keys.Key)) {
			return admin.Fail(c, http.StatusForbidden, "only the gateway's operator can reload its configuration")
		}
		r, err := g.Reload("api")
		if err != nil {
			return err
		}
		return c.JSON(fiber.Map{"data": r})
	})
}
