// Command loadbench measures what the gateway adds to a request: it runs a
// real gateway (host/gatewaytest) in front of a zero-latency fake upstream on
// loopback and times the same requests sent to the upstream directly and
// through the gateway. It reports p50/p99 added latency, requests per second
// and memory, for JSON and streaming chat at 1 KB and 10 KB bodies.
//
// Both paths share this process and its two cores, so absolute figures are
// this machine's; the difference between the paths is the gateway's cost.
package main

import (
	"bytes"
	"encoding/base64"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/switchyard/switchyard/host/store/pgtest"
)

func main() {
	n := flag.Int("n", 2000, "sequential requests per scenario (latency)")
	conc := flag.Int("c", 16, "concurrent clients for the throughput run")
	dur := flag.Duration("d", 3*time.Second, "duration of each throughput run")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the gateway scenarios to this file")
	memprofile := flag.String("memprofile", "", "write an allocation profile (every allocation since start) to this file at the end")
	only := flag.String("only", "", "run only the scenario with this name (e.g. \"chat json 1KB\", \"frontdoors\" for chat against Messages and Responses, \"peerrow\" for peerbench's headline columns of chat and Messages on an Anthropic-format upstream, or \"cluster\" for bbolt against PostgreSQL)")
	rounds := flag.Int("rounds", 3, "with -only frontdoors or peerrow: rounds to take the median of")
	frontdoor := flag.String("frontdoor", "", "with -only frontdoors: run the front-door scenarios whose name contains this (e.g. \"stream (native)\")")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		must(err)
		must(pprof.StartCPUProfile(f))
		defer pprof.StopCPUProfile()
	}
	if *memprofile != "" {
		defer func() {
			f, err := os.Create(*memprofile)
			must(err)
			must(pprof.Lookup("allocs").WriteTo(f, 0))
			must(f.Close())
		}()
	}

	// test/chat has an 8K context (context-compression is on by default
	// for it and must check the prompt fits); test/large the same
	// endpoint with 128K, where a 10 KB prompt provably fits by its size.
	yml := gatewaytest.DefaultYAML([]string{"bench"}) + "  - id: test/large\n    kind: chat\n    context_length: 128000\n    endpoints:\n" +
		"      - {provider: bench, upstream_model: echo, max_output: 1024, price: {prompt: 1, completion: 2}}\n"
	g, err := gatewaytest.Start(gatewaytest.Options{Providers: []string{"bench"}, ConfigYAML: yml, Quiet: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadbench:", err)
		os.Exit(1)
	}
	defer g.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxIdleConns: 256}}
	upstream := g.UpstreamURL["bench"]

	fmt.Printf("Switchyard load benchmark — %s, GOMAXPROCS=%d, %d sequential requests per scenario, %d clients × %s for throughput\n\n",
		runtime.Version(), runtime.GOMAXPROCS(0), *n, *conc, *dur)
	fmt.Printf("%-22s %10s %10s %10s %10s %12s %12s %10s\n", "scenario", "direct p50", "gw p50", "added p50", "added p99", "direct rps", "gateway rps", "gw/direct")
	for _, sc := range []struct {
		name   string
		model  string
		size   int
		stream bool
	}{
		{"chat json 1KB", "test/chat", 1 << 10, false},
		{"chat json 10KB", "test/chat", 10 << 10, false},
		{"chat json 10KB 128K", "test/large", 10 << 10, false},
		{"chat stream 1KB", "test/chat", 1 << 10, true},
		{"chat stream 10KB", "test/chat", 10 << 10, true},
	} {
		if *only != "" && sc.name != *only {
			continue
		}
		gwBody := body(sc.model, sc.size, sc.stream)
		upBody := body("echo", sc.size, sc.stream)
		gw := func() error { return do(client, g.URL+"/chat/completions", g.Key, gwBody) }
		direct := func() error { return do(client, upstream+"/chat/completions", "", upBody) }
		// Warm both paths: connections, instance pools, caches.
		for i := 0; i < 200; i++ {
			must(gw())
			must(direct())
		}
		d := latencies(*n, direct)
		w := latencies(*n, gw)
		drps := throughput(*conc, *dur, direct)
		wrps := throughput(*conc, *dur, gw)
		fmt.Printf("%-22s %10s %10s %10s %10s %12.0f %12.0f %9.0f%%\n", sc.name,
			fmtDur(pct(d, 50)), fmtDur(pct(w, 50)), fmtDur(pct(w, 50)-pct(d, 50)), fmtDur(pct(w, 99)-pct(d, 99)),
			drps, wrps, 100*wrps/drps)
	}
	if *only == "" {
		pluginScenarios(client, g, *n)
	}
	if *only == "" || *only == "frontdoors" {
		frontDoorScenarios(client, *frontdoor, *rounds, *n, *conc, *dur)
	}
	if *only == "peerrow" {
		peerRows(client, *rounds, *n, *conc, *dur)
	}
	if *only == "" || *only == "cluster" {
		clusterScenarios(client, upstream, g, *n, *conc, *dur)
	}
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	fmt.Printf("\nmemory (gateway, fake upstream and load generator in one process): heap in use %.1f MiB, Go runtime total %.1f MiB, %s\n",
		float64(ms.HeapInuse)/(1<<20), float64(ms.Sys)/(1<<20), rss())
	fmt.Println("added = gateway latency − direct latency for the same request to the same upstream (model is renamed by the adapter).")
}

// body is a chat request of about size bytes.
func body(model string, size int, stream bool) []byte {
	pad := size - 160
	if pad < 1 {
		pad = 1
	}
	return []byte(fmt.Sprintf(`{"model":%q,"stream":%t,"temperature":0.7,"messages":[{"role":"system","content":%q},{"role":"user","content":"Say hello."}]}`,
		model, stream, strings.Repeat("lorem ipsum ", pad/12+1)[:pad]))
}

func do(c *http.Client, url, key string, b []byte) error { return doHeaders(c, url, key, b, nil) }

// doHeaders posts b with the extra headers (an upstream's own auth).
func doHeaders(c *http.Client, url, key string, b []byte, headers map[string]string) error {
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != 200 {
		return fmt.Errorf("%s: status %d", url, resp.StatusCode)
	}
	return nil
}

func latencies(n int, f func() error) []time.Duration {
	out := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		t := time.Now()
		must(f())
		out = append(out, time.Since(t))
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func throughput(conc int, d time.Duration, f func() error) float64 {
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	stop := time.Now().Add(d)
	start := time.Now()
	for i := 0; i < conc; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := 0
			for time.Now().Before(stop) {
				must(f())
				k++
			}
			mu.Lock()
			total += k
			mu.Unlock()
		}()
	}
	wg.Wait()
	return float64(total) / time.Since(start).Seconds()
}

func pct(s []time.Duration, p int) time.Duration { return s[(len(s)-1)*p/100] }

func fmtDur(d time.Duration) string {
	if d < time.Millisecond && d > -time.Millisecond {
		return fmt.Sprintf("%.0fµs", float64(d)/1e3)
	}
	return fmt.Sprintf("%.2fms", float64(d)/1e6)
}

func rss() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "RSS unknown"
	}
	var parts []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") || strings.HasPrefix(l, "VmHWM:") {
			parts = append(parts, strings.Join(strings.Fields(l), " "))
		}
	}
	return strings.Join(parts, ", ")
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadbench:", err)
		os.Exit(1)
	}
}

// pluginScenarios measures the request pipeline: the same 1 KB chat with 0,
// 1 and 3 Wasm plugins (each runs a pre_request and a post_response hook).
func pluginScenarios(client *http.Client, g *gatewaytest.Gateway, n int) {
	root := gatewaytest.Root()
	bin, err := os.ReadFile(filepath.Join(root, "build", "testdata", "testplugin.wasm"))
	must(err)
	mf, err := os.ReadFile(filepath.Join(root, "host", "pipeline", "testdata", "testplugin", "manifest.json"))
	must(err)
	for _, name := range []string{"bench1", "bench2", "bench3"} {
		m := strings.Replace(string(mf), `"name": "testplugin"`, `"name": "`+name+`"`, 1)
		body := fmt.Sprintf(`{"manifest":%s,"wasm":%q,"scope":"global","activate":true}`, m, base64.StdEncoding.EncodeToString(bin))
		req, _ := http.NewRequest(http.MethodPost, g.URL+"/modules", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+g.Key)
		resp, err := client.Do(req)
		must(err)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			must(fmt.Errorf("publish %s: status %d", name, resp.StatusCode))
		}
	}
	fmt.Printf("\n%-22s %10s %10s %14s %14s\n", "pipeline (1KB json)", "p50", "p99", "added p50", "added p99")
	var base []time.Duration
	for _, k := range []int{0, 1, 3} {
		var list []string
		for i := 1; i <= k; i++ {
			list = append(list, fmt.Sprintf(`{"id":"bench%d"}`, i))
		}
		b := body("test/chat", 1<<10, false)
		b = []byte(strings.Replace(string(b), `{"model"`, `{"plugins":[`+strings.Join(list, ",")+`],"model"`, 1))
		f := func() error { return do(client, g.URL+"/chat/completions", g.Key, b) }
		for i := 0; i < 200; i++ {
			must(f())
		}
		l := latencies(n, f)
		if k == 0 {
			base = l
		}
		fmt.Printf("%-22s %10s %10s %14s %14s\n", fmt.Sprintf("%d plugin(s)", k), fmtDur(pct(l, 50)), fmtDur(pct(l, 99)),
			fmtDur(pct(l, 50)-pct(base, 50)), fmtDur(pct(l, 99)-pct(base, 99)))
	}
}

// clusterScenarios compares the gateway on its bbolt file with the same
// gateway on PostgreSQL (cluster mode) in the same run: added latency, and
// gateway CPU per request = process CPU per request through the gateway −
// process CPU per request sent to the upstream directly (the load generator
// and the fake upstream cost the same in both). PostgreSQL's own CPU is its
// server's, not the gateway's, and is not counted.
func clusterScenarios(client *http.Client, upstream string, bolt *gatewaytest.Gateway, n, conc int, dur time.Duration) {
	fmt.Printf("\ncluster mode: the same gateway on bbolt and on PostgreSQL (one throwaway server, fsync off)\n")
	if pgtest.Skip() {
		fmt.Println("  skipped: SWITCHYARD_SKIP_PG=1")
		return
	}
	srv, err := pgtest.Launch()
	if err != nil {
		fmt.Println("  skipped:", err)
		return
	}
	defer srv.Close()
	dsn, err := srv.CreateDB()
	must(err)
	// The PostgreSQL gateway's upstream must be the same fake server.
	pg, err := gatewaytest.Start(gatewaytest.Options{Providers: []string{"bench"}, Quiet: true, StoreDSN: dsn})
	must(err)
	defer pg.Close()
	fmt.Printf("%-22s %-9s %10s %10s %12s %14s\n", "scenario", "store", "added p50", "added p99", "gateway rps", "gw CPU µs/req")
	for _, sc := range []struct {
		name   string
		stream bool
	}{{"chat json 1KB", false}, {"chat stream 1KB", true}} {
		upBody := body("echo", 1<<10, sc.stream)
		gwBody := body("test/chat", 1<<10, sc.stream)
		direct := func() error { return do(client, upstream+"/chat/completions", "", upBody) }
		directCPU, _ := cpuPerRequest(conc, dur, direct)
		dl := latencies(n, direct)
		var cpus [2]float64
		for i, g := range []*gatewaytest.Gateway{bolt, pg} {
			up := g.UpstreamURL["bench"]
			d := func() error { return do(client, up+"/chat/completions", "", upBody) }
			gw := func() error { return do(client, g.URL+"/chat/completions", g.Key, gwBody) }
			for j := 0; j < 200; j++ {
				must(gw())
				must(d())
			}
			w := latencies(n, gw)
			cpu, rps := cpuPerRequest(conc, dur, gw)
			cpus[i] = cpu - directCPU
			fmt.Printf("%-22s %-9s %10s %10s %12.0f %14.1f\n", sc.name, []string{"bbolt", "postgres"}[i],
				fmtDur(pct(w, 50)-pct(dl, 50)), fmtDur(pct(w, 99)-pct(dl, 99)), rps, cpus[i])
		}
		fmt.Printf("%-22s %-9s %45s %.2f×\n", "", "ratio", "gateway CPU per request, postgres / bbolt:", cpus[1]/cpus[0])
	}
}

// cpuPerRequest runs f from conc clients for d and returns the process CPU
// time per request (µs) and the requests per second.
func cpuPerRequest(conc int, d time.Duration, f func() error) (float64, float64) {
	var before, after syscall.Rusage
	must(syscall.Getrusage(syscall.RUSAGE_SELF, &before))
	start := time.Now()
	rps := throughput(conc, d, f)
	must(syscall.Getrusage(syscall.RUSAGE_SELF, &after))
	reqs := rps * time.Since(start).Seconds()
	cpu := time.Duration(after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano())
	return float64(cpu.Microseconds()) / reqs, rps
}

// allocsPerRequest makes n sequential requests with f and returns the
// process's heap allocations and allocated bytes per request: unlike CPU
// time, a figure the machine's load does not move, so the difference
// between two paths is evidence even on a busy machine.
func allocsPerRequest(n int, f func() error) (allocs, bytes float64) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := 0; i < n; i++ {
		must(f())
	}
	runtime.ReadMemStats(&after)
	return float64(after.Mallocs-before.Mallocs) / float64(n), float64(after.TotalAlloc-before.TotalAlloc) / float64(n)
}
