package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBootstrapKeyNotPrintedToAPipe: the real binary, started for the
// first time with its output going to a log (stdout and stderr not a
// terminal, as under systemd or docker), writes the new bootstrap key to its
// 0600 file and names that file — the key itself appears nowhere in the
// output.
func TestBootstrapKeyNotPrintedToAPipe(t *testing.T) {
	bin := crashBuild(t)
	run := newTestRun(t, "providers:\n  - {slug: up, adapter: openai, base_url: \"http://127.0.0.1:9/v1\", data_collection: deny}\n"+
		"models:\n  - id: test/chat\n    endpoints:\n      - {provider: up, upstream_model: echo, max_output: 256, price: {prompt: 1, completion: 2}}\n")
	data, addr, cfg, logFile := run.data, run.addr, run.cfg, run.log
	// env -u: no bootstrap key given (startCommand sets one), so the
	// gateway makes one, as on a first start.
	g := startCommand(t, []string{"env", "-u", "SWITCHYARD_BOOTSTRAP_KEY", bin, "-config", cfg}, addr, logFile)
	g.kill(t) // the output is complete once the process is gone

	keyFile := filepath.Join(data, "bootstrap.key")
	b, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatalf("the bootstrap key was not saved: %v", err)
	}
	key := strings.TrimSpace(string(b))
	if !strings.HasPrefix(key, "sk-") || key == crashKey {
		t.Fatalf("bootstrap.key holds %q, not a key the gateway made", key)
	}
	out := g.logText()
	if strings.Contains(out, key) || strings.Contains(out, key[len(key)-16:]) {
		t.Fatalf("the bootstrap key appears in the output:\n%s", out)
	}
	if !strings.Contains(out, keyFile) {
		t.Fatalf("the output does not say where the key was saved (%s):\n%s", keyFile, out)
	}
}

// TestAnnounceBootstrapKey: through a pipe only the path is written; the
// key is for a terminal only.
func TestAnnounceBootstrapKey(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	const secret = "sk-sy-v1-secret0000000000000000000000000000000000000000000000000"
	announceBootstrapKey(w, "/data/bootstrap.key", secret)
	w.Close()
	out, _ := io.ReadAll(r)
	if strings.Contains(string(out), secret) || !strings.Contains(string(out), "/data/bootstrap.key") {
		t.Fatalf("through a pipe: %q", out)
	}
}
