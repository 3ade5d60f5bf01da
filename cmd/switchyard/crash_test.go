package main

import (
	"bufio"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/demo"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/switchyard/switchyard/host/store"
	"github.com/tidwall/gjson"
)

const crashKey = "sk-sy-v1-crash0000000000000000000000000000000000000000000000000000"

// crashGateway is one run of the real gateway binary.
type crashGateway struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once the process is reaped
	log    string        // its stdout and stderr
	base   string        // http://addr/api/v1
}

// gatewayDirs prepares a modules directory and a data directory under dir
// for one run of the binary, and picks a free loopback address. Only the
// adapter the tests use, and a compilation cache shared between runs (as
// gatewaytest's gateways share theirs): compiling the Go-built Wasm modules
// from scratch takes seconds. The cache holds compiled code only; the data
// directory is otherwise fresh.
func gatewayDirs(t *testing.T, dir string) (modules, data, addr string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(gatewaytest.Root(), "build", "wasm", "openai.wasm")); err != nil {
		t.Fatalf("build/wasm/openai.wasm is missing: run make wasm (%v)", err)
	}
	modules, data = filepath.Join(dir, "modules"), filepath.Join(dir, "data")
	cache := filepath.Join(os.TempDir(), "switchyard-crash-test-wazero-cache")
	for _, d := range []string{modules, data, cache} {
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
	if err := os.Symlink(cache, filepath.Join(data, "wazero-cache")); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr = ln.Addr().String()
	ln.Close()
	return modules, data, addr
}

// testRun is one gateway binary's files in a test: its config, data
// directory, address and log.
type testRun struct{ cfg, data, addr, log string }

// newTestRun writes a config (the header every test needs — listen,
// data_dir and modules_dir from gatewayDirs, no demo — then rest) and
// prints the gateway's log if the test fails.
func newTestRun(t *testing.T, rest string) testRun {
	t.Helper()
	dir := t.TempDir()
	modules, data, addr := gatewayDirs(t, dir)
	r := testRun{cfg: filepath.Join(dir, "switchyard.yaml"), data: data, addr: addr, log: filepath.Join(dir, "gateway.log")}
	yml := fmt.Sprintf("listen: %s\ndata_dir: %s\nmodules_dir: %s\ndemo: false\n", addr, data, modules) + rest
	if err := os.WriteFile(r.cfg, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(r.log)
			t.Logf("gateway log:\n%s", b)
		}
	})
	return r
}

// crashBuild builds the gateway from the sources under test: a binary left
// in build/bin by an earlier `make build` may predate them.
func crashBuild(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "switchyard")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func crashStart(t *testing.T, bin, cfg, addr, logFile string) *crashGateway {
	t.Helper()
	return startCommand(t, []string{bin, "-config", cfg}, addr, logFile)
}

// startCommand starts argv (the gateway binary, or a wrapper that execs
// it) and waits until the gateway on addr is healthy.
func startCommand(t *testing.T, argv []string, addr, logFile string) *crashGateway {
	t.Helper()
	lf, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	// Only this test's settings: no SWITCHYARD_* override from the caller.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SWITCHYARD_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "SWITCHYARD_BOOTSTRAP_KEY="+crashKey)
	cmd.Stdout, cmd.Stderr = lf, lf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	g := &crashGateway{cmd: cmd, exited: exited, log: logFile, base: "http://" + addr + "/api/v1"}
	deadline := time.Now().Add(60 * time.Second) // safety bound: the first start compiles the Wasm modules
	for {
		if resp, err := http.Get("http://" + addr + "/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return g
			}
		}
		select {
		case <-exited:
			t.Fatalf("the gateway exited during start:\n%s", g.logText())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the gateway did not become healthy:\n%s", g.logText())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (g *crashGateway) logText() string {
	b, _ := os.ReadFile(g.log)
	return string(b)
}

// kill is kill -9: no shutdown, no draining, no settlement.
func (g *crashGateway) kill(t *testing.T) {
	t.Helper()
	if err := g.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-g.exited
}

func (g *crashGateway) do(t *testing.T, method, path, body string) (*http.Response, gjson.Result) {
	t.Helper()
	req, _ := http.NewRequest(method, g.base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+crashKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, gjson.ParseBytes(b)
}

// nanos reads an amount of dollars exactly as written (the API writes the
// ledger's integer nano-dollars as exact decimals).
func nanos(t *testing.T, r gjson.Result) int64 {
	t.Helper()
	x, ok := new(big.Rat).SetString(r.Raw)
	if !ok {
		t.Fatalf("amount %q is not a number", r.Raw)
	}
	x.Mul(x, big.NewRat(1_000_000_000, 1))
	if !x.IsInt() {
		t.Fatalf("amount %s is not a whole number of nano-dollars", r.Raw)
	}
	return x.Num().Int64()
}

// nanosOr is nanos for a client goroutine, which must not stop the test:
// def when r is not an exact amount.
func nanosOr(r gjson.Result, def int64) int64 {
	x, ok := new(big.Rat).SetString(r.Raw)
	if !ok {
		return def
	}
	x.Mul(x, big.NewRat(1_000_000_000, 1))
	if !x.IsInt() {
		return def
	}
	return x.Num().Int64()
}

func usd(n int64) string { return fmt.Sprintf("$%d.%09d", n/1e9, n%1e9) }

// TestCrashBillingRecovery kills the gateway binary with SIGKILL while a
// stream and a non-streaming request are in flight, restarts it on the same
// data directory, and checks through the HTTP API what a customer would
// check: requests answered before the crash are billed exactly as their
// responses said, the interrupted stream has a generation record, nothing
// stays reserved, and credits, key usage and generation records agree.
func TestCrashBillingRecovery(t *testing.T) {
	if _, err := os.Stat(filepath.Join(gatewaytest.Root(), "build", "wasm", "openai.wasm")); err != nil {
		t.Fatalf("build/wasm/openai.wasm is missing: run make wasm (%v)", err)
	}
	up := demo.New()    // serves test/chat, streams slowly when told to
	stuck := demo.New() // serves test/stuck, never answers in time
	stuck.SetFaults(demo.Faults{Delay: time.Minute})
	var urls []string
	for _, s := range []*demo.Server{up, stuck} {
		hs := httptest.NewServer(s)
		t.Cleanup(func() { hs.CloseClientConnections(); hs.Close() })
		urls = append(urls, hs.URL)
	}

	// The default settle (journal): a response that carries usage.cost is
	// in the journal on disk before the client sees it, which is what "a
	// request completed before the kill is still recorded" needs.
	//
	// timeouts.request: 2m — far longer than the test: the holds of the
	// killed process must be settled when the gateway restarts, not when
	// the request deadline passes.
	run := newTestRun(t, fmt.Sprintf(`bootstrap_credits: 10
timeouts: {attempt: 20s, request: 2m}
providers:
  - {slug: up, adapter: openai, base_url: "%s/v1", data_collection: deny}
  - {slug: stuck, adapter: openai, base_url: "%s/v1", data_collection: deny}
models:
  - id: test/chat
    endpoints:
      - {provider: up, upstream_model: echo, max_output: 256, price: {prompt: 1000, completion: 2000}}
  - id: test/stuck
    endpoints:
      - {provider: stuck, upstream_model: echo, max_output: 256, price: {prompt: 1000, completion: 2000}}
`, urls[0], urls[1]))
	t0 := time.Now()
	bin := crashBuild(t)
	t.Logf("%v: built", time.Since(t0).Round(time.Millisecond))

	g := crashStart(t, bin, run.cfg, run.addr, run.log)
	t.Logf("%v: started", time.Since(t0).Round(time.Millisecond))
	_, cr := g.do(t, "GET", "/credits", "")
	initial := nanos(t, cr.Get("data.total_credits"))
	if initial != 10e9 || nanos(t, cr.Get("data.balance")) != initial {
		t.Fatalf("bootstrap credits %s", cr.Raw)
	}

	// Answered before the crash: a JSON completion and a whole stream.
	resp, a := g.do(t, "POST", "/chat/completions", `{"model":"test/chat","messages":[{"role":"user","content":"answered before the crash"}]}`)
	if resp.StatusCode != 200 || nanos(t, a.Get("usage.cost")) <= 0 {
		t.Fatalf("%d %s", resp.StatusCode, a.Raw)
	}
	idA, costA := a.Get("id").Str, nanos(t, a.Get("usage.cost"))

	streamReq := func(content string) (*http.Response, *bufio.Reader) {
		req, _ := http.NewRequest("POST", g.base+"/chat/completions",
			strings.NewReader(`{"model":"test/chat","stream":true,"messages":[{"role":"user","content":"`+content+`"}]}`))
		req.Header.Set("Authorization", "Bearer "+crashKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 {
			t.Fatalf("stream status %d", resp.StatusCode)
		}
		return resp, bufio.NewReader(resp.Body)
	}
	resp, br := streamReq("streamed before the crash")
	idB := resp.Header.Get("X-Generation-Id")
	var costB int64 = -1
	for {
		line, err := br.ReadString('\n')
		if d, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok && d != "[DONE]" {
			if c := gjson.Get(d, "usage.cost"); c.Exists() {
				costB = nanos(t, c)
			}
		}
		if err != nil {
			break
		}
	}
	resp.Body.Close()
	if idB == "" || costB <= 0 {
		t.Fatalf("completed stream: id %q, cost on the final chunk %d", idB, costB)
	}

	// In flight at the crash (a request that ended first fails the test
	// below): a JSON request its upstream has not answered…
	stuckDone := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest("POST", g.base+"/chat/completions", strings.NewReader(`{"model":"test/stuck","messages":[{"role":"user","content":"never answered"}]}`))
		req.Header.Set("Authorization", "Bearer "+crashKey)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			err = fmt.Errorf("the stuck request was answered before the kill: %d %s", resp.StatusCode, b)
		}
		stuckDone <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); stuck.Count() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the stuck request never reached its upstream")
		}
	}
	// …and a stream that has delivered some of its answer.
	up.SetFaults(demo.Faults{ChunkDelay: 150 * time.Millisecond})
	resp, br = streamReq("one two three four five six seven eight nine ten")
	idC := resp.Header.Get("X-Generation-Id")
	words := 0
	for words < 2 {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended before the kill: %v", err)
		}
		if d, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok && gjson.Get(d, "choices.0.delta.content").Str != "" {
			words++
		}
	}
	if _, cr := g.do(t, "GET", "/credits", ""); nanos(t, cr.Get("data.reserved")) <= 0 {
		t.Fatalf("two requests in flight, nothing reserved: %s", cr.Raw)
	}

	g.kill(t)
	t.Logf("%v: killed", time.Since(t0).Round(time.Millisecond))
	rest, _ := io.ReadAll(br)
	resp.Body.Close()
	if strings.Contains(string(rest), "[DONE]") {
		t.Fatal("the killed gateway's stream ended normally")
	}
	if err := <-stuckDone; err == nil || strings.Contains(err.Error(), "answered before the kill") {
		t.Fatalf("the in-flight JSON request: %v", err)
	}

	g = crashStart(t, bin, run.cfg, run.addr, run.log)
	t.Logf("%v: restarted", time.Since(t0).Round(time.Millisecond))

	// The interrupted stream has its record as soon as the gateway serves
	// again: recovery settles the dead process's holds at start.
	resp, body := g.do(t, "GET", "/generation?id="+idC, "")
	if resp.StatusCode != 200 {
		t.Fatalf("the stream interrupted by the crash has no generation record after the restart: %d %s", resp.StatusCode, body.Raw)
	}
	genC := body.Get("data")
	if genC.Get("status").Str != "interrupted" || genC.Get("model").Str != "test/chat" || !genC.Get("streamed").Bool() {
		t.Fatalf("interrupted stream recorded as %s", genC.Raw)
	}
	t.Logf("%v: interrupted stream recorded", time.Since(t0).Round(time.Millisecond))
	costC := nanos(t, genC.Get("total_cost"))
	if costC < 0 || costC > nanos(t, genC.Get("held")) {
		t.Fatalf("interrupted stream charged %s, held %s", usd(costC), genC.Get("held").Raw)
	}

	// Answered before the crash: recorded exactly as the responses said.
	for _, want := range []struct {
		id   string
		cost int64
	}{{idA, costA}, {idB, costB}} {
		resp, body := g.do(t, "GET", "/generation?id="+want.id, "")
		gen := body.Get("data")
		if resp.StatusCode != 200 || gen.Get("status").Str != "success" {
			t.Fatalf("generation %s after the restart: %d %s", want.id, resp.StatusCode, body.Raw)
		}
		if got := nanos(t, gen.Get("total_cost")); got != want.cost {
			t.Fatalf("generation %s charged %s, its response said %s", want.id, usd(got), usd(want.cost))
		}
	}

	// Nothing stays reserved (the stuck request's hold too, which the
	// client never got an id for), and the books balance.
	_, cr = g.do(t, "GET", "/credits", "")
	credits := cr.Get("data")
	if nanos(t, credits.Get("reserved")) != 0 {
		t.Fatalf("money still reserved after the restart: %s", credits.Raw)
	}
	charged := costA + costB + costC
	if got := nanos(t, credits.Get("total_credits")); got != initial {
		t.Errorf("total_credits %s, was %s", usd(got), usd(initial))
	}
	if got := nanos(t, credits.Get("total_usage")); got != charged {
		t.Errorf("total_usage %s, the generation records sum to %s (the request that never answered must cost nothing)", usd(got), usd(charged))
	}
	if got := nanos(t, credits.Get("balance")); got != initial-charged {
		t.Errorf("balance %s, want credits − charges = %s", usd(got), usd(initial-charged))
	}
	if got := nanos(t, credits.Get("available")); got != initial-charged {
		t.Errorf("available %s, want the whole balance %s", usd(got), usd(initial-charged))
	}
	_, key := g.do(t, "GET", "/key", "")
	if got := nanos(t, key.Get("data.usage")); got != charged {
		t.Errorf("key usage %s, its generation records sum to %s", usd(got), usd(charged))
	}
	if got := nanos(t, key.Get("data.reserved")); got != 0 {
		t.Errorf("key still has %s reserved", usd(got))
	}

	// The recovered gateway serves and bills as before.
	up.SetFaults(demo.Faults{})
	resp, d := g.do(t, "POST", "/chat/completions", `{"model":"test/chat","messages":[{"role":"user","content":"after the restart"}]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("after the restart: %d %s", resp.StatusCode, d.Raw)
	}
	_, cr = g.do(t, "GET", "/credits", "")
	if got, want := nanos(t, cr.Get("data.balance")), initial-charged-nanos(t, d.Get("usage.cost")); got != want {
		t.Errorf("balance after one more request %s, want %s", usd(got), usd(want))
	}
}

// TestCrashUnderLoadLosesNoAcknowledgedCharge kills the gateway with
// SIGKILL while eight clients keep it busy, on the default settings
// (settle: journal). Every request a client got an answer for — its cost
// in the body or in the stream's final chunk — has a success record with
// exactly that cost after the restart. (With settle: memory, the default
// until 2026-11-29, a kill lost the charges of the commit window in
// flight: 228 of 9,291 in one measurement.) Then the books balance: the
// audit over the data file finds nothing.
func TestCrashUnderLoadLosesNoAcknowledgedCharge(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the gateway binary")
	}
	up := demo.New()
	hs := httptest.NewServer(up)
	t.Cleanup(func() { hs.CloseClientConnections(); hs.Close() })
	run := newTestRun(t, fmt.Sprintf(`bootstrap_credits: 1000
timeouts: {attempt: 20s, request: 2m}
rate_limits: {requests_per_minute: -1, tokens_per_minute: -1, concurrent: -1}
key_rate_limits: {requests_per_minute: -1, tokens_per_minute: -1, concurrent: -1}
providers:
  - {slug: up, adapter: openai, base_url: "%s/v1", data_collection: deny}
models:
  - id: test/chat
    endpoints:
      - {provider: up, upstream_model: echo, max_output: 256, price: {prompt: 1000, completion: 2000}}
`, hs.URL))
	bin := crashBuild(t)
	g := crashStart(t, bin, run.cfg, run.addr, run.log)

	// Eight clients, every third request a stream, each at most 2,000
	// requests; they stop at the kill.
	type answer struct {
		id   string
		cost int64
	}
	var mu sync.Mutex
	var answers []answer
	stop := make(chan struct{})
	var wg sync.WaitGroup
	client := &http.Client{Timeout: time.Minute}
	one := func(w, i int) bool {
		stream := i%3 == 0
		body := fmt.Sprintf(`{"model":"test/chat","stream":%t,"messages":[{"role":"user","content":"client %d request %d"}]}`, stream, w, i)
		req, _ := http.NewRequest("POST", g.base+"/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+crashKey)
		resp, err := client.Do(req)
		if err != nil {
			return false // the kill
		}
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != 200 {
			return err == nil
		}
		a := answer{id: resp.Header.Get("X-Generation-Id"), cost: -1}
		if !stream {
			a.cost = nanosOr(gjson.GetBytes(raw, "usage.cost"), -1)
		} else {
			for _, line := range strings.Split(string(raw), "\n") {
				if d, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok && d != "[DONE]" {
					if c := gjson.Get(d, "usage.cost"); c.Exists() {
						a.cost = nanosOr(c, -1)
					}
				}
			}
		}
		if a.id == "" || a.cost < 0 {
			return true // cut mid-answer by the kill: not acknowledged
		}
		mu.Lock()
		answers = append(answers, a)
		mu.Unlock()
		return true
	}
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if !one(w, i) {
					return
				}
			}
		}()
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(answers) }
	for deadline := time.Now().Add(2 * time.Minute); count() < 400; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			close(stop)
			wg.Wait()
			t.Fatalf("only %d requests answered before the safety bound", count())
		}
	}
	g.kill(t)
	close(stop)
	wg.Wait()
	t.Logf("%d requests answered before the kill", len(answers))

	g = crashStart(t, bin, run.cfg, run.addr, run.log)
	var sum int64
	for _, a := range answers {
		resp, body := g.do(t, "GET", "/generation?id="+a.id, "")
		gen := body.Get("data")
		if resp.StatusCode != 200 || gen.Get("status").Str != "success" {
			t.Fatalf("an answered request lost its charge in the crash: generation %s: %d %s", a.id, resp.StatusCode, body.Raw)
		}
		if got := nanos(t, gen.Get("total_cost")); got != a.cost {
			t.Fatalf("generation %s charged %s, its response said %s", a.id, usd(got), usd(a.cost))
		}
		sum += a.cost
	}
	_, cr := g.do(t, "GET", "/credits", "")
	credits := cr.Get("data")
	if nanos(t, credits.Get("reserved")) != 0 {
		t.Fatalf("money still reserved after the restart: %s", credits.Raw)
	}
	// The requests in flight at the kill (at most one per client) may be
	// charged too: settled but not delivered, or interrupted.
	if used := nanos(t, credits.Get("total_usage")); used < sum {
		t.Fatalf("total_usage %s is less than the %s the clients were told", usd(used), usd(sum))
	}
	if err := g.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-g.exited
	db, err := store.OpenBolt(filepath.Join(run.data, "switchyard.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	l, err := billing.Open(db, billing.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if problems, err := l.Audit(); err != nil || len(problems) > 0 {
		t.Fatalf("audit after the crash: %v %v", problems, err)
	}
}
