package wasm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/switchyard/switchyard/host/wasm/rewrite"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/abi/manifest"
	"github.com/tetratelabs/wazero"
)

// Validate checks wasm for the manifest m as Load does — it decodes and
// validates, its exports are ABI v1's and it imports only what m grants —
// without compiling it to machine code (wazero's interpreter front end,
// ~10× cheaper than the compiler) or instantiating it. The registry's
// start uses it for new seeds, which it then loads lazily: a fresh gateway
// does not compile modules it may never call.
func (e *Engine) Validate(ctx context.Context, m *manifest.Manifest, wasm []byte) error {
	return e.ValidateSum(ctx, m, wasm, sha256.Sum256(wasm))
}

// ValidateSum is Validate for a binary whose SHA-256 the caller has
// computed already (the registry hashes every seed when it reads it).
func (e *Engine) ValidateSum(ctx context.Context, m *manifest.Manifest, wasm []byte, sum [sha256.Size]byte) error {
	if m.Runtime != manifest.RuntimeNative {
		mod, err := e.Load(ctx, m, wasm)
		if err == nil {
			err = mod.Close(ctx)
		}
		return err
	}
	key, keyed := ValidationKey(m, sum)
	if keyed {
		if _, ok := validated.Load(key); ok {
			return nil
		}
	}
	if err := ValidateNative(ctx, m, wasm); err != nil {
		return err
	}
	if keyed {
		validated.Store(key, struct{}{})
	}
	return nil
}

// ValidateNative is Validate's check of a module of Switchyard's own ABI
// (manifest.RuntimeNative), without an engine: what a build runs on the
// modules it made (modules.StampSeeds).
func ValidateNative(ctx context.Context, m *manifest.Manifest, wasm []byte) error {
	id := m.Name + "@" + m.Version
	if err := rewrite.CheckCounts(wasm); err != nil {
		return &LoadError{Module: id, Reason: err.Error()}
	}
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer rt.Close(ctx)
	c, err := rt.CompileModule(ctx, wasm)
	if err != nil {
		return &LoadError{Module: id, Reason: fmt.Sprintf("does not compile: %v", err)}
	}
	if err := checkExports(c); err != nil {
		return &LoadError{Module: id, Reason: err.Error()}
	}
	if err := checkImports(c, m, false); err != nil {
		return &LoadError{Module: id, Reason: err.Error()}
	}
	return nil
}

// validated holds the keys (ValidationKey) of the modules this process
// has validated, or that a build's record vouched for (Vouch). A gateway
// validates every new seed when it starts and a publish validates again:
// compiling a module only to read its imports and exports costs 20-100 ms
// per Go module (seconds under the race detector), paid again for the same
// bytes by every start. Only successes are kept; the set is bounded by the
// distinct modules ever published to the process (and the seeds' record).
var validated sync.Map

// validationRules names what checkExports and checkImports accept beyond
// the host functions (which validator lists by themselves). Bump it when
// they change: a record of validations made under other rules then vouches
// for nothing, and the modules are validated again.
const validationRules = 1

// validator is what a validation's outcome depends on besides the module
// and its manifest: the ABI, the rules, the host functions a module may
// import, and the wazero release that decodes and validates the binary.
var validator = sync.OnceValue(func() string {
	wz := "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/tetratelabs/wazero" {
				wz = d.Version
				if d.Replace != nil {
					wz += "=>" + d.Replace.Path + "@" + d.Replace.Version
				}
			}
		}
	}
	fns := make([]string, 0, len(hostFunctions))
	for f := range hostFunctions {
		fns = append(fns, f)
	}
	slices.Sort(fns)
	return fmt.Sprintf("abi/%d rules/%d wazero/%s host/%s", abi.Version, validationRules, wz, strings.Join(fns, ","))
})

// ValidationKey names a validation, by a host like this one, of the module
// whose binary has the SHA-256 sum for the manifest m (its grants decide
// which imports are allowed). false when m cannot be encoded.
func ValidationKey(m *manifest.Manifest, sum [sha256.Size]byte) (string, bool) {
	mj, err := json.Marshal(m)
	if err != nil {
		return "", false
	}
	h := sha256.New()
	h.Write([]byte(validator()))
	h.Write([]byte{0})
	h.Write(sum[:])
	h.Write(mj)
	return hex.EncodeToString(h.Sum(nil)), true
}

// Vouch records the key (ValidationKey) of a validation made elsewhere — by
// the build that made the gateway's seeds, in its record next to them
// (modules.StampSeeds) — so Validate of that module returns at once. The
// record is as trusted as the modules beside it: whoever can write one can
// write the other. A record that lied costs only the early refusal: the
// module is still decoded and validated by wazero when it is compiled for
// its first call, and fails there.
func Vouch(key string) { validated.Store(key, struct{}{}) }

// ForgetValidations empties the process's record of validations, as in a
// fresh process: for benchmarks of a start.
func ForgetValidations() { validated.Clear() }
