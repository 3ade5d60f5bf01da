// Command switchyard is the gateway. With no configuration it runs the
// embedded default: a bbolt file under ./data, a bootstrap management key,
// and the offline demo provider, so a curl works on a fresh machine.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/switchyard/switchyard/host/config"
	"github.com/switchyard/switchyard/host/console"
	"github.com/switchyard/switchyard/host/gateway"
	"github.com/switchyard/switchyard/host/gctune"
	"github.com/switchyard/switchyard/host/modules"
	"github.com/switchyard/switchyard/host/netguard"
	"github.com/switchyard/switchyard/host/telemetry"
	"github.com/switchyard/switchyard/host/writebehind"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "switchyard:", err)
		os.Exit(1)
	}
}

func run() error {
	// A SIGHUP while starting would end the process (its default action)
	// before the reload handler is installed; the file is being read now
	// anyway. WatchConfig takes SIGHUP over once the gateway runs.
	signal.Ignore(syscall.SIGHUP)
	cfgPath := flag.String("config", os.Getenv("SWITCHYARD_CONFIG"), "configuration file (default: the embedded default)")
	seedDir := flag.String("validate-seeds", "", "validate the built modules in this directory, record them for the gateway's start ("+modules.StampFile+") and exit; `make build` runs it")
	flag.Parse()
	if *seedDir != "" {
		n, kept, err := modules.StampSeeds(context.Background(), *seedDir)
		if err != nil {
			return fmt.Errorf("validate-seeds: %w", err)
		}
		fmt.Printf("validate-seeds: %d validated, %d unchanged, recorded in %s\n", n, kept, filepath.Join(*seedDir, modules.StampFile))
		return nil
	}
	cfg, err := config.Load(*cfgPath)
	if err != nil {
		return err
	}
	// Go samples an allocation every 512 KiB for the heap profile, with a
	// walk of its stack (1% of the gateway's CPU in a profile of a 1 KB
	// chat at 16 clients, below what an A/B of the CPU per request can
	// resolve); nobody can read that profile unless metrics.pprof serves
	// it, and a reload does not add the listener.
	if !cfg.Metrics.Pprof {
		runtime.MemProfileRate = 0
	}
	// config log: level and format (text or json); request lines are info.
	// Lines go out through a write-behind buffer: a line is written at
	// once when stderr has been quiet for 5 ms, and the lines of a busier
	// moment share one write (one syscall per request line was ~2% of the
	// gateway's CPU under load). Closed first-deferred, so last: every
	// line logged until run returns (gw.Close's too) is written before
	// main prints an error or the process exits.
	logOut := writebehind.New(os.Stderr, 64<<10, 5*time.Millisecond)
	defer logOut.Close()
	// slog's text or JSON handler; the request lines are written by hand
	// in the same format (telemetry.LogHandler).
	log := slog.New(telemetry.NewLogHandler(logOut, cfg.Log.Format, cfg.Log.SlogLevel()))
	slog.SetDefault(log)
	// Every client connection and its upstream call hold a descriptor: use
	// all the hard limit allows, and derive the connection caps from it.
	if n, err := netguard.RaiseFDLimit(); err != nil {
		log.Warn("could not raise the open-file limit", "limit", n, "err", err)
	}
	// The tokenizer's vocabularies load once the gateway serves, those of
	// the catalog's models only (Gateway.Serve).
	gw, err := gateway.New(cfg, gateway.Options{Log: log, Getenv: os.Getenv, ConfigPath: *cfgPath, ReleaseStartPages: true})
	if err != nil {
		return err
	}
	defer gw.Close()
	// Start-up leaves garbage (module validation decodes megabytes of Wasm)
	// that the Go runtime would hand back to the OS only slowly: return it
	// now, so the idle gateway's RSS is its live memory.
	debug.FreeOSMemory()
	// Start-up ran with Go's default target (a lower peak); serving runs
	// with the gateway's.
	defer tuneGC(cfg.GCPercent, os.Getenv)()
	if gw.BootstrapSecret != "" {
		// Shown once, on the terminal and in a 0600 file, never in the log.
		keyFile := filepath.Join(cfg.DataDir, "bootstrap.key")
		if err := os.WriteFile(keyFile, []byte(gw.BootstrapSecret+"\n"), 0o600); err != nil {
			return err
		}
		announceBootstrapKey(os.Stdout, keyFile, gw.BootstrapSecret)
	}
	if gw.DemoURL != "" {
		log.Info("demo provider running (offline, canned answers — not a real model)", "url", gw.DemoURL)
	}
	// Providers, models, prices, aliases and rate limits reload without a
	// restart: on SIGHUP, when the file changes, and POST /api/v1/admin/reload.
	wctx, stopWatch := context.WithCancel(context.Background())
	defer stopWatch()
	if err := gw.WatchConfig(wctx); err != nil {
		log.Warn("configuration file not watched; SIGHUP and POST /api/v1/admin/reload still reload it", "err", err)
	}
	for slug, p := range gw.Catalog.Providers {
		log.Info("provider enabled", "provider", slug, "base_url", p.BaseURL, "demo", p.Demo)
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return err
	}
	srv := gw.Server
	errc := make(chan error, 1)
	go func() { errc <- gw.Serve(ln) }()
	log.Info("switchyard listening", "addr", "http://"+cfg.Listen+"/api/v1", "models", len(gw.Catalog.Models))
	if console.Built() {
		log.Info("web console (sign in with a management key)", "url", "http://"+cfg.Listen+"/console/")
	} else {
		log.Warn("web console not built into this binary: make build builds it", "url", "http://"+cfg.Listen+"/console/")
	}

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	select {
	case err := <-errc:
		return err
	case s := <-sig:
		log.Info("shutting down: draining requests in flight", "signal", s.String())
	}
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// announceBootstrapKey tells the operator where the new bootstrap key is.
// The key itself is printed only to a terminal: stdout piped to a log
// collector (systemd, docker, a file) would keep the account's master key
// in every log archive, so there only the file's path appears.
func announceBootstrapKey(out *os.File, keyFile, secret string) {
	if fi, err := out.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
		fmt.Fprintf(out, "\nBootstrap management key (shown once, also saved to %s):\n\n    %s\n\n", keyFile, secret)
		return
	}
	fmt.Fprintf(out, "\nBootstrap management key saved to %s (mode 0600); it is printed only when stdout is a terminal.\n\n", keyFile)
}

// gcHeadroom is the most the heap may grow by between collections while
// the live heap is small (host/gctune; under load it is all of it, see
// gcHorizon): at the gateway's usual 15–25 MiB live,
// a target of about 300–400% instead of Go's default 100%. Measured with
// peerbench's JSON load (A/B, one binary, GOGC=400 against the default,
// 5 pairs of 40,000 requests each way round): 4–5% less CPU per request.
// Past 64 MiB live it is Go's default again, so a large answer costs what
// it did (TestLargeUpstreamAnswerMemory).
const gcHeadroom = 64 << 20

// gcHorizon sizes the headroom to the allocation rate (host/gctune): what
// the gateway allocates in two seconds, so under load (100+ MB/s) it is
// the full 64 MiB and a gateway holding slow streams or idle, allocating a
// few MB a second, keeps Go's default target and the memory it saves.
const gcHorizon = 2 * time.Second

// tuneGC sets the GC target the gateway serves with: none when GOGC is in
// the environment (the runtime read it already), gc_percent when set, else
// the tuner's. It returns what stops the tuner.
func tuneGC(configured int, getenv func(string) string) (stop func()) {
	switch {
	case getenv("GOGC") != "":
		return func() {}
	case configured != 0:
		debug.SetGCPercent(configured)
		return func() {}
	}
	return gctune.Start(gcHeadroom, gcHorizon, 100, 400).Stop
}
