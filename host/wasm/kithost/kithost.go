// Package kithost runs the ABI conformance kit (abi/conformance) on
// Switchyard's own module runtime, host/wasm: the adapter between the kit's
// Host and Module and the engine. Tests use it for the host check and to
// check guests (first-party modules, or a third party's with
// `go test ./abi/conformance -guest x.wasm -manifest x.json`).
package kithost

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/abi/conformance"
	"github.com/switchyard/switchyard/abi/manifest"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/kv"
	"github.com/switchyard/switchyard/host/store"
	"github.com/switchyard/switchyard/host/vecindex"
	"github.com/switchyard/switchyard/host/wasm"
)

// Host is a wasm.Engine seen by the kit. It records module log lines.
type Host struct {
	Engine *wasm.Engine
	logs   *recorder
	db     store.DB
	vix    *vecindex.Index
	dir    string
}

// KVLimits are the module store's limits on the kit's host: a small quota,
// so the kit's quota check fills it in a few puts.
var KVLimits = kv.Limits{MaxBytes: 256 << 10, MaxKeys: 64}

// New makes an engine with the compilation cache in cacheDir ("" for none)
// that lets modules reach loopback (the kit's http check uses a local
// server), with a module store in a temporary file. Close it with Close.
func New(cacheDir string) (*Host, error) {
	dir, err := os.MkdirTemp("", "switchyard-kithost-")
	if err != nil {
		return nil, err
	}
	db, err := store.OpenBolt(filepath.Join(dir, "kv.db"))
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	kvs, err := kv.Open(db, KVLimits)
	if err != nil {
		_ = db.Close()
		_ = os.RemoveAll(dir)
		return nil, err
	}
	vix, err := vecindex.Open(db, vecindex.Limits{})
	if err != nil {
		_ = db.Close()
		_ = os.RemoveAll(dir)
		return nil, err
	}
	rec := &recorder{}
	e := wasm.NewEngine(wasm.Config{CacheDir: cacheDir, Log: slog.New(rec), AllowPrivateNetworks: true, KV: kvs, Vectors: vix})
	return &Host{Engine: e, logs: rec, db: db, dir: dir, vix: vix}, nil
}

// Close closes the engine and removes the module store.
func (h *Host) Close(ctx context.Context) error {
	err := h.Engine.Close(ctx)
	h.vix.Close()
	_ = h.db.Close()
	_ = os.RemoveAll(h.dir)
	return err
}

// WithEnv puts env in ctx as the request's wasm.CallEnv.
func (h *Host) WithEnv(ctx context.Context, env conformance.Env) context.Context {
	return wasm.WithCallEnv(ctx, &wasm.CallEnv{Account: env.Account, Chat: env.Chat, Reserve: env.Reserve, Embed: env.Embed})
}

// Load parses the manifest as the gateway does and loads the module.
func (h *Host) Load(ctx context.Context, manifestJSON, bin []byte) (conformance.Module, error) {
	m, err := manifest.Parse(manifestJSON)
	if err != nil {
		return nil, err
	}
	mod, err := h.Engine.Load(ctx, m, bin)
	if err != nil {
		return nil, err
	}
	return module{mod}, nil
}

// Logs returns the lines modules logged since the last call.
func (h *Host) Logs() []conformance.Log { return h.logs.take() }

type module struct{ m *wasm.Module }

func (m module) Call(ctx context.Context, hook abi.Hook, fields ...[]byte) ([][]byte, error) {
	out, _, err := m.CallMemory(ctx, hook, fields...)
	return out, err
}

// CallMemory is Call that also returns the size in bytes of the
// instance's memory when the call returned (wasm.Output.Memory; 0 when
// not known): `syctl plugin test` prints it.
func (m module) CallMemory(ctx context.Context, hook abi.Hook, fields ...[]byte) ([][]byte, uint32, error) {
	out, err := m.m.Call(ctx, hook, fields...)
	if err != nil {
		var ae *apierr.Error
		if errors.As(err, &ae) {
			return nil, 0, &conformance.Failure{Status: ae.Status, Message: ae.Message, Broke: errors.Is(err, wasm.ErrBroke)}
		}
		return nil, 0, err
	}
	return out.Fields, out.Memory, nil
}

func (m module) Close(ctx context.Context) error { return m.m.Close(ctx) }

// recorder is the engine's slog handler: it keeps the lines modules logged
// (those with a "module" attribute).
type recorder struct {
	mu    sync.Mutex
	lines []conformance.Log
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }

func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	l := conformance.Log{Message: rec.Message, Level: 1}
	switch {
	case rec.Level < slog.LevelInfo:
		l.Level = 0
	case rec.Level >= slog.LevelError:
		l.Level = 3
	case rec.Level >= slog.LevelWarn:
		l.Level = 2
	}
	rec.Attrs(func(a slog.Attr) bool {
		if a.Key == "module" {
			l.Module = a.Value.String()
		}
		return true
	})
	if l.Module != "" {
		r.mu.Lock()
		r.lines = append(r.lines, l)
		r.mu.Unlock()
	}
	return nil
}

func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recorder) WithGroup(string) slog.Handler      { return r }

func (r *recorder) take() []conformance.Log {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.lines
	r.lines = nil
	return out
}
