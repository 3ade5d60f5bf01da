package server_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/config"
	"github.com/switchyard/switchyard/host/demo"
	"github.com/switchyard/switchyard/host/gatewaytest"
)

// TestQuietStreamClientGoneCancelsUpstream: a client that leaves while the
// upstream is quiet is noticed by the keep-alive it no longer takes: the
// upstream is cancelled long before its next chunk, and the generation is
// settled once, as cancelled.
func TestQuietStreamClientGoneCancelsUpstream(t *testing.T) {
	g := start(t, gatewaytest.Options{Mutate: func(c *config.Config) {
		c.KeepAlive = config.Duration(20 * time.Millisecond)
	}})
	up := g.Upstreams["alpha"]
	up.SetFaults(demo.Faults{ChunkDelay: time.Minute}) // one chunk, then a minute of silence
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", g.URL+"/chat/completions",
		strings.NewReader(`{"model":"test/chat","stream":true,"messages":[{"role":"user","content":"one two three"}]}`))
	req.Header.Set("Authorization", "Bearer "+g.Key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	id := resp.Header.Get("X-Generation-Id")
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(line, "data: ") { // the role chunk
			break
		}
	}
	cancel()
	resp.Body.Close()
	deadline := time.Now().Add(10 * time.Second)
	for up.Cancelled() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the quiet upstream was not cancelled after the client went away")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if gen := generation(t, g, g.Key, id); gen.Get("status").Str != "cancelled" {
		t.Fatalf("generation %s, want cancelled", gen.Raw)
	}
}

// BenchmarkStreamChat is one streamed request over loopback, read to its
// [DONE]: the pump's per-chunk work on the demo upstream's chunks (one per
// word of the prompt, then finish and usage), with the dispatch and
// settlement every request has.
func BenchmarkStreamChat(b *testing.B) {
	g, err := gatewaytest.Start(gatewaytest.Options{Quiet: true})
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	body := `{"model":"test/chat","stream":true,"messages":[{"role":"user","content":"` +
		strings.TrimSpace(strings.Repeat("hello ", 20)) + `"}]}`
	b.ReportAllocs()
	for b.Loop() {
		req, _ := http.NewRequest(http.MethodPost, g.URL+"/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+g.Key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		out, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), "data: [DONE]") {
			b.Fatalf("%v %s", err, out)
		}
	}
}

// BenchmarkOpenStreams holds 200 streams open on a quiet upstream and
// reports the goroutines and the heap and stack bytes each adds. The
// figures include the test's client and the demo upstream (the same for
// every version of the gateway): they compare versions of the pump, not
// gateways. Run it with -benchtime=1x.
func BenchmarkOpenStreams(b *testing.B) {
	const n = 200
	g, err := gatewaytest.Start(gatewaytest.Options{Quiet: true, Mutate: func(c *config.Config) {
		c.KeepAlive = config.Duration(200 * time.Millisecond) // the streams' end is noticed soon
	}})
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	up := g.Upstreams["alpha"]
	up.SetFaults(demo.Faults{ChunkDelay: time.Minute})
	body := `{"model":"test/chat","stream":true,"messages":[{"role":"user","content":"one two three"}]}`
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}}
	inUse := func() (uint64, int) {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc + m.StackInuse, runtime.NumGoroutine()
	}
	for b.Loop() {
		mem0, gr0 := inUse()
		ctx, cancel := context.WithCancel(context.Background())
		var open []*http.Response
		for range n {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, g.URL+"/chat/completions", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+g.Key)
			resp, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			open = append(open, resp)
		}
		for _, resp := range open { // every stream has its first chunk
			br := bufio.NewReader(resp.Body)
			for {
				line, err := br.ReadString('\n')
				if err != nil {
					b.Fatal(err)
				}
				if strings.HasPrefix(line, "data: ") {
					break
				}
			}
		}
		mem1, gr1 := inUse()
		b.ReportMetric(float64(gr1-gr0)/n, "goroutines/stream")
		b.ReportMetric(float64(int64(mem1)-int64(mem0))/n, "bytes/stream")
		cancel()
		for _, resp := range open {
			resp.Body.Close()
		}
		deadline := time.Now().Add(30 * time.Second)
		for up.Cancelled() < int64(n) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
	}
}
