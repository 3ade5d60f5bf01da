package clients

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/gjson"
)

// claudeBinary is Claude Code's CLI: $SWITCHYARD_CLAUDE, or the pinned one
// `make clients` installs in node/claudecode.
func claudeBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SWITCHYARD_CLAUDE"); p != "" {
		return p
	}
	p := filepath.Join(gatewaytest.Root(), "examples", "clients", "node", "claudecode", "node_modules", ".bin", "claude")
	if _, err := os.Stat(p); err != nil {
		t.Fatal("Claude Code missing: run `make clients` (part of `make test`), or set SWITCHYARD_CLAUDE")
	}
	return p
}

// Claude Code itself, offline, against the Messages front door: a tool
// round trip in print mode. The demo model calls Bash (the prompt's
// call:Bash with its arguments), Claude Code runs the command and sends
// its output back as a tool_result, and the model's answer quotes it.
func TestClaudeCodeToolRoundTrip(t *testing.T) {
	bin := claudeBinary(t)
	// Claude Code's system prompt and tools are some 15,000 tokens: a
	// model with a context for them.
	g, err := gatewaytest.Start(gatewaytest.Options{Quiet: true, ConfigYAML: `demo: false
timeouts: {attempt: 30s, request: 120s}
providers:
  - {slug: alpha, name: alpha, adapter: openai, base_url: "{{url:alpha}}", data_collection: deny, region: us}
models:
  - id: test/agent
    kind: chat
    context_length: 200000
    endpoints:
      - {provider: alpha, upstream_model: echo, max_output: 32000, price: {prompt: 1, completion: 2}}
`})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	home := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-p", `please call:Bash args:{"command":"echo\tswitchyard-ok"} now`,
		"--model", "test/agent", "--allowedTools", "Bash")
	cmd.Dir = home
	cmd.Env = []string{
		"HOME=" + home, "PATH=" + os.Getenv("PATH"),
		"ANTHROPIC_BASE_URL=" + strings.TrimSuffix(g.URL, "/v1"),
		"ANTHROPIC_AUTH_TOKEN=" + g.Key,
		"ANTHROPIC_SMALL_FAST_MODEL=test/agent",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1",
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("claude -p: %v\n%s", err, out)
	}
	t.Logf("claude printed: %s", out)
	// The answer quotes the tool's output: Claude Code ran the command the
	// model asked for and sent the result back.
	if !strings.Contains(string(out), "Tool results:") || !strings.Contains(string(out), "switchyard-ok") {
		t.Fatalf("claude printed %q", out)
	}
	// And the last request carried it as a tool_result of the model's call.
	last := gjson.ParseBytes(g.Upstreams["alpha"].Last().Body)
	calls := last.Get(`messages.#(role=="assistant").tool_calls.0`)
	result := last.Get(`messages.#(role=="tool")`)
	if calls.Get("function.name").Str != "Bash" || result.Get("tool_call_id").Str != calls.Get("id").Str || !strings.Contains(result.Get("content").Raw, "switchyard-ok") {
		t.Fatalf("last upstream request %s", last.Get("messages").Raw)
	}
}
