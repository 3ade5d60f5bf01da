package server_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/config"
	"github.com/switchyard/switchyard/host/gatewaytest"
)

// TestAttackFigures measures issue 31's attacks (items 1–4) as bounded
// scenarios, for the before/after table in docs/security.md. It asserts
// nothing: it logs one FIGURE line per item, and runs only when
// SWITCHYARD_ATTACK_FIGURES=1. The file uses only what the test harness
// had at the base (aa00f09), so the same file and command run on
// both commits:
//
//	SWITCHYARD_ATTACK_FIGURES=1 nice -n 10 go test -count=1 -run TestAttackFigures -v ./host/server | grep FIGURE
//
// Every scenario stops by itself in count and time.
func TestAttackFigures(t *testing.T) {
	if os.Getenv("SWITCHYARD_ATTACK_FIGURES") != "1" {
		t.Skip("set SWITCHYARD_ATTACK_FIGURES=1 to measure")
	}
	figure := func(item, format string, args ...any) {
		t.Logf("FIGURE item %s: %s", item, fmt.Sprintf(format, args...))
	}

	// Item 1: a tenant sends requests through a gateway-wide plugin that
	// spins until its time limit (300 ms); the tenant's module-time budget
	// is 3 s a minute. 30 sequential requests: how many ran the plugin to
	// its limit (module time the tenant took) and how many were refused.
	t.Run("1 gateway plugin metered", func(t *testing.T) {
		g := start(t, gatewaytest.Options{Mutate: func(c *config.Config) {
			c.TenantModules.CPUMsPerMinute = 3000
		}})
		wasmPath, mf := testPlugin(t)
		mf = strings.Replace(mf, `"timeout_ms": 1000`, `"timeout_ms": 300`, 1)
		if resp, body := publish(t, g, g.Key, wasmPath, mf, "global", true); resp.StatusCode != http.StatusCreated {
			t.Fatalf("publish: %d %s", resp.StatusCode, body.Raw)
		}
		_, key := newAccount(t, g, "spinner", 100_000_000_000)
		codes := map[int]int{}
		began := time.Now()
		for range 30 {
			resp, _ := call(t, g, key, "/chat/completions", withPlugins(`[{"id":"testplugin","mode":"spin"}]`))
			codes[resp.StatusCode]++
		}
		figure("1", "30 requests of a tenant through a spinning gateway-wide plugin (300 ms limit, 3 s/min budget): %d ran to the limit (502), %d refused (429), all statuses %v, %.1f s", codes[502], codes[429], codes, time.Since(began).Seconds())
	})

	// Item 2: a tenant publishes 24 modules under distinct names, then
	// tries to delete one.
	t.Run("2 publishing", func(t *testing.T) {
		g := start(t, gatewaytest.Options{})
		wasmPath, mf := testPlugin(t)
		_, key := newAccount(t, g, "publisher", 100_000_000_000)
		created, refused := 0, 0
		for i := range 24 {
			m := strings.Replace(mf, `"name": "testplugin"`, fmt.Sprintf(`"name": "tp%d"`, i), 1)
			resp, _ := publish(t, g, key, wasmPath, m, "account", true)
			if resp.StatusCode == http.StatusCreated {
				created++
			} else {
				refused++
			}
		}
		resp, _, err := g.Request(http.MethodDelete, "/modules/tp0", "", "Authorization", "Bearer "+key)
		del := -1
		if err == nil {
			del = resp.StatusCode
		}
		figure("2", "24 publishes by one tenant: %d created, %d refused; DELETE /modules/tp0: %d", created, refused, del)
	})

	// Item 3: a key limited to 10 requests a minute sends 20 requests
	// that each run a two-turn server-tool loop: upstream calls made.
	t.Run("3 sub-requests and rate limits", func(t *testing.T) {
		g := start(t, gatewaytest.Options{})
		key := limitedKey(t, g, "rpm10", `{"requests_per_minute":10}`)
		up := g.Upstreams["alpha"]
		before := up.Count()
		ok := 0
		for range 20 {
			resp, _ := call(t, g, key, "/chat/completions", toolsBody("call:datetime", "", ""))
			if resp.StatusCode == http.StatusOK {
				ok++
			}
		}
		figure("3", "key limited to 10 requests/min, 20 two-turn server-tool requests: %d upstream calls, %d answered 200", up.Count()-before, ok)
	})

	// Item 4: an attacker tenant parks 8 calls of a gateway-wide plugin
	// (pool of 4) on a page that sends one byte a second; another tenant
	// fetches a fast page through the same plugin for 6 s.
	t.Run("4 shared pool", func(t *testing.T) {
		stopSlow := make(chan struct{})
		slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusOK)
			for range 10 {
				select {
				case <-stopSlow:
					return
				case <-time.After(time.Second):
				}
				_, _ = w.Write([]byte("x"))
				w.(http.Flusher).Flush()
			}
		}))
		fast := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) }))
		defer func() { close(stopSlow); slow.CloseClientConnections(); slow.Close(); fast.Close() }()
		g := start(t, gatewaytest.Options{AllowPrivateNetworks: true})
		wasmPath, mf := testPlugin(t)
		mf = strings.Replace(mf, `"timeout_ms": 1000`, `"timeout_ms": 30000`, 1)
		if resp, body := publish(t, g, g.Key, wasmPath, mf, "global", true); resp.StatusCode != http.StatusCreated {
			t.Fatalf("publish: %d %s", resp.StatusCode, body.Raw)
		}
		_, attacker := newAccount(t, g, "slowloris", 100_000_000_000)
		_, victim := newAccount(t, g, "victim", 100_000_000_000)
		fetch := func(url string) string {
			return withPlugins(`[{"id":"testplugin","mode":"fetch","url":"` + url + `"}]`)
		}
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() { defer wg.Done(); call(t, g, attacker, "/chat/completions", fetch(slow.URL)) }()
		}
		time.Sleep(300 * time.Millisecond) // the attacker's calls take the pool
		var served atomic.Int64
		end := time.Now().Add(6 * time.Second)
		for time.Now().Before(end) {
			resp, body := call(t, g, victim, "/chat/completions", fetch(fast.URL))
			if resp.StatusCode == http.StatusOK && strings.Contains(body, "ok") {
				served.Add(1)
			}
		}
		wg.Wait()
		figure("4", "victim's fetches through the shared plugin in 6 s while 8 attacker calls read a 1 byte/s page: %d served (%.1f/s)", served.Load(), float64(served.Load())/6)
	})
}
