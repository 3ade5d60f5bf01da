package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/config"
	"github.com/switchyard/switchyard/host/demo"
	"github.com/switchyard/switchyard/host/gatewaytest"
)

// A plugin's time limit that runs out while its chat sub-request waits for
// the upstream is the plugin's, and says so: the sub-request's error names
// the module and its limit, not "request exceeded the gateway's time limit
// of 30s" (issue 31 item 18), whichever of the two reaches the client (the
// plugin reads the sub-request's error and answers with it, or is
// interrupted itself).
func TestPluginDeadlineInSubRequestNamed(t *testing.T) {
	g := start(t, gatewaytest.Options{Mutate: func(c *config.Config) {
		c.TenantModules = config.TenantModules{TimeoutMS: 1000, ConcurrentCalls: 1, CPUMsPerMinute: 600_000}
	}})
	key := tenant(t, g, "slowsub", `{"memory_pages": 256, "timeout_ms": 1000, "pool_size": 4}`)
	g.Upstreams["alpha"].SetFaults(demo.Faults{Delay: 3 * time.Second})
	st, body := postAs(t, g, key, promptWith("hello", `[{"id":"testplugin","mode":"subchat","sub":[]}]`))
	got := body.Get("choices.0.message.content").Str + body.Get("error.message").Str
	if strings.Contains(got, "gateway's time limit") || !strings.Contains(got, "testplugin") || !strings.Contains(got, "1000 ms") {
		t.Fatalf("%d %s", st, body.Raw)
	}
}
