package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/switchyard/switchyard/host/gatewaytest"
)

var (
	syctlOnce sync.Once
	syctlBin  string
	syctlErr  error
)

// builtSyctl builds this command once, for the projects' `make test`.
func builtSyctl(t *testing.T) string {
	syctlOnce.Do(func() {
		dir, err := os.MkdirTemp("", "syctl-bin-")
		if err != nil {
			syctlErr = err
			return
		}
		syctlBin = filepath.Join(dir, "syctl")
		cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", syctlBin, ".")
		if out, err := cmd.CombinedOutput(); err != nil {
			syctlErr = fmt.Errorf("%v: %s", err, out)
		}
	})
	if syctlErr != nil {
		t.Fatalf("building syctl: %v", syctlErr)
	}
	return syctlBin
}

// From an empty directory: `syctl plugin new` writes a project, `make`
// builds the module with one command and `make test` runs the project's
// own test and `syctl plugin test` on it (the conformance check, the
// shipped cases, the project's case expecting a block), for Go — the SDK
// imported from this checkout with no network —, for Rust (sdk/rust as a
// path dependency, compiled with plain rustc, the project's unit tests run
// natively), for C (abi/c/switchyard.h over wasi-libc) and for
// AssemblyScript on the native ABI (the guest library copied from this
// checkout, the compiler the one `make -C examples` installed for
// examples/as-native-plugin, the same npm package the project's
// package.json names, so the test needs no network) (issue 37).
func TestPluginNewBuildTest(t *testing.T) {
	root := gatewaytest.Root()
	syctl := builtSyctl(t)
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	asc := filepath.Join(root, "examples", "as-native-plugin", "node_modules", ".bin", "asc")
	for _, lang := range []string{"go", "rust", "c", "assemblyscript"} {
		t.Run(lang, func(t *testing.T) {
			dir := t.TempDir()
			t.Chdir(dir)
			name := "hello-" + lang
			var out, errb bytes.Buffer
			if code := run([]string{"plugin", "new", name, "--lang", lang, "--sdk", root}, &out, &errb); code != 0 {
				t.Fatalf("plugin new: exit %d\n%s%s", code, out.String(), errb.String())
			}
			for _, f := range []string{"manifest.json", "Makefile", "cases/blocked.json"} {
				if _, err := os.Stat(filepath.Join(dir, name, f)); err != nil {
					t.Fatalf("the project lacks %s: %v", f, err)
				}
			}
			if code := run([]string{"plugin", "new", name, "--lang", lang, "--sdk", root}, &out, &errb); code == 0 {
				t.Fatal("plugin new wrote over a project")
			}
			if lang == "assemblyscript" {
				if _, err := os.Stat(asc); err != nil {
					t.Fatalf("the AssemblyScript compiler: %v (run make -C examples)", err)
				}
			}
			make := func(target string) string {
				t.Helper()
				cmd := exec.Command("make", "-C", filepath.Join(dir, name), target, "GO="+goBin, "SYCTL="+syctl, "ASC="+asc)
				// The project stands alone: no workspace, no toolchain
				// switch, no network.
				cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=", "GOTOOLCHAIN=local", "GOPROXY=off")
				b, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("make %s: %v\n%s", target, err, b)
				}
				return string(b)
			}
			make(name + ".wasm")
			got := make("test")
			for _, want := range []string{"calls passed", "blocked (pre_request)", "[0] block", "shipped/pre_request (pre_request)"} {
				if !strings.Contains(got, want) {
					t.Errorf("make test's output lacks %q:\n%s", want, got)
				}
			}
		})
	}
}
