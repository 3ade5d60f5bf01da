package console_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/config"
	"github.com/switchyard/switchyard/host/console"
	"github.com/switchyard/switchyard/host/gatewaytest"
)

// chromium finds Debian's chromium (scripts/install-deps.sh installs it).
func chromium(t *testing.T) string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, n := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	t.Fatal("chromium is required for the console test: apt-get install chromium (make test installs it)")
	return ""
}

// TestConsoleInChromium runs console/e2e/console.e2e.mjs (playwright-core
// driving headless Chromium) against a gateway on loopback: sign in with
// the management key, create a key, send a request with it, find the
// request in the activity list and its cost in the usage chart.
// Screenshots go to build/test-artifacts/console.
func TestConsoleInChromium(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is required for the console test (make test installs it)")
	}
	root := gatewaytest.Root()
	dir := filepath.Join(root, "console")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "playwright-core")); err != nil {
		t.Fatal("the console's npm dependencies are missing: run `make console` (part of `make build`)")
	}
	if !console.Built() {
		t.Fatal("the console is not built into this test binary: run `make console` (part of `make build`)")
	}
	browser := chromium(t)
	// The page publishes a plugin in its account's scope: tenant limits a
	// loaded machine (a CI run under -race) cannot run into while the
	// module's runtime initialises (500 ms did).
	g, err := gatewaytest.Start(gatewaytest.Options{Quiet: true, Mutate: func(c *config.Config) {
		c.TenantModules.TimeoutMS, c.TenantModules.CPUMsPerMinute = 20_000, 10*60_000
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	base := strings.TrimSuffix(g.URL, "/api/v1")
	artifacts := filepath.Join(root, "build", "test-artifacts", "console")
	_ = os.RemoveAll(artifacts)

	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "e2e/console.e2e.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SWITCHYARD_BASE="+base, "SWITCHYARD_KEY="+g.Key, "CHROMIUM="+browser, "ARTIFACTS="+artifacts,
		"WASM_DIR="+filepath.Join(root, "build", "wasm"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("console e2e failed: %v (screenshots in %s)\n%s", err, artifacts, out)
	}
	if !strings.Contains(string(out), "console e2e: ok") {
		t.Fatalf("unexpected console e2e output:\n%s", out)
	}
}

// TestConsoleHeaders: the page and its assets are served with the headers
// that keep the key in the page out of other origins' reach, and nothing
// outside the build is served.
func TestConsoleHeaders(t *testing.T) {
	g, err := gatewaytest.Start(gatewaytest.Options{Quiet: true})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	base := strings.TrimSuffix(g.URL, "/api/v1")
	get := func(path string) (*http.Response, string) {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	resp, body := get("/console/")
	wantStatus := http.StatusOK
	if !console.Built() {
		wantStatus = http.StatusServiceUnavailable // the page says how to build it
	}
	if resp.StatusCode != wantStatus || !strings.Contains(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /console/: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	csp := resp.Header.Get("Content-Security-Policy")
	for _, want := range []string{"script-src 'self'", "frame-ancestors 'none'", "connect-src 'self'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
		}
	}
	if resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("Referrer-Policy") != "no-referrer" {
		t.Errorf("headers: %v", resp.Header)
	}
	if console.Built() && strings.Contains(body, "<script>") {
		t.Error("the page has an inline script, which its CSP refuses")
	}
	for _, p := range []string{"/console/../../go.mod", "/console/NOT_BUILT.html", "/console/assets/nope.js"} {
		if resp, _ := get(p); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", p, resp.StatusCode)
		}
	}
}
