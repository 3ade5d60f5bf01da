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
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/switchyard/switchyard/host/admin"
	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/config"
	"github.com/switchyard/switchyard/host/demo"
	"github.com/switchyard/switchyard/host/keys"
	"github.com/switchyard/switchyard/host/modules"
	"github.com/switchyard/switchyard/host/netguard"
	"github.com/switchyard/switchyard/host/route"
	"github.com/switchyard/switchyard/host/server"
	"github.com/switchyard/switchyard/host/store"
	"github.com/switchyard/switchyard/host/tokenize"
	"github.com/switchyard/switchyard/host/wasm"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "switchyard:", err)
		os.Exit(1)
	}
}

func run() error {
	cfgPath := flag.String("config", os.Getenv("SWITCHYARD_CONFIG"), "configuration file (default: the embedded default)")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	slog.SetDefault(log)

	cfg, err := config.Load(*cfgPath)
	if err != nil {
		return err
	}
	db, err := store.Open(filepath.Join(cfg.DataDir, "switchyard.db"))
	if err != nil {
		return err
	}
	defer db.Close()

	ks, err := keys.Open(db)
	if err != nil {
		return err
	}
	ledger, err := billing.Open(db, billing.Options{
		RequestDeadline: time.Duration(cfg.Timeouts.Request),
		AsyncSettle:     !cfg.DurableSettle,
		Logf:            func(f string, a ...any) { log.Error(fmt.Sprintf(f, a...)) },
	})
	if err != nil {
		return err
	}
	defer ledger.Close()
	go func() { _ = tokenize.Warm() }()
	secret, created, err := ks.Bootstrap(cfg.BootstrapKey)
	if err != nil {
		return err
	}
	operator := ks.BootstrapAccount()
	if created && cfg.BootstrapCredits > 0 {
		k, aerr := ks.Authenticate(secret)
		if aerr != nil {
			return aerr
		}
		operator = k.AccountID
		if _, err := ledger.TopUp(k.AccountID, billing.FromUSD(cfg.BootstrapCredits), "bootstrap credits"); err != nil {
			return err
		}
		log.Info("bootstrap account funded", "usd", cfg.BootstrapCredits)
	}
	if created && cfg.BootstrapKey == "" {
		// Shown once, on the terminal and in a 0600 file, never in the log.
		keyFile := filepath.Join(cfg.DataDir, "bootstrap.key")
		if err := os.WriteFile(keyFile, []byte(secret+"\n"), 0o600); err != nil {
			return err
		}
		fmt.Printf("\nBootstrap management key (shown once, also saved to %s):\n\n    %s\n\n", keyFile, secret)
	}

	demoURL := ""
	if cfg.Demo {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return fmt.Errorf("demo upstream: %w", err)
		}
		srv := &http.Server{Handler: demo.New(), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
		demoURL = "http://" + ln.Addr().String() + "/v1"
		log.Info("demo provider running (offline, canned answers — not a real model)", "url", demoURL)
	}
	cat, err := cfg.Catalog(demoURL, os.Getenv)
	if err != nil {
		return err
	}
	for slug, p := range cat.Providers {
		log.Info("provider enabled", "provider", slug, "base_url", p.BaseURL, "demo", p.Demo)
	}

	ctx := context.Background()
	engine := wasm.NewEngine(filepath.Join(cfg.DataDir, "wazero-cache"), log)
	defer engine.Close(ctx)
	reg, err := modules.Open(db, engine, log)
	if err != nil {
		return err
	}
	if err := reg.LoadActive(ctx); err != nil {
		log.Warn("some stored modules did not load", "err", err)
	}
	if err := reg.Seed(ctx, cfg.ModulesDir); err != nil {
		return err
	}
	defer reg.Close()

	srv := server.New(server.Deps{
		Config: cfg, Catalog: cat, Keys: ks, Modules: reg, Log: log, Ledger: ledger, Operator: operator,
		Router: route.New(cat, route.Options{}),
		Extra:  func(api fiber.Router) { admin.Register(api, ks, ledger) },
	})
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return err
	}
	// Closes linger while a client is still uploading, so an early answer
	// (413) reaches it instead of a reset.
	ln = netguard.NewLingerer(netguard.LingerConfig{}).Listener(ln)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("switchyard listening", "addr", "http://"+cfg.Listen+"/api/v1", "models", len(cat.Models))

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	select {
	case err := <-errc:
		return err
	case s := <-sig:
		log.Info("shutting down: draining requests in flight", "signal", s.String())
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
