package modules

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"

	"github.com/switchyard/switchyard/abi/manifest"
	"github.com/switchyard/switchyard/host/wasm"
)

// StampFile is the record, next to a build's modules, of the seeds it
// validated (StampSeeds). A gateway starting on a fresh data directory
// trusts it instead of validating the seeds again: compiling thirteen Go
// modules with wazero's interpreter only to check them was about 80 % of
// a cold start's CPU. The record is no more trusted than the modules
// beside it, and one that lies only moves a broken module's refusal from
// the start to its first call (wasm.Vouch).
const StampFile = "seeds.validated"

// StampSeeds validates the modules in dir (name.json and name.wasm) and
// records their validation keys in dir/StampFile; `make build` runs it
// (`switchyard -validate-seeds`), so a broken build fails there. Seeds the
// record lists already under the same key are not validated again.
// Modules of another runtime (Extism) are not recorded: the gateway loads
// them at start as before. It returns how many it validated and how many
// it kept.
func StampSeeds(ctx context.Context, dir string) (validated, kept int, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, 0, err
	}
	old := readStamp(dir)
	type seed struct {
		m    *manifest.Manifest
		bin  []byte
		key  string
		line string
		err  error
	}
	var seeds []*seed
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			continue
		}
		mj, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return 0, 0, err
		}
		m, err := manifest.Parse(mj)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %w", e.Name(), err)
		}
		if m.Runtime != manifest.RuntimeNative {
			continue
		}
		bin, err := os.ReadFile(filepath.Join(dir, name+".wasm"))
		if err != nil {
			return 0, 0, fmt.Errorf("%s has a manifest but no binary: %w", name, err)
		}
		key, ok := wasm.ValidationKey(m, sha256.Sum256(bin))
		if !ok {
			continue
		}
		seeds = append(seeds, &seed{m: m, bin: bin, key: key, line: m.Name + "@" + m.Version + " " + key})
	}
	// Validated on every CPU, as a gateway's start would.
	sem := make(chan struct{}, goruntime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for _, s := range seeds {
		if old[s.key] {
			kept++
			continue
		}
		validated++
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			s.err = wasm.ValidateNative(ctx, s.m, s.bin)
		}()
	}
	wg.Wait()
	var lines []string
	for _, s := range seeds {
		if s.err != nil {
			return 0, 0, s.err
		}
		lines = append(lines, s.line)
	}
	slices.Sort(lines)
	var b bytes.Buffer
	b.WriteString("# Seeds validated by `switchyard -validate-seeds` (host/modules/stamp.go):\n")
	b.WriteString("# module and validation key (binary, manifest and validator). Rebuilt by make.\n")
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	tmp := filepath.Join(dir, "."+StampFile+".tmp")
	if err := os.WriteFile(tmp, b.Bytes(), 0o644); err != nil {
		return 0, 0, err
	}
	return validated, kept, os.Rename(tmp, filepath.Join(dir, StampFile))
}

// readStamp returns the validation keys dir's record lists (none when it
// has no record).
func readStamp(dir string) map[string]bool {
	keys := map[string]bool{}
	f, err := os.Open(filepath.Join(dir, StampFile))
	if err != nil {
		return keys
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if _, key, ok := strings.Cut(line, " "); ok && len(key) == 2*sha256.Size {
			keys[key] = true
		}
	}
	return keys
}

// vouchStamp vouches for the seeds dir's record lists (wasm.Vouch).
func vouchStamp(dir string) int {
	keys := readStamp(dir)
	for k := range keys {
		wasm.Vouch(k)
	}
	return len(keys)
}
