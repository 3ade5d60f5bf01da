package main

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"text/tabwriter"
	"text/template"
	"time"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/abi/conformance"
	"github.com/switchyard/switchyard/abi/guestcheck"
	"github.com/switchyard/switchyard/host/wasm/kithost"
)

// assets are the project templates of `syctl plugin new` and the shipped
// cases of `syctl plugin test` (cases/README.md says where each comes
// from).
//
//go:embed templates cases/*.json
var assets embed.FS

const pluginUsage = `usage:
  syctl plugin new NAME --lang go|rust|c|assemblyscript [--dir DIR] [--sdk CHECKOUT]
  syctl plugin test [--manifest FILE] [--cases DIR] MODULE.wasm
  syctl plugin publish [--manifest FILE] [--activate] MODULE.wasm
  syctl plugin activate NAME VERSION
  syctl plugin rollback NAME
  syctl plugin logs [--follow] NAME
    (publish … logs talk to a running gateway: --url, default $SWITCHYARD_URL
    or http://127.0.0.1:8080/api/v1; --key, default $SWITCHYARD_KEY, a
    management key; --scope account (default) or global)
`

// runPlugin is `syctl plugin …`: tools for plugin authors that need no
// store and no gateway.
func runPlugin(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "new":
			return pluginNew(args[1:], stdout, stderr)
		case "test":
			return pluginTest(args[1:], stdout, stderr)
		case "publish", "activate", "rollback", "logs":
			return pluginRemote(args[0], args[1:], stdout, stderr) // pluginremote.go
		}
	}
	fmt.Fprint(stderr, pluginUsage)
	return 2
}

// parseInterleaved parses flags that may come before or after the
// positional arguments (flag stops at the first argument that is not one)
// and returns the positional ones.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// newNameRe is stricter than a manifest's name: the name is also a Go
// module path element, a make target and a C string.
var newNameRe = regexp.MustCompile(`^[a-z][a-z0-9-]{0,63}$`)

// pluginNew is `syctl plugin new NAME --lang go|rust|c|assemblyscript`: it
// writes a project that builds with `make` and tests with `make test` (the
// handlers' own test where the language has one, then `syctl plugin test`
// on the built module with the project's cases).
//
// Every project uses its language's guest library from a Switchyard
// checkout, as there are no published releases: a Go project imports the
// SDK through a replace directive, with the checkout's requirements and
// go.sum copied; a Rust project names sdk/rust as a path dependency (its
// Makefile compiles it with plain rustc); a C project includes
// abi/c/switchyard.h; an AssemblyScript project gets a copy of
// sdk/assemblyscript and installs the compiler with npm on its first
// build. --sdk names the checkout, or else it is found from
// $SWITCHYARD_ROOT, the working directory or the syctl binary
// (build/bin/syctl in a checkout).
func pluginNew(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("syctl plugin new", flag.ContinueOnError)
	fs.SetOutput(stderr)
	lang := fs.String("lang", "go", "the project's language: go, rust, c or assemblyscript")
	dir := fs.String("dir", "", "where to write the project (default ./NAME; must not exist or be empty)")
	sdk := fs.String("sdk", "", "the Switchyard checkout whose guest library the project uses (default: found from $SWITCHYARD_ROOT, the working directory or syctl's own path)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) != 1 {
		fmt.Fprint(stderr, pluginUsage)
		return 2
	}
	name := pos[0]
	if !newNameRe.MatchString(name) {
		fmt.Fprintf(stderr, "syctl: plugin name %q: use lower-case letters, digits and '-', starting with a letter\n", name)
		return 2
	}
	if *lang != "go" && *lang != "rust" && *lang != "c" && *lang != langAS {
		fmt.Fprintf(stderr, "syctl: --lang %q: go, rust, c or assemblyscript\n", *lang)
		return 2
	}
	if *dir == "" {
		*dir = name
	}
	if entries, err := os.ReadDir(*dir); err == nil && len(entries) > 0 {
		fmt.Fprintf(stderr, "syctl: %s exists and is not empty\n", *dir)
		return 1
	}
	data := struct{ Name, Lang, SDK, GoVersion, Requires string }{Name: name, Lang: *lang}
	var goSum []byte
	root, err := findCheckout(*sdk)
	if err != nil {
		fmt.Fprintln(stderr, "syctl:", err)
		return 1
	}
	data.SDK = root
	if *lang == "go" {
		gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
		if err != nil {
			fmt.Fprintln(stderr, "syctl:", err)
			return 1
		}
		if goSum, err = os.ReadFile(filepath.Join(root, "go.sum")); err != nil {
			fmt.Fprintln(stderr, "syctl:", err)
			return 1
		}
		data.GoVersion, data.Requires = goDirective(gomod), requireBlocks(gomod)
	}
	files := map[string][]byte{}
	render := func(src, dst string) error {
		text, err := assets.ReadFile(src)
		if err != nil {
			return err
		}
		t, err := template.New(src).Parse(string(text))
		if err != nil {
			return err
		}
		var b bytes.Buffer
		if err := t.Execute(&b, data); err != nil {
			return err
		}
		files[dst] = b.Bytes()
		return nil
	}
	err = render("templates/manifest.json.tmpl", "manifest.json")
	base := "templates/" + *lang
	if err == nil {
		err = iofs.WalkDir(assets, base, func(p string, d iofs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			return render(p, strings.TrimSuffix(strings.TrimPrefix(p, base+"/"), ".tmpl"))
		})
	}
	if goSum != nil {
		files["go.sum"] = goSum
	}
	if *lang == langAS && err == nil {
		// The guest library is one file: the project gets a copy, so it
		// builds with nothing but the AssemblyScript compiler.
		files["assembly/switchyard.ts"], err = os.ReadFile(filepath.Join(root, "sdk", "assemblyscript", "switchyard.ts"))
	}
	if err != nil {
		fmt.Fprintln(stderr, "syctl:", err)
		return 1
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := filepath.Join(*dir, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			fmt.Fprintln(stderr, "syctl:", err)
			return 1
		}
		if err := os.WriteFile(p, files[n], 0o644); err != nil {
			fmt.Fprintln(stderr, "syctl:", err)
			return 1
		}
		fmt.Fprintln(stdout, p)
	}
	fmt.Fprintf(stdout, "\ncd %s && make && make test    # builds %s.wasm, then checks it (syctl on PATH, or SYCTL=…)\n", *dir, name)
	return 0
}

const switchyardModule = "module github.com/switchyard/switchyard"

// langAS is --lang for AssemblyScript on the native ABI, whose project
// copies sdk/assemblyscript/switchyard.ts from the checkout.
const langAS = "assemblyscript"

// findCheckout returns the Switchyard checkout a Go project's replace
// directive points at: flagDir, else $SWITCHYARD_ROOT, else the first
// directory holding Switchyard's go.mod above the working directory or
// above syctl's binary.
func findCheckout(flagDir string) (string, error) {
	isCheckout := func(dir string) bool {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		return err == nil && strings.HasPrefix(strings.TrimSpace(string(b)), switchyardModule)
	}
	for _, d := range []string{flagDir, os.Getenv("SWITCHYARD_ROOT")} {
		if d == "" {
			continue
		}
		abs, err := filepath.Abs(d)
		if err != nil || !isCheckout(abs) {
			return "", fmt.Errorf("%s is not a Switchyard checkout (no go.mod of %s)", d, strings.TrimPrefix(switchyardModule, "module "))
		}
		return abs, nil
	}
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if exe, err := os.Executable(); err == nil {
		if exe, err = filepath.EvalSymlinks(exe); err == nil {
			starts = append(starts, filepath.Dir(exe))
		}
	}
	for _, d := range starts {
		for {
			if isCheckout(d) {
				return d, nil
			}
			up := filepath.Dir(d)
			if up == d {
				break
			}
			d = up
		}
	}
	return "", errors.New("no Switchyard checkout found for the guest library: give one with --sdk DIR (or SWITCHYARD_ROOT)")
}

// goDirective is go.mod's go version.
func goDirective(gomod []byte) string {
	for _, l := range strings.Split(string(gomod), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "go "); ok {
			return strings.TrimSpace(v)
		}
	}
	return "1.26"
}

// requireBlocks is go.mod's require directives, as they are.
func requireBlocks(gomod []byte) string {
	var b strings.Builder
	in := false
	for _, l := range strings.Split(string(gomod), "\n") {
		t := strings.TrimSpace(l)
		switch {
		case in:
			b.WriteString(l + "\n")
			in = t != ")"
		case t == "require (":
			b.WriteString(l + "\n")
			in = true
		case strings.HasPrefix(t, "require "):
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// A testCase is one recorded call: a hook, its ctx and its input fields
// after ctx. A field that is a JSON string is passed as its text, any
// other value as its JSON text. Expect, when given, is the output's first
// fields as text (an action, say).
type testCase struct {
	Description string            `json:"description"`
	Hook        string            `json:"hook"`
	Ctx         json.RawMessage   `json:"ctx"`
	Fields      []json.RawMessage `json:"fields"`
	Expect      []string          `json:"expect"`
	name        string
}

func (c *testCase) input() ([][]byte, error) {
	ctx := []byte(c.Ctx)
	if len(ctx) == 0 {
		ctx = []byte("{}")
	}
	in := [][]byte{ctx}
	for i, f := range c.Fields {
		var s string
		if len(f) > 0 && f[0] == '"' {
			if err := json.Unmarshal(f, &s); err != nil {
				return nil, fmt.Errorf("field %d: %w", i, err)
			}
			in = append(in, []byte(s))
			continue
		}
		in = append(in, []byte(f))
	}
	return in, nil
}

// loadCases reads the shipped cases and then those of dir ("" for none).
func loadCases(dir string) ([]*testCase, error) {
	var cases []*testCase
	add := func(name string, b []byte) error {
		c := &testCase{name: name}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(c); err != nil {
			return fmt.Errorf("case %s: %w", name, err)
		}
		if _, ok := abi.HookByName(c.Hook); !ok {
			return fmt.Errorf("case %s: unknown hook %q", name, c.Hook)
		}
		cases = append(cases, c)
		return nil
	}
	shipped, _ := iofs.Glob(assets, "cases/*.json")
	for _, p := range shipped {
		b, _ := assets.ReadFile(p)
		if err := add("shipped/"+strings.TrimSuffix(path.Base(p), ".json"), b); err != nil {
			return nil, err
		}
	}
	if dir == "" {
		return cases, nil
	}
	own, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(own) == 0 {
		return nil, fmt.Errorf("--cases %s: no *.json cases there", dir)
	}
	for _, p := range own {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		if err := add(strings.TrimSuffix(filepath.Base(p), ".json"), b); err != nil {
			return nil, err
		}
	}
	return cases, nil
}

// pluginTest is `syctl plugin test [--manifest FILE] [--cases DIR]
// MODULE.wasm`. It loads the module on the gateway's own runtime with the
// manifest's grants and limits (refused here, with the reason, if the
// gateway would refuse it: an import the manifest does not grant, memory
// over its cap, a missing export), then runs the ABI conformance kit's
// guest check (abi/guestcheck, what a publish runs too: every declared
// hook on a typical input and on one over 64 KiB, each answer checked
// against its hook's shape), then the shipped recorded cases of each hook
// the manifest declares and the author's own (--cases), printing each
// call's output and time and what the module logged. It exits 1 when a
// check failed, a call broke or a case's expect did not hold.
func pluginTest(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("syctl plugin test", flag.ContinueOnError)
	fs.SetOutput(stderr)
	manifestPath := fs.String("manifest", "", "the module's manifest (default: MODULE.json, or manifest.json beside MODULE.wasm)")
	casesDir := fs.String("cases", "", "a directory of the author's own cases (*.json; see cmd/syctl/cases/README.md)")
	cacheDir := fs.String("cache", filepath.Join(os.TempDir(), "syctl-wazero-cache"), "compilation cache directory")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) != 1 {
		fmt.Fprint(stderr, pluginUsage)
		return 2
	}
	wasmPath := pos[0]
	if *manifestPath == "" {
		*manifestPath = defaultManifest(wasmPath)
	}
	mf, err := os.ReadFile(*manifestPath)
	if err != nil {
		fmt.Fprintf(stderr, "syctl: the manifest: %v (give it with --manifest)\n", err)
		return 1
	}
	bin, err := os.ReadFile(wasmPath)
	if err != nil {
		fmt.Fprintln(stderr, "syctl:", err)
		return 1
	}
	cases, err := loadCases(*casesDir)
	if err != nil {
		fmt.Fprintln(stderr, "syctl:", err)
		return 1
	}
	var declared struct {
		Hooks []string `json:"hooks"`
	}
	_ = json.Unmarshal(mf, &declared)
	h, err := kithost.New(*cacheDir)
	if err != nil {
		fmt.Fprintln(stderr, "syctl:", err)
		return 1
	}
	defer h.Close(context.Background())
	ctx := context.Background()
	m, err := h.Load(ctx, mf, bin)
	if err != nil {
		fmt.Fprintf(stderr, "syctl: %s does not load (the gateway would refuse it too): %v\n", wasmPath, err)
		return 1
	}
	defer m.Close(ctx)
	results, err := guestcheck.Check(ctx, m, mf)
	if err != nil {
		fmt.Fprintf(stderr, "syctl: %s: %v\n", wasmPath, err)
		return 1
	}
	failed := 0
	fmt.Fprintln(stdout, "conformance (docs/abi.md section 8):")
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "HOOK\tINPUT\tBYTES\tTIME\tMEMORY\tRESULT")
	for _, r := range results {
		verdict := "ok"
		switch {
		case r.Problem != "":
			verdict, failed = "FAIL: "+r.Problem, failed+1
		case r.Note != "":
			verdict = "ok (" + r.Note + ")"
		}
		mem := "-"
		if r.Memory > 0 {
			mem = fmt.Sprintf("%d KiB", r.Memory>>10)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", r.Hook, r.Input, r.Bytes, r.Time.Round(time.Microsecond), mem, verdict)
	}
	tw.Flush()
	logs := h.Logs()
	casesFailed, ran := runCases(ctx, h, m, cases, declared.Hooks, stdout)
	logs = append(logs, h.Logs()...)
	for _, l := range logs {
		fmt.Fprintf(stdout, "log %s: %s\n", l.Module, l.Message)
	}
	if failed+casesFailed > 0 {
		fmt.Fprintf(stdout, "%d of %d calls failed the check, %d of %d cases failed\n", failed, len(results), casesFailed, ran)
		return 1
	}
	fmt.Fprintf(stdout, "%d calls passed, %d cases ran\n", len(results), ran)
	return 0
}

// runCases calls m with every case whose hook the manifest declares and
// prints each call's output (or failure) and time. A case of the author's
// for a hook the manifest does not declare is a failure (the gateway
// would never call it); a shipped one is skipped.
func runCases(ctx context.Context, h conformance.Host, m conformance.Module, cases []*testCase, hooks []string, stdout io.Writer) (failed, ran int) {
	declared := map[string]bool{}
	for _, hk := range hooks {
		declared[hk] = true
	}
	fmt.Fprintln(stdout, "cases:")
	for _, c := range cases {
		shipped := strings.HasPrefix(c.name, "shipped/")
		if !declared[c.Hook] {
			if !shipped {
				fmt.Fprintf(stdout, "  %s (%s): FAIL: the manifest does not declare %s\n", c.name, c.Hook, c.Hook)
				failed++
			}
			continue
		}
		ran++
		in, err := c.input()
		if err != nil {
			fmt.Fprintf(stdout, "  %s (%s): FAIL: %v\n", c.name, c.Hook, err)
			failed++
			continue
		}
		hook, _ := abi.HookByName(c.Hook)
		start := time.Now()
		var out [][]byte
		var mem uint32
		cctx := h.WithEnv(ctx, conformance.Env{Account: "syctl"})
		if mm, ok := m.(guestcheck.MemoryCaller); ok {
			out, mem, err = mm.CallMemory(cctx, hook, in...)
		} else {
			out, err = m.Call(cctx, hook, in...)
		}
		took := time.Since(start).Round(time.Microsecond).String()
		if mem > 0 {
			took += fmt.Sprintf(", memory %d KiB", mem>>10)
		}
		var f *conformance.Failure
		switch {
		case errors.As(err, &f) && f.Broke:
			fmt.Fprintf(stdout, "  %s (%s) %s: FAIL: %s\n", c.name, c.Hook, took, f.Message)
			failed++
			continue
		case err != nil:
			fmt.Fprintf(stdout, "  %s (%s) %s: refused: %v\n", c.name, c.Hook, took, err)
			if len(c.Expect) > 0 {
				fmt.Fprintf(stdout, "    FAIL: expected %q\n", c.Expect)
				failed++
			}
			continue
		}
		fmt.Fprintf(stdout, "  %s (%s) %s:\n", c.name, c.Hook, took)
		for i, f := range out {
			fmt.Fprintf(stdout, "    [%d] %s\n", i, clip(f, 300))
		}
		for i, want := range c.Expect {
			if i >= len(out) || string(out[i]) != want {
				fmt.Fprintf(stdout, "    FAIL: expected field %d to be %q\n", i, want)
				failed++
				break
			}
		}
	}
	return failed, ran
}

// clip shows a field on one line (headers are \n-separated lines),
// shortened past n bytes.
func clip(b []byte, n int) string {
	s := string(b)
	if len(b) > n {
		s = fmt.Sprintf("%s…(%d bytes)", b[:n], len(b))
	}
	return strings.ReplaceAll(s, "\n", `\n`)
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
