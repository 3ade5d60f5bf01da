package server_test

import (
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/gatewaytest"
)

// Bodies built to be slow (issue 29): 100,000 messages each with a null
// name (9 MB, through context-compression since test/chat's context is
// small), and 100,000 null fields (in 50,000 messages), are refused or served in work
// linear in their size. The operation count is the bytes the whole gateway
// allocates for a request (a count, not a time), at 10,000 and at 100,000:
// ten times the body may cost at most twenty times as much. Removing the
// nulls one by one allocated the body's size once per null (a hundred
// times as much for ten times the body), and the middle-out drop shifted
// its list once per unit; the client's bound (a minute) ends the test
// should either come back.
func TestHostileBodiesLinear(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	// Modules load on their first call (compiling allocates): not counted.
	if resp, _ := post(t, g, "/chat/completions", `{"model":"test/chat","messages":[{"role":"user","content":"hi","name":null}]}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("warm-up: %d", resp.StatusCode)
	}
	msg := `{"role":"user","content":"` + strings.Repeat("x", 48) + `","name":null},`
	for _, tc := range []struct {
		name string
		body func(n int) string
	}{
		{"messages with a null name", func(n int) string {
			return `{"model":"test/chat","messages":[` + strings.Repeat(msg, n-1) + strings.TrimSuffix(msg, ",") + `]}`
		}},
		{"null fields", func(n int) string {
			return `{"model":"test/chat","user":null,"messages":[` + strings.Repeat(`{"role":"assistant","content":null,"name":null,"function_call":null},`, n/2) +
				`{"role":"user","content":"hi"}]}`
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var perByte [2]float64
			for i, n := range []int{10000, 100000} {
				body := tc.body(n)
				if len(body) > 10<<20 {
					t.Fatalf("body of %d bytes is over the default 10 MB limit", len(body))
				}
				alloc, status, out := allocated(t, g, body)
				// Served, or refused as too long for the model's context:
				// either way after the body was read, validated and
				// normalised.
				if status != http.StatusOK && status != http.StatusBadRequest {
					t.Fatalf("%d: status %d: %s", n, status, out)
				}
				perByte[i] = float64(alloc) / float64(len(body))
				t.Logf("%d (%d bytes): status %d, %.1f bytes allocated a byte", n, len(body), status, perByte[i])
			}
			if perByte[1] > 2*perByte[0]+8 {
				t.Fatalf("ten times the body allocated %.1f bytes a byte against %.1f: not linear", perByte[1], perByte[0])
			}
		})
	}
}

// allocated posts body and returns the bytes the process allocated for it.
func allocated(t *testing.T, g *gatewaytest.Gateway, body string) (uint64, int, []byte) {
	t.Helper()
	client := &http.Client{Timeout: time.Minute}
	req, _ := http.NewRequest(http.MethodPost, g.URL+"/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+g.Key)
	req.Header.Set("Content-Type", "application/json")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc, resp.StatusCode, out
}
