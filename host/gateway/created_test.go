package gateway_test

import (
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/gjson"
)

// GET /models' created: the configuration's date, or when the gateway
// first listed the model — never 0, and not moved by a reload.
func TestModelCreated(t *testing.T) {
	yml := func(extra string) string {
		return catalogYAML(1, 2) + `  - id: test/dated
    kind: chat
    created: 2024-07-18
    endpoints:
      - {provider: alpha, upstream_model: echo, price: {prompt: 1, completion: 2}}
` + extra
	}
	before := time.Now().Unix()
	g, err := gatewaytest.Start(gatewaytest.Options{ConfigYAML: yml(""), ConfigFile: true, Quiet: true})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	created := func() map[string]int64 {
		t.Helper()
		_, b, err := g.Request("GET", "/models", "")
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int64{}
		for _, m := range gjson.GetBytes(b, "data").Array() {
			out[m.Get("id").Str] = m.Get("created").Int()
		}
		return out
	}
	first := created()
	if got := first["test/dated"]; got != time.Date(2024, 7, 18, 0, 0, 0, 0, time.UTC).Unix() {
		t.Errorf("test/dated created %d, want 2024-07-18 (1721260800)", got)
	}
	if got := first["test/chat"]; got < before || got > time.Now().Unix() {
		t.Errorf("test/chat created %d, want the time of the start (%d…)", got, before)
	}
	time.Sleep(1100 * time.Millisecond) // a second later, so a re-stamp would show
	if err := g.WriteConfig(yml(`  - id: test/later
    kind: chat
    endpoints:
      - {provider: alpha, upstream_model: echo, price: {prompt: 1, completion: 2}}
`)); err != nil {
		t.Fatal(err)
	}
	if st, body := reload(t, g, g.Key); st != 200 {
		t.Fatalf("reload: %d %s", st, body.Raw)
	}
	second := created()
	if second["test/chat"] != first["test/chat"] {
		t.Errorf("test/chat created moved from %d to %d on a reload", first["test/chat"], second["test/chat"])
	}
	if second["test/later"] <= first["test/chat"] {
		t.Errorf("test/later created %d, want the reload's time, after %d", second["test/later"], first["test/chat"])
	}
}
