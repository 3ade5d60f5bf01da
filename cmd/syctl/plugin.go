package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/switchyard/switchyard/abi/conformance"
	"github.com/switchyard/switchyard/host/wasm/kithost"
)

// runPlugin is `syctl plugin …`: tools for plugin authors that need no
// store and no gateway.
//
//	syctl plugin test -manifest FILE MODULE.wasm
//
// test loads the module on the gateway's own runtime with the manifest's
// grants and limits (refused here if the gateway would refuse it), then
// runs the ABI conformance kit's guest check: every declared hook on a
// typical input and on one over 64 KiB, each answer checked against its
// hook's shape (docs/abi.md section 8). It prints one line per call with
// its time, and exits 1 when any call failed the check.
func runPlugin(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "test" {
		fmt.Fprint(stderr, "usage: syctl plugin test -manifest FILE MODULE.wasm\n")
		return 2
	}
	fs := flag.NewFlagSet("syctl plugin test", flag.ContinueOnError)
	fs.SetOutput(stderr)
	manifestPath := fs.String("manifest", "", "the module's manifest (default: MODULE.json, or manifest.json beside MODULE.wasm)")
	cacheDir := fs.String("cache", filepath.Join(os.TempDir(), "syctl-wazero-cache"), "compilation cache directory")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	// Flags may come after the module too (flag stops at the first
	// argument that is not one).
	var wasmPath string
	if fs.NArg() > 0 {
		wasmPath = fs.Arg(0)
		if err := fs.Parse(fs.Args()[1:]); err != nil {
			return 2
		}
	}
	if wasmPath == "" || fs.NArg() != 0 {
		fmt.Fprint(stderr, "usage: syctl plugin test -manifest FILE MODULE.wasm\n")
		return 2
	}
	if *manifestPath == "" {
		*manifestPath = defaultManifest(wasmPath)
	}
	mf, err := os.ReadFile(*manifestPath)
	if err != nil {
		fmt.Fprintf(stderr, "syctl: the manifest: %v (give it with -manifest)\n", err)
		return 1
	}
	bin, err := os.ReadFile(wasmPath)
	if err != nil {
		fmt.Fprintln(stderr, "syctl:", err)
		return 1
	}
	h, err := kithost.New(*cacheDir)
	if err != nil {
		fmt.Fprintln(stderr, "syctl:", err)
		return 1
	}
	defer h.Close(context.Background())
	results, err := conformance.GuestReport(context.Background(), h, mf, bin)
	if err != nil {
		fmt.Fprintf(stderr, "syctl: %s: %v\n", wasmPath, err)
		return 1
	}
	failed := 0
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "HOOK\tINPUT\tBYTES\tTIME\tRESULT")
	for _, r := range results {
		verdict := "ok"
		switch {
		case r.Problem != "":
			verdict, failed = "FAIL: "+r.Problem, failed+1
		case r.Note != "":
			verdict = "ok (" + r.Note + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", r.Hook, r.Input, r.Bytes, r.Time.Round(time.Microsecond), verdict)
	}
	tw.Flush()
	for _, l := range h.Logs() {
		fmt.Fprintf(stdout, "log %s: %s\n", l.Module, l.Message)
	}
	if failed > 0 {
		fmt.Fprintf(stdout, "%d of %d calls failed the check\n", failed, len(results))
		return 1
	}
	fmt.Fprintf(stdout, "%d calls passed\n", len(results))
	return 0
}

// defaultManifest is NAME.json beside NAME.wasm (how `make build` lays out
// modules), or else manifest.json in the module's directory (a project's).
func defaultManifest(wasmPath string) string {
	beside := strings.TrimSuffix(wasmPath, ".wasm") + ".json"
	if _, err := os.Stat(beside); err == nil {
		return beside
	}
	return filepath.Join(filepath.Dir(wasmPath), "manifest.json")
}
