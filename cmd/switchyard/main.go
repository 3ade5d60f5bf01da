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
	"syscall"
	"time"

	"github.com/switchyard/switchyard/host/config"
	"github.com/switchyard/switchyard/host/gateway"
	"github.com/switchyard/switchyard/host/netguard"
	"github.com/switchyard/switchyard/host/tokenize"
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
	cfg, err := config.Load(*cfgPath)
	if err != nil {
		return err
	}
	// config log: level and format (text or json); request lines are info.
	var handler slog.Handler = slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: cfg.Log.SlogLevel()})
	if cfg.Log.Format == "json" {
		handler = slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: cfg.Log.SlogLevel()})
	}
	log := slog.New(handler)
	slog.SetDefault(log)
	// Every client connection and its upstream call hold a descriptor: use
	// all the hard limit allows, and derive the connection caps from it.
	if n, err := netguard.RaiseFDLimit(); err != nil {
		log.Warn("could not raise the open-file limit", "limit", n, "err", err)
	}
	go func() { _ = tokenize.Warm() }()
	gw, err := gateway.New(cfg, gateway.Options{Log: log, Getenv: os.Getenv})
	if err != nil {
		return err
	}
	defer gw.Close()
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
