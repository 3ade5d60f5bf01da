package clients

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Claude Code itself, offline, against the Messages front door: a tool
// round trip in print mode. The demo model calls Bash (the prompt's
// call:Bash with its arguments), Claude Code runs the command and sends
// its output back as a tool_result, and the model's answer quotes it.
func TestClaudeCodeToolRoundTrip(t *testing.T) {
	bin := pinnedCLI(t, "SWITCHYARD_CLAUDE", "claudecode", "claude")
	g := makeRunGateway(t)
	home := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-p", `please call:Bash args:{"command":"echo\tswitchyard-ok"} now`,
		"--model", "demo/agent", "--allowedTools", "Bash")
	cmd.Dir = home
	cmd.Env = []string{
		"HOME=" + home, "PATH=" + os.Getenv("PATH"),
		"ANTHROPIC_BASE_URL=" + strings.TrimSuffix(g.URL, "/v1"),
		"ANTHROPIC_AUTH_TOKEN=" + g.Key,
		"ANTHROPIC_SMALL_FAST_MODEL=demo/agent",
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
	// Both turns went through the gateway and were charged: the one that
	// called Bash and the one that answered from its result.
	// (Two finish reasons, tool_calls and stop: at least two generations.)
	finishes, b := agentFinishes(t, g)
	if !strings.Contains(finishes, "tool_calls") || !strings.Contains(finishes, "stop") {
		t.Fatalf("generations of demo/agent: %s", b)
	}
}
