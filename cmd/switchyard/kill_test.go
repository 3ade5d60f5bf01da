package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/demo"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/gjson"
)

const killKey = "sk-sy-v1-killtest000000000000000000000000000000000000000000000000"

// gatewayBinary builds this package's binary (from the build cache, so a
// stale build/bin never stands in for the code under test).
func gatewayBinary(t *testing.T) string {
	bin := filepath.Join(t.TempDir(), "switchyard")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

type proc struct {
	cmd    *exec.Cmd
	stderr *strings.Builder
	exited chan struct{}
}

func startGateway(t *testing.T, bin, cfg string) *proc {
	t.Helper()
	cmd := exec.Command(bin, "-config", cfg)
	cmd.Env = append(os.Environ(), "SWITCHYARD_BOOTSTRAP_KEY="+killKey)
	p := &proc{cmd: cmd, stderr: &strings.Builder{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = io.Discard, &syncWriter{b: p.stderr}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-p.exited })
	return p
}

type syncWriter struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (p *proc) waitHealthy(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-p.exited:
			t.Fatalf("gateway exited: %s", p.stderr.String())
		default:
		}
		if resp, err := http.Get("http://" + addr + "/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("gateway did not become healthy")
}

func call(t *testing.T, method, url, body string) (int, gjson.Result) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+killKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, gjson.ParseBytes(b)
}

// TestKillMidStream kills the gateway process (SIGKILL) in the middle of a
// stream, restarts it on the same store, and checks the ledger through the
// API: the completed request is still charged, the interrupted stream is
// settled by recovery, nothing stays reserved, and balance, key usage and
// generation records agree.
func TestKillMidStream(t *testing.T) {
	up := demo.New()
	hs := httptest.NewServer(up)
	defer hs.Close()
	dir := t.TempDir()
	addr := freeAddr(t)
	cfg := filepath.Join(dir, "config.yaml")
	// durable_settle: true so that a response the client received is on
	// disk before the kill; with the default a crash may lose the last
	// commit's settlements (docs/billing.md).
	yml := fmt.Sprintf(`listen: %s
data_dir: %s
modules_dir: %s
demo: false
bootstrap_credits: 10
durable_settle: true
timeouts: {attempt: 5s, request: 2s}
providers:
  - {slug: up, adapter: openai, base_url: "%s/v1", data_collection: deny}
models:
  - id: test/chat
    endpoints:
      - {provider: up, upstream_model: echo, max_output: 256, price: {prompt: 1000, completion: 2000}}
`, addr, filepath.Join(dir, "data"), filepath.Join(gatewaytest.Root(), "build", "wasm"), hs.URL)
	if err := os.WriteFile(cfg, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := gatewayBinary(t)
	base := "http://" + addr + "/api/v1"

	p := startGateway(t, bin, cfg)
	p.waitHealthy(t, addr)
	status, done := call(t, "POST", base+"/chat/completions", `{"model":"test/chat","messages":[{"role":"user","content":"finished before the crash"}]}`)
	if status != 200 || done.Get("usage.cost").Float() <= 0 {
		t.Fatalf("%d %s", status, done.Raw)
	}

	up.SetFaults(demo.Faults{ChunkDelay: 300 * time.Millisecond})
	req, _ := http.NewRequest("POST", base+"/chat/completions", strings.NewReader(`{"model":"test/chat","stream":true,"messages":[{"role":"user","content":"a b c d e f g h i j"}]}`))
	req.Header.Set("Authorization", "Bearer "+killKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	streamID := resp.Header.Get("X-Generation-Id")
	br := bufio.NewReader(resp.Body)
	for i := 0; i < 4; i++ {
		if _, err := br.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.cmd.Process.Kill(); err != nil { // SIGKILL: no shutdown, no settlement
		t.Fatal(err)
	}
	<-p.exited
	resp.Body.Close()

	p = startGateway(t, bin, cfg)
	p.waitHealthy(t, addr)
	// The interrupted stream's hold is settled once it is older than the
	// request deadline (2 s), by recovery or the janitor.
	var gen gjson.Result
	deadline := time.Now().Add(20 * time.Second)
	for {
		status, body := call(t, "GET", base+"/generation?id="+streamID, "")
		if status == 200 {
			gen = body.Get("data")
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the interrupted stream was never settled: %d %s", status, body.Raw)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if s := gen.Get("status").Str; s != "interrupted" && s != "expired" {
		t.Fatalf("interrupted stream recorded as %q: %s", s, gen.Raw)
	}
	status, first := call(t, "GET", base+"/generation?id="+done.Get("id").Str, "")
	if status != 200 || first.Get("data.total_cost").Float() != done.Get("usage.cost").Float() {
		t.Fatalf("completed request after restart: %d %s (response said %v)", status, first.Raw, done.Get("usage.cost").Float())
	}
	charged := first.Get("data.total_cost").Float() + gen.Get("total_cost").Float()
	_, credits := call(t, "GET", base+"/credits", "")
	c := credits.Get("data")
	if c.Get("reserved").Float() != 0 {
		t.Fatalf("money still reserved after recovery: %s", c.Raw)
	}
	if got, want := c.Get("balance").Float(), 10-charged; fmt.Sprintf("%.9f", got) != fmt.Sprintf("%.9f", want) {
		t.Fatalf("balance %.9f, want 10 − charges = %.9f (%s)", got, want, c.Raw)
	}
	_, key := call(t, "GET", base+"/key", "")
	if got := key.Get("data.usage").Float(); fmt.Sprintf("%.9f", got) != fmt.Sprintf("%.9f", charged) {
		t.Fatalf("key usage %.9f, generations sum to %.9f", got, charged)
	}
}
