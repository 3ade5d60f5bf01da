package clustertest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/switchyard/switchyard/host/config"
	"github.com/switchyard/switchyard/host/gatewaytest"
)

// Key is the bootstrap (operator) key of every cluster test gateway.
const Key = gatewaytest.Key

var (
	buildOnce sync.Once
	buildBin  string
	buildErr  error
)

// Binary builds cmd/switchyard once per test process and returns its path.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "switchyard-clustertest-")
		if err != nil {
			buildErr = err
			return
		}
		buildBin = filepath.Join(dir, "switchyard")
		cmd := exec.Command("go", "build", "-o", buildBin, "./cmd/switchyard")
		cmd.Dir = gatewaytest.Root()
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/switchyard: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildBin
}

// Gateway is one gateway process.
type Gateway struct {
	URL  string
	Addr string
	Log  string // its stderr
	cmd  *exec.Cmd
	done chan struct{}
	mu   sync.Mutex
}

// Options shape the gateways' configuration.
type Options struct {
	// DSN is the shared PostgreSQL; RedisURL the shared Redis ("" none).
	DSN, RedisURL string
	// Mutate edits the top-level settings laid over the embedded default
	// configuration (listen, store, limits, …) before it is written.
	Mutate func(map[string]any)
}

// StartGateway starts a gateway process of the cluster and waits until it
// answers /health; it is killed at the end of the test.
func StartGateway(t testing.TB, o Options) *Gateway {
	t.Helper()
	bin := Binary(t)
	dir := t.TempDir()
	// Edited as a YAML node tree: a round trip through Go maps would turn
	// the catalog's dates into timestamps the configuration refuses.
	var doc yaml.Node
	if err := yaml.Unmarshal(config.Default(), &doc); err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", FreePort(t))
	set := map[string]any{
		"listen":            addr,
		"data_dir":          dir,
		"bootstrap_key":     Key,
		"bootstrap_credits": 100,
		"modules_dir":       filepath.Join(gatewaytest.Root(), "build", "wasm"),
		"store":             map[string]any{"driver": "postgres", "dsn": o.DSN},
		"metrics":           map[string]any{"listen": "off"},
		"log":               map[string]any{"level": logLevel(), "requests": false},
		// Every client comes through nginx from one address.
		"limits": map[string]any{"max_connections_per_ip": -1},
	}
	if o.RedisURL != "" {
		set["redis"] = map[string]any{"url": o.RedisURL}
	}
	if o.Mutate != nil {
		o.Mutate(set)
	}
	root := doc.Content[0]
	for k, v := range set {
		var n yaml.Node
		if err := n.Encode(v); err != nil {
			t.Fatal(err)
		}
		replaced := false
		for i := 0; i+1 < len(root.Content); i += 2 {
			if root.Content[i].Value == k {
				root.Content[i+1] = &n
				replaced = true
			}
		}
		if !replaced {
			root.Content = append(root.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: k}, &n)
		}
	}
	b, err := yaml.Marshal(&doc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "switchyard.yaml")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	g := &Gateway{URL: "http://" + addr, Addr: addr, Log: filepath.Join(dir, "gateway.log"), done: make(chan struct{})}
	logf, err := os.Create(g.Log)
	if err != nil {
		t.Fatal(err)
	}
	g.cmd = exec.Command(bin, "-config", path)
	g.cmd.Dir = dir
	g.cmd.Stdout, g.cmd.Stderr = logf, logf
	g.cmd.Env = append(os.Environ(), "SWITCHYARD_CONFIG=")
	g.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = g.cmd.Wait(); logf.Close(); close(g.done) }()
	t.Cleanup(g.Kill)
	if err := waitHTTP(g.URL+"/health", 60*time.Second); err != nil {
		b, _ := os.ReadFile(g.Log)
		t.Fatalf("gateway %s: %v\n%s", addr, err, tail(b, 4000))
	}
	return g
}

// Kill ends the process with SIGKILL, as a crash would.
func (g *Gateway) Kill() {
	select {
	case <-g.done:
		return
	default:
	}
	_ = syscall.Kill(-g.cmd.Process.Pid, syscall.SIGKILL)
	<-g.done
}

// Stop ends the process with SIGTERM (a graceful stop) and waits.
func (g *Gateway) Stop() {
	select {
	case <-g.done:
		return
	default:
	}
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-g.done:
	case <-time.After(30 * time.Second):
		g.Kill()
	}
}

// Logs returns the end of the gateway's log, for failure messages.
func (g *Gateway) Logs() string {
	b, _ := os.ReadFile(g.Log)
	return string(tail(b, 4000))
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		b = b[len(b)-n:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return b
}

// logLevel is the gateways' log level: warn, or CLUSTERTEST_LOG.
func logLevel() string {
	if v := os.Getenv("CLUSTERTEST_LOG"); v != "" {
		return v
	}
	return "warn"
}
