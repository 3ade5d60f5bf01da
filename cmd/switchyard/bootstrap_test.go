package main

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/gatewaytest"
)

// TestBootstrapKeyNotPrintedToAPipe: the real binary, started for the
// first time with stdout and stderr piped (as under systemd or docker),
// writes the new bootstrap key to its 0600 file and names that file — the
// key itself appears in neither stream.
func TestBootstrapKeyNotPrintedToAPipe(t *testing.T) {
	bin := crashBuild(t)
	dir := t.TempDir()
	data, modules := filepath.Join(dir, "data"), filepath.Join(dir, "modules")
	for _, d := range []string{data, modules} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"openai.json", "openai.wasm"} {
		b, err := os.ReadFile(filepath.Join(gatewaytest.Root(), "build", "wasm", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(modules, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := filepath.Join(dir, "switchyard.yaml")
	yml := fmt.Sprintf(`listen: %s
data_dir: %s
modules_dir: %s
demo: false
providers:
  - {slug: up, adapter: openai, base_url: "http://127.0.0.1:9/v1", data_collection: deny}
models:
  - id: test/chat
    endpoints:
      - {provider: up, upstream_model: echo, max_output: 256, price: {prompt: 1, completion: 2}}
`, addr, data, modules)
	if err := os.WriteFile(cfg, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-config", cfg)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SWITCHYARD_") { // no bootstrap key given: one is made
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var stdout, stderr bytes.Buffer // exec connects these through pipes
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	t.Cleanup(stop)
	deadline := time.Now().Add(60 * time.Second) // safety bound: the first start compiles the Wasm module
	for {
		if resp, err := http.Get("http://" + addr + "/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		select {
		case <-exited:
			t.Fatalf("the gateway exited during start:\n%s\n%s", stdout.String(), stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			stop()
			t.Fatalf("the gateway did not become healthy:\n%s\n%s", stdout.String(), stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop() // the streams are complete once the process is gone

	keyFile := filepath.Join(data, "bootstrap.key")
	b, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatalf("the bootstrap key was not saved: %v", err)
	}
	key := strings.TrimSpace(string(b))
	if !strings.HasPrefix(key, "sk-") {
		t.Fatalf("bootstrap.key holds %q, not a key", key)
	}
	for name, out := range map[string]string{"stdout": stdout.String(), "stderr": stderr.String()} {
		if strings.Contains(out, key) || strings.Contains(out, key[len(key)-16:]) {
			t.Fatalf("the bootstrap key appears in %s:\n%s", name, out)
		}
	}
	if !strings.Contains(stdout.String(), keyFile) {
		t.Fatalf("stdout does not say where the key was saved (%s):\n%s", keyFile, stdout.String())
	}
}
