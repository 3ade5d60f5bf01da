package main

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/config"
	"github.com/switchyard/switchyard/host/gatewaytest"
)

// A tutorialStep is one shell block of docs/plugins.md marked
// `<!-- tutorial -->` (or `<!-- tutorial expect="TEXT" -->`: its output
// must contain TEXT).
type tutorialStep struct {
	line   int
	script string
	expect string
}

var tutorialMark = regexp.MustCompile(`^<!-- tutorial(?: expect="([^"]*)")? -->$`)

// tutorialSteps reads the marked blocks of a page, in order.
func tutorialSteps(page []byte) ([]tutorialStep, error) {
	var steps []tutorialStep
	sc := bufio.NewScanner(bytes.NewReader(page))
	n := 0
	for sc.Scan() {
		n++
		m := tutorialMark.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			continue
		}
		if !sc.Scan() || strings.TrimSpace(sc.Text()) != "```sh" {
			return nil, fmt.Errorf("line %d: a tutorial mark must be followed by a ```sh block", n)
		}
		n++
		st := tutorialStep{line: n, expect: m[1]}
		var b strings.Builder
		for sc.Scan() {
			n++
			if strings.TrimSpace(sc.Text()) == "```" {
				break
			}
			b.WriteString(sc.Text() + "\n")
		}
		st.script = b.String()
		steps = append(steps, st)
	}
	return steps, sc.Err()
}

// TestTutorial follows docs/plugins.md's tutorial as a new user would, its
// commands run as the page shows them: `syctl plugin new` in an empty
// directory, an edit, `make test`, `syctl plugin publish` to a running
// gateway, a curl that shows the plugin block a request, the plugin's
// counter on /metrics, and a hot swap to v2 while requests keep coming,
// none of which may fail (issue 37). The page's commands are for Go; the
// page says a Rust, C or AssemblyScript project differs only in the file
// edited, which the other runs check by changing just that (and --lang).
// The AssemblyScript project's make uses the compiler `make -C examples`
// installed (ASC in the environment, as the page allows), so the test needs
// no network.
func TestTutorial(t *testing.T) {
	root := gatewaytest.Root()
	page, err := os.ReadFile(filepath.Join(root, "docs", "plugins.md"))
	if err != nil {
		t.Fatal(err)
	}
	steps, err := tutorialSteps(page)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) < 6 {
		t.Fatalf("docs/plugins.md has %d tutorial blocks; the tutorial has at least 6", len(steps))
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	syctl := builtSyctl(t)
	for _, lang := range []struct{ lang, file string }{{"go", "plugin.go"}, {"rust", "src/lib.rs"}, {"c", "plugin.c"}, {"assemblyscript", "assembly/index.ts"}} {
		t.Run(lang.lang, func(t *testing.T) {
			steps := steps
			if lang.lang != "go" {
				steps = slices.Clone(steps)
				for i := range steps {
					steps[i].script = strings.ReplaceAll(steps[i].script, "--lang go", "--lang "+lang.lang)
					steps[i].script = strings.ReplaceAll(steps[i].script, " plugin.go", " "+lang.file)
				}
			}
			followTutorial(t, root, syctl, steps)
		})
	}
}

// followTutorial runs steps in an empty directory against a gateway of
// its own.
func followTutorial(t *testing.T, root, syctl string, steps []tutorialStep) {
	// The page's model, demo/echo, served by the test's fake upstream.
	yml := strings.Replace(gatewaytest.DefaultYAML([]string{"alpha"}), "id: test/chat", "id: demo/echo", 1)
	g, err := gatewaytest.Start(gatewaytest.Options{Quiet: true, ConfigYAML: yml,
		Mutate: func(c *config.Config) { c.Metrics.Listen = "127.0.0.1:0" }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)

	work := t.TempDir()
	bin := filepath.Join(work, ".bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(syctl, filepath.Join(bin, "syctl")); err != nil {
		t.Fatal(err)
	}
	goroot := filepath.Join(runtime.GOROOT(), "bin")
	env := append(os.Environ(),
		"PATH="+bin+string(os.PathListSeparator)+goroot+string(os.PathListSeparator)+os.Getenv("PATH"),
		"SWITCHYARD_URL="+g.URL, "SWITCHYARD_KEY="+g.Key, "SWITCHYARD_METRICS_URL="+g.MetricsURL,
		"SWITCHYARD_ROOT="+root,
		// The project stands alone: no workspace, no toolchain switch, no
		// network.
		"GOWORK=off", "GOFLAGS=", "GOTOOLCHAIN=local", "GOPROXY=off",
		// An AssemblyScript project's make takes its compiler from ASC
		// (the one make -C examples installed) instead of npm install.
		"ASC="+filepath.Join(root, "examples", "as-native-plugin", "node_modules", ".bin", "asc"))
	// Each block runs in the directory the one before it ended in.
	cwdFile := filepath.Join(work, ".cwd")
	if err := os.WriteFile(cwdFile, []byte(work), 0o644); err != nil {
		t.Fatal(err)
	}

	for i, st := range steps {
		// The hot swap: requests all through the v2 publish.
		var load *tutorialLoad
		if strings.Contains(st.script, "0.2.0") {
			load = startTutorialLoad(g)
		}
		script := fmt.Sprintf("set -euo pipefail\ncd \"$(cat %q)\"\n%s\npwd > %q\n", cwdFile, st.script, cwdFile)
		cmd := exec.Command("bash", "-c", script)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if load != nil {
			ok, failed, first := load.stop()
			t.Logf("during the hot swap: %d requests answered as expected, %d failed", ok, failed)
			if ok == 0 || failed > 0 {
				t.Errorf("hot swap: %d requests answered, %d failed, the first: %v", ok, failed, first)
			}
		}
		if err != nil {
			t.Fatalf("docs/plugins.md block %d (line %d) failed: %v\n%s\n%s", i+1, st.line, err, st.script, out)
		}
		if st.expect != "" && !strings.Contains(string(out), st.expect) {
			t.Fatalf("docs/plugins.md block %d (line %d): output lacks %q:\n%s", i+1, st.line, st.expect, out)
		}
	}
}

// tutorialLoad sends the tutorial's blocked request over and over, by
// count and time bounded, and records every answer that is not the
// plugin's block (v1's or v2's message). It is paced (two clients, a
// request each every 100 ms) as a steady trade is: unpaced, it spends the
// account's module time (tenant_modules, 15 s a minute) while the v2 build
// runs and is refused 429 for that, which is not what the swap is about.
type tutorialLoad struct {
	done   chan struct{}
	wg     sync.WaitGroup
	ok     atomic.Int64
	nfail  atomic.Int64
	mu     sync.Mutex
	failed []string
}

func startTutorialLoad(g *gatewaytest.Gateway) *tutorialLoad {
	l := &tutorialLoad{done: make(chan struct{})}
	body := `{"model":"demo/echo","plugins":[{"id":"hello","blocked":["secret-project"]}],"messages":[{"role":"user","content":"Tell me about secret-project"}]}`
	deadline := time.Now().Add(3 * time.Minute)
	for w := 0; w < 2; w++ {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for n := 0; n < 2000 && time.Now().Before(deadline); n++ {
				select {
				case <-l.done:
					return
				case <-time.After(100 * time.Millisecond):
				}
				resp, b, err := g.Request(http.MethodPost, "/chat/completions", body)
				switch {
				case err != nil:
					l.fail(err.Error())
				case resp.StatusCode == 403 && bytes.Contains(b, []byte("blocked this request")):
					l.ok.Add(1)
				default:
					l.fail(fmt.Sprintf("%d %s", resp.StatusCode, b))
				}
			}
		}()
	}
	return l
}

func (l *tutorialLoad) fail(s string) {
	l.nfail.Add(1)
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.failed) < 5 {
		l.failed = append(l.failed, s)
	}
}

func (l *tutorialLoad) stop() (ok, failed int64, first []string) {
	close(l.done)
	l.wg.Wait()
	return l.ok.Load(), l.nfail.Load(), l.failed
}
