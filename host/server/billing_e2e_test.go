package server_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/demo"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/gjson"
)

func generation(t *testing.T, g *gatewaytest.Gateway, key, id string) gjson.Result {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, b, err := g.Request("GET", "/generation?id="+id, "", "Authorization", "Bearer "+key)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode == 200 {
			return gjson.GetBytes(b, "data")
		}
		if time.Now().After(deadline) {
			t.Fatalf("generation %s: %d %s", id, resp.StatusCode, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestUsageCostAndGeneration(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	resp, body := post(t, g, "/chat/completions", hello)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body.Raw)
	}
	cost := body.Get("usage.cost").Float()
	// test/chat on alpha: $1/M prompt, $2/M completion.
	want := (body.Get("usage.prompt_tokens").Float()*1 + body.Get("usage.completion_tokens").Float()*2) / 1e6
	if cost <= 0 || fmt.Sprintf("%.9f", cost) != fmt.Sprintf("%.9f", want) {
		t.Fatalf("usage.cost %v, want %v (%s)", cost, want, body.Get("usage").Raw)
	}
	gen := generation(t, g, g.Key, body.Get("id").Str)
	if gen.Get("model").Str != "test/chat" || gen.Get("provider_name").Str != "alpha" || gen.Get("status").Str != "success" {
		t.Fatalf("generation %s", gen.Raw)
	}
	if gen.Get("total_cost").Float() != cost {
		t.Fatalf("generation cost %v, response said %v", gen.Get("total_cost").Float(), cost)
	}

	// Streams carry the cost on the final chunk.
	raw := readStream(t, g, `{"model":"test/chat","stream":true,"messages":[{"role":"user","content":"cost me"}]}`)
	var last string
	for _, l := range strings.Split(raw, "\n") {
		if d, ok := strings.CutPrefix(l, "data: "); ok && d != "[DONE]" {
			last = d
		}
	}
	if gjson.Get(last, "usage.cost").Float() <= 0 {
		t.Fatalf("final chunk has no cost: %s", last)
	}

	// Upstream without usage: counted with the tokenizer, flagged estimated.
	g.Upstreams["alpha"].SetFaults(demo.Faults{NoUsage: true, Reply: "hello world"})
	_, body = post(t, g, "/chat/completions", hello)
	if !body.Get("usage.estimated").Bool() || body.Get("usage.completion_tokens").Int() != 2 {
		t.Fatalf("counted usage %s (\"hello world\" is 2 tokens)", body.Get("usage").Raw)
	}
}

func TestInsufficientCredits(t *testing.T) {
	g := start(t, gatewaytest.Options{Credits: -1})
	resp, body := post(t, g, "/chat/completions", hello)
	wantError(t, resp, body, 402, "")
	if g.Upstreams["alpha"].Count() != 0 {
		t.Fatal("a request without credits reached the upstream")
	}
	resp, body = post(t, g, "/embeddings", `{"model":"test/embed","input":"x"}`)
	wantError(t, resp, body, 402, "")
}

// TestKeyLimitUnderConcurrency: 200 concurrent requests on a key whose limit
// covers 50 holds: exactly 50 succeed, the rest get 402, and the key's usage
// is the sum of the generation records.
func TestKeyLimitUnderConcurrency(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	const req = `{"model":"test/chat","max_tokens":64,"messages":[{"role":"user","content":"one two three"}]}`
	// Measure one request's hold.
	_, body := post(t, g, "/chat/completions", req)
	held := generation(t, g, g.Key, body.Get("id").Str).Get("held").Float()
	if held <= 0 {
		t.Fatalf("no hold recorded: %s", body.Raw)
	}
	limit := held*50 + held/2
	resp, b, err := g.Request("POST", "/keys", fmt.Sprintf(`{"name":"limited","limit":%.9f}`, limit))
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("create key: %v %s", err, b)
	}
	key := gjson.GetBytes(b, "key").Str
	// Every request is in flight at once: the upstream holds its answer.
	g.Upstreams["alpha"].SetFaults(demo.Faults{Delay: 1500 * time.Millisecond})
	var mu sync.Mutex
	codes := map[int]int{}
	var ids []string
	var wg sync.WaitGroup
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, b, err := g.Request("POST", "/chat/completions", req, "Authorization", "Bearer "+key)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			codes[resp.StatusCode]++
			if resp.StatusCode == 200 {
				ids = append(ids, gjson.GetBytes(b, "id").Str)
			} else if resp.StatusCode == 402 && !strings.Contains(gjson.GetBytes(b, "error.message").Str, "limit") {
				t.Errorf("402 does not say the key limit is the cause: %s", b)
			}
		}()
	}
	wg.Wait()
	if codes[200] != 50 || codes[402] != 150 {
		t.Fatalf("status counts %v, want 50×200 and 150×402", codes)
	}
	var sum float64
	var sumNanos int64
	for _, id := range ids {
		c := generation(t, g, key, id).Get("total_cost")
		sum += c.Float()
		var n int64
		fmt.Sscanf(strings.Replace(fmt.Sprintf("%.9f", c.Float()), ".", "", 1), "%d", &n)
		sumNanos += n
	}
	_, kb, _ := g.Request("GET", "/key", "", "Authorization", "Bearer "+key)
	usage := gjson.GetBytes(kb, "data.usage").Float()
	if fmt.Sprintf("%.2f", usage) != fmt.Sprintf("%.2f", sum) || fmt.Sprintf("%.9f", usage) != fmt.Sprintf("%.9f", float64(sumNanos)/1e9) {
		t.Fatalf("key usage %.9f, generations sum to %.9f", usage, sum)
	}
}

func TestAbandonedStreamChargedOnce(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	g.Upstreams["alpha"].SetFaults(demo.Faults{ChunkDelay: 100 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", g.URL+"/chat/completions",
		strings.NewReader(`{"model":"test/chat","stream":true,"messages":[{"role":"user","content":"a b c d e f g h"}]}`))
	req.Header.Set("Authorization", "Bearer "+g.Key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	id := resp.Header.Get("X-Generation-Id")
	br := bufio.NewReader(resp.Body)
	for i := 0; i < 3; i++ { // the role chunk and two words
		if _, err := br.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
		_, _ = br.ReadString('\n')
	}
	cancel()
	resp.Body.Close()
	gen := generation(t, g, g.Key, id)
	if gen.Get("status").Str != "cancelled" || gen.Get("total_cost").Float() <= 0 {
		t.Fatalf("abandoned stream generation %s", gen.Raw)
	}
	if c := gen.Get("tokens.completion_tokens").Int(); c < 1 || c > 30 {
		t.Fatalf("charged %d completion tokens for a stream abandoned after 2 words", c)
	}
	_, kb, _ := g.Request("GET", "/key", "", "Authorization", "Bearer "+g.Key)
	total := gjson.GetBytes(kb, "data.usage").Float()
	time.Sleep(300 * time.Millisecond) // nothing settles it a second time
	_, kb, _ = g.Request("GET", "/key", "", "Authorization", "Bearer "+g.Key)
	if again := gjson.GetBytes(kb, "data.usage").Float(); again != total {
		t.Fatalf("usage moved from %v to %v after the stream was settled", total, again)
	}
}

// TestStreamCutChargesDelivered: a stream the provider cuts after content
// was delivered is charged for that content, once; one cut before any
// content costs nothing.
func TestStreamCutChargesDelivered(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	run := func(cut int) gjson.Result {
		g.Upstreams["alpha"].SetFaults(demo.Faults{CutAfter: cut})
		req, _ := http.NewRequest("POST", g.URL+"/chat/completions", strings.NewReader(`{"model":"test/chat","stream":true,"messages":[{"role":"user","content":"a b c d e f"}]}`))
		req.Header.Set("Authorization", "Bearer "+g.Key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		id := resp.Header.Get("X-Generation-Id")
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return generation(t, g, g.Key, id)
	}
	gen := run(4)
	if gen.Get("status").Str != "error" || gen.Get("total_cost").Float() <= 0 || gen.Get("tokens.completion_tokens").Int() < 1 {
		t.Fatalf("cut after content: %s", gen.Raw)
	}
	gen = run(1) // only the role chunk
	if gen.Get("status").Str != "error" || gen.Get("total_cost").Float() != 0 {
		t.Fatalf("cut before content: %s", gen.Raw)
	}
}
