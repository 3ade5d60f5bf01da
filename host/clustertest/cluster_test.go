package clustertest

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/switchyard/switchyard/host/redistest"
	"github.com/switchyard/switchyard/host/store"
	"github.com/switchyard/switchyard/host/store/pgtest"
)

type cluster struct {
	pg    *pgtest.Server
	redis *redistest.Server
	dsn   string
	gws   []*Gateway
	lb    *Nginx
}

func startCluster(t *testing.T, n int) *cluster {
	t.Helper()
	if pgtest.Skip() {
		t.Skip("SWITCHYARD_SKIP_PG=1")
	}
	c := &cluster{pg: pgtest.New(t), redis: redistest.Start(t)}
	c.dsn = c.pg.NewDB(t)
	var addrs []string
	for range n {
		g := StartGateway(t, Options{DSN: c.dsn, RedisURL: c.redis.URL})
		c.gws = append(c.gws, g)
		addrs = append(addrs, g.Addr)
	}
	c.lb = StartNginx(t, addrs)
	return c
}

var client = &http.Client{Timeout: 60 * time.Second}

// call sends a JSON request with the key and returns status, headers and
// body.
func call(method, url, key string, body any) (int, http.Header, []byte, error) {
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b, err
}

// newKey creates a key with a limit (dollars) through url.
func newKey(t *testing.T, url string, limit float64) (secret, hash string) {
	t.Helper()
	st, _, b, err := call("POST", url+"/api/v1/keys", Key, map[string]any{"name": "cluster", "limit": limit})
	if err != nil || st != 201 && st != 200 {
		t.Fatalf("create key: %d %s %v", st, b, err)
	}
	var out struct {
		Key  string `json:"key"`
		Data struct {
			Hash string `json:"hash"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &out); err != nil || out.Key == "" {
		t.Fatalf("create key answer %s: %v", b, err)
	}
	return out.Key, out.Data.Hash
}

// chat makes one chat completion (streamed or not) and returns the status
// and the usage.cost the client saw (0 when none).
func chat(url, key string, stream bool, n int) (int, float64, error) {
	body := map[string]any{
		"model":      "demo/echo",
		"messages":   []map[string]string{{"role": "user", "content": fmt.Sprintf("request %d: tell me something about load balancers", n)}},
		"max_tokens": 64,
		"stream":     stream,
	}
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", url+"/api/v1/chat/completions", bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, 0, nil
	}
	var usage struct {
		Usage *struct {
			Cost float64 `json:"cost"`
		} `json:"usage"`
	}
	if !stream {
		if err := json.NewDecoder(resp.Body).Decode(&usage); err != nil {
			return 200, 0, err
		}
		if usage.Usage == nil {
			return 200, 0, fmt.Errorf("a response without usage")
		}
		return 200, usage.Usage.Cost, nil
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	cost, done := -1.0, false
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "data: ") {
			continue
		}
		data := strings.TrimPrefix(line, "data: ")
		if data == "[DONE]" {
			done = true
			break
		}
		usage.Usage = nil
		if json.Unmarshal([]byte(data), &usage) == nil && usage.Usage != nil {
			cost = usage.Usage.Cost
		}
	}
	if err := sc.Err(); err != nil {
		return 200, 0, err
	}
	if !done || cost < 0 {
		return 200, 0, fmt.Errorf("a stream that ended without usage or [DONE]")
	}
	return 200, cost, nil
}

// audit opens the shared store as one more instance and checks the books.
func (c *cluster) audit(t *testing.T) {
	t.Helper()
	db, err := store.Open(store.Config{Driver: "postgres", DSN: c.dsn}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	l, err := billing.Open(db, billing.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	problems, err := l.Audit()
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) > 0 {
		t.Fatalf("audit of the shared store:\n%s", strings.Join(problems, "\n"))
	}
}

// recs are the key's generation records by status: how many, and what
// they charge.
type recs struct {
	n       map[string]int
	charged map[string]billing.Nanos
}

// records reads the key's generation records from the shared store.
func (c *cluster) records(t *testing.T, keyHash string) recs {
	t.Helper()
	db, err := store.Open(store.Config{Driver: "postgres", DSN: c.dsn}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := recs{n: map[string]int{}, charged: map[string]billing.Nanos{}}
	err = db.View(func(tx store.Tx) error {
		_, err := billing.ForEachGenerationIn(tx, "", func(g *billing.Generation) bool {
			if g.KeyHash == keyHash {
				out.charged[g.Status] += g.Charged
				out.n[g.Status]++
			}
			return true
		})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func usd(n billing.Nanos) float64 { return float64(n) / float64(billing.NanosPerUSD) }

// Three gateways on one PostgreSQL behind nginx; 200 concurrent clients,
// half of them streaming, spend one key's limit through all three: the
// charges never pass the limit, and what the clients were told
// (usage.cost) = the generation records = the key's usage.
func TestClusterSpendsOneKeyLimit(t *testing.T) {
	c := startCluster(t, 3)
	const limit = 0.01
	secret, hash := newKey(t, c.lb.URL, limit)
	var mu sync.Mutex
	var seen float64
	var ok, refused, failed atomic.Int64
	var wg sync.WaitGroup
	deadline := time.Now().Add(90 * time.Second)
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			misses := 0
			for j := 0; j < 200 && misses < 3 && time.Now().Before(deadline); j++ {
				st, cost, err := chat(c.lb.URL, secret, i%2 == 0, i*1000+j)
				switch {
				case err != nil:
					failed.Add(1)
					t.Errorf("client %d: %v", i, err)
					return
				case st == 200:
					ok.Add(1)
					mu.Lock()
					seen += cost
					mu.Unlock()
				case st == 402:
					refused.Add(1)
					misses++
					time.Sleep(100 * time.Millisecond)
				default:
					failed.Add(1)
					t.Errorf("client %d: status %d", i, st)
					return
				}
			}
		}()
	}
	wg.Wait()
	// The settlements are written within a few milliseconds of each answer.
	var r recs
	for end := time.Now().Add(10 * time.Second); ; {
		r = c.records(t, hash)
		if int64(r.n[billing.StatusSuccess]) >= ok.Load() || time.Now().After(end) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	charged := r.charged[billing.StatusSuccess]
	t.Logf("%d answered, %d refused (402), %d failed; clients saw $%.9f, records charge %s of the $%.2f limit",
		ok.Load(), refused.Load(), failed.Load(), seen, charged, limit)
	if ok.Load() < 100 {
		t.Fatalf("only %d requests were answered", ok.Load())
	}
	if got := int64(r.n[billing.StatusSuccess]); got != ok.Load() {
		t.Fatalf("%d generation records for %d answered requests", got, ok.Load())
	}
	if usd(charged) > limit {
		t.Fatalf("the key was charged %s across the cluster, more than its limit of $%.2f", charged, limit)
	}
	if math.Abs(seen-usd(charged)) > 1e-9*float64(ok.Load()) {
		t.Fatalf("the clients were told $%.9f, the records charge %s", seen, charged)
	}
	// The key's usage as every gateway reports it.
	for _, g := range c.gws {
		st, _, b, err := call("GET", g.URL+"/api/v1/key", secret, nil)
		if err != nil || st != 200 {
			t.Fatalf("GET /key: %d %s %v", st, b, err)
		}
		var k struct {
			Data struct {
				Usage float64 `json:"usage"`
			} `json:"data"`
		}
		_ = json.Unmarshal(b, &k)
		if math.Abs(k.Data.Usage-usd(charged)) > 1e-9 {
			t.Fatalf("gateway %s reports the key's usage as $%.9f, the records charge %s", g.Addr, k.Data.Usage, charged)
		}
	}
	c.audit(t)
}

// A key disabled through one gateway is refused by the others, a module a
// tenant publishes and activates through one answers from the others, and
// a key's rate limit holds across all of them.
func TestClusterHotSwap(t *testing.T) {
	c := startCluster(t, 3)
	secret, hash := newKey(t, c.gws[0].URL, 1)
	for _, g := range c.gws {
		if st, _, err := chat(g.URL, secret, false, 0); st != 200 || err != nil {
			t.Fatalf("gateway %s: %d %v", g.Addr, st, err)
		}
	}
	start := time.Now()
	st, _, b, err := call("PATCH", c.gws[0].URL+"/api/v1/keys/"+hash, Key, map[string]any{"disabled": true})
	if err != nil || st != 200 {
		t.Fatalf("disable: %d %s %v", st, b, err)
	}
	for _, g := range c.gws[1:] {
		waitFor(t, 10*time.Second, "gateway "+g.Addr+" to refuse the disabled key", func() bool {
			st, _, _ := chat(g.URL, secret, false, 0)
			return st == 401
		})
	}
	t.Logf("the disabled key was refused by every gateway %s after the PATCH", time.Since(start).Round(time.Millisecond))

	// A plugin published and activated through gateway 0.
	wasm, err := os.ReadFile(filepath.Join(gatewaytest.Root(), "build", "examples", "go-native-plugin.wasm"))
	if err != nil {
		t.Fatalf("%v (make build)", err)
	}
	man, err := os.ReadFile(filepath.Join(gatewaytest.Root(), "build", "examples", "go-native-plugin.json"))
	if err != nil {
		t.Fatal(err)
	}
	body := map[string]any{
		"model":    "demo/echo",
		"messages": []map[string]string{{"role": "user", "content": "about the secret-project"}},
		"plugins":  []map[string]any{{"id": "keyword-guardrail-go", "blocked": []string{"secret-project"}}},
	}
	for _, g := range c.gws {
		if st, _, b, _ := call("POST", g.URL+"/api/v1/chat/completions", Key, body); st != 400 {
			t.Fatalf("before publication gateway %s answered %d %s; want 400 (unknown plugin)", g.Addr, st, b)
		}
	}
	start = time.Now()
	st, _, b, err = call("POST", c.gws[0].URL+"/api/v1/modules", Key, map[string]any{
		"manifest": json.RawMessage(man), "wasm": base64.StdEncoding.EncodeToString(wasm), "scope": "account", "activate": true})
	if err != nil || st != 201 {
		t.Fatalf("publish: %d %s %v", st, b, err)
	}
	published := time.Now()
	t.Logf("publishing and activating took %s (its compilation)", published.Sub(start).Round(time.Millisecond))
	for _, g := range c.gws {
		waitFor(t, 30*time.Second, "gateway "+g.Addr+" to run the published plugin", func() bool {
			st, _, _, _ := call("POST", g.URL+"/api/v1/chat/completions", Key, body)
			return st == 403
		})
		t.Logf("gateway %s runs it %s after the publication's answer", g.Addr, time.Since(published).Round(time.Millisecond))
	}

	// Rate limits are shared through Redis: a key allowed 10 requests a
	// minute gets 10 across the three gateways, not 30.
	st, _, b, err = call("POST", c.lb.URL+"/api/v1/keys", Key, map[string]any{"name": "rpm", "rate_limits": map[string]any{"requests_per_minute": 10}})
	if err != nil || st != 201 {
		t.Fatalf("create key: %d %s %v", st, b, err)
	}
	var rk struct {
		Key string `json:"key"`
	}
	_ = json.Unmarshal(b, &rk)
	counts := map[int]int{}
	for i := range 30 {
		st, _, err := chat(c.gws[i%3].URL, rk.Key, false, i)
		if err != nil {
			t.Fatal(err)
		}
		counts[st]++
	}
	if counts[200] != 10 || counts[429] != 20 {
		t.Fatalf("30 requests on a 10-a-minute key spread over 3 gateways: %v; want 10 × 200 and 20 × 429", counts)
	}
	if os.Getenv("CLUSTERTEST_LOG") != "" {
		for _, g := range c.gws {
			t.Logf("log of %s:\n%s", g.Addr, g.Logs())
		}
	}
	t.Logf("the plugin published through one gateway blocked requests on every gateway %s after publication", time.Since(start).Round(time.Millisecond))
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
