package clients

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCodexCLI runs `codex exec` against what `make run` serves (the
// embedded default configuration, its offline demo provider and
// demo/agent), through the gateway's Responses API (wire_api =
// "responses"): the demo model answers, Codex prints the answer; then a
// tool round trip. A scratch HOME and CODEX_HOME keep the user's own away.
func TestCodexCLI(t *testing.T) {
	bin := pinnedCLI(t, "CODEX_BIN", "codex", "codex")
	g := makeRunGateway(t)
	home := t.TempDir()
	codexHome := filepath.Join(home, ".codex")
	if err := os.MkdirAll(codexHome, 0o700); err != nil {
		t.Fatal(err)
	}
	config := `model = "demo/agent"
model_provider = "sy"
[model_providers.sy]
name = "Switchyard"
base_url = "` + g.URL + `"
env_key = "SY_KEY"
wire_api = "responses"
`
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(prompt string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, "exec", "--skip-git-repo-check", prompt)
		cmd.Dir = t.TempDir()
		cmd.Env = []string{"HOME=" + home, "CODEX_HOME=" + codexHome, "SY_KEY=" + g.Key, "PATH=" + os.Getenv("PATH")}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("codex exec: %v\n%s", err, out)
		}
		return string(out)
	}
	if out := run("hello from codex"); !strings.Contains(out, "You said: hello from codex") {
		t.Fatalf("codex did not print the gateway's answer:\n%s", out)
	}
	// A tool round trip: the demo model calls Codex's exec_command
	// (function_call), Codex runs it and sends function_call_output, the
	// model answers quoting the result. Whether the sandbox lets the
	// command run here or not, its output goes back as the call's result.
	out := run(`call:exec_command args:{"cmd":"pwd"}`)
	if !strings.Contains(out, "Tool results:") {
		t.Fatalf("codex did not print the answer after the tool:\n%s", out)
	}
	// Both turns went through the gateway and were recorded: the one that
	// called exec_command and the one that answered from its result.
	finishes, b := agentFinishes(t, g)
	if !strings.Contains(finishes, "tool_calls") || strings.Count(finishes, "stop") < 2 {
		t.Fatalf("generations of demo/agent: %s", b)
	}
}
