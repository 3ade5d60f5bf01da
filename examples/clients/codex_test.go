package clients

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// codexBinary is the Codex CLI (npm @openai/codex) to run: $CODEX_BIN, or
// codex on the PATH. It is not among the npm dependencies of `make
// clients` (its native binary is some 400 MB), so the test skips without it.
func codexBinary(t *testing.T) string {
	if bin := os.Getenv("CODEX_BIN"); bin != "" {
		return bin
	}
	bin, err := exec.LookPath("codex")
	if err != nil {
		t.Skip("Codex CLI not installed (npm i -g @openai/codex, or set CODEX_BIN)")
	}
	return bin
}

// TestCodexCLI runs `codex exec` against the gateway's Responses API
// (wire_api = "responses"), offline: the demo model answers, Codex prints
// the answer. A scratch HOME and CODEX_HOME keep the user's own away.
func TestCodexCLI(t *testing.T) {
	bin := codexBinary(t)
	g := gateway(t)
	home := t.TempDir()
	codexHome := filepath.Join(home, ".codex")
	if err := os.MkdirAll(codexHome, 0o700); err != nil {
		t.Fatal(err)
	}
	config := `model = "test/chat"
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
	// What Codex sent reached the upstream as a chat request.
	up := gjson.ParseBytes(g.Upstreams["alpha"].Last().Body)
	if !up.Get("messages").IsArray() || !up.Get("stream").Bool() {
		t.Fatalf("upstream body %s", up.Raw)
	}

	// A tool round trip: the demo model calls Codex's exec_command
	// (function_call), Codex runs it and sends function_call_output, the
	// model answers quoting the result. Whether the sandbox lets the
	// command run here or not, its output goes back as the call's result.
	out := run(`call:exec_command args:{"cmd":"pwd"}`)
	up = gjson.ParseBytes(g.Upstreams["alpha"].Last().Body)
	msgs := up.Get("messages").Array()
	var callID string
	for _, m := range msgs {
		if m.Get("role").Str == "assistant" && m.Get("tool_calls.0.function.name").Str == "exec_command" {
			callID = m.Get("tool_calls.0.id").Str
		}
	}
	last := msgs[len(msgs)-1]
	if callID == "" || last.Get("role").Str != "tool" || last.Get("tool_call_id").Str != callID {
		t.Fatalf("no function_call_output came back for the call:\n%s\n%s", up.Get("messages").Raw, out)
	}
	if !strings.Contains(out, "Tool results:") {
		t.Fatalf("codex did not print the answer after the tool:\n%s", out)
	}
}
