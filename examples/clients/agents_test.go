package clients

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/switchyard/switchyard/host/config"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/gjson"
)

// What the coding-agent tests (Claude Code, Codex) share: the pinned CLI,
// the gateway `make run` serves, and the turns it recorded.

// pinnedCLI is the agent's CLI: $env, or bin of the pinned copy `make
// clients` installs in node/dir.
func pinnedCLI(t *testing.T, env, dir, bin string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		return p
	}
	p := filepath.Join(gatewaytest.Root(), "examples", "clients", "node", dir, "node_modules", ".bin", bin)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s missing: run `make clients` (part of `make test`), or set %s", bin, env)
	}
	return p
}

// makeRunGateway is what `make run` serves: the embedded default
// configuration, its offline demo provider, and demo/agent, the model with
// a context for the agents' 15,000-token prompts.
func makeRunGateway(t *testing.T) *gatewaytest.Gateway {
	t.Helper()
	g, err := gatewaytest.Start(gatewaytest.Options{Quiet: true, ConfigYAML: string(config.Default())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	return g
}

// agentFinishes is the finish reasons of the generations of demo/agent
// the gateway recorded, as a JSON array.
func agentFinishes(t *testing.T, g *gatewaytest.Gateway) (string, []byte) {
	t.Helper()
	_, b, err := g.Request("GET", "/generations?model=demo/agent", "")
	if err != nil {
		t.Fatal(err)
	}
	return gjson.GetBytes(b, "data.#.finish_reason").Raw, b
}
