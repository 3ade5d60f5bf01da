package modules

import (
	"context"
	"errors"
	"net/http"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/abi/guestcheck"
	"github.com/switchyard/switchyard/abi/manifest"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/wasm"
)

// ErrGuestCheck: the module loads but fails the guest check (400), so
// every request through it would fail: a hook it declares and does not
// implement, or one that traps, runs out of time or panics on the kit's
// input, or answers out of shape.
var ErrGuestCheck = errors.New("module fails the guest check")

// checkGuest runs the conformance kit's guest check (abi/guestcheck) on a
// module just loaded for publishing, before it is stored: what passes
// load but cannot work is refused here rather than turning every request
// into a 502 (issue 37). The calls run with no chat and no http (a module
// not yet published reaches no one): a hook that needs them gets
// HostDenied, which it should answer as a refusal, not a panic.
func checkGuest(ctx context.Context, m *manifest.Manifest, manifestJSON []byte, mod *wasm.Module) error {
	ctx = wasm.WithCallEnv(ctx, &wasm.CallEnv{HTTPCalls: -1})
	results, err := guestcheck.Check(ctx, checked{mod}, manifestJSON)
	if err != nil {
		return apierr.Wrap(http.StatusBadRequest, err, "%v", err)
	}
	if p := guestcheck.FirstProblem(results); p != "" {
		return &statusError{sentinel: ErrGuestCheck, api: apierr.New(http.StatusBadRequest,
			"module %s@%s fails the guest check, so it was not published (docs/abi.md section 8; `syctl plugin test` runs the check without a gateway): %s",
			m.Name, m.Version, p)}
	}
	return nil
}

// checked is a loaded module as the guest check calls it.
type checked struct{ m *wasm.Module }

func (c checked) Call(ctx context.Context, hook abi.Hook, fields ...[]byte) ([][]byte, error) {
	out, err := c.m.Call(ctx, hook, fields...)
	if err != nil {
		var ae *apierr.Error
		if errors.As(err, &ae) {
			return nil, &guestcheck.Failure{Status: ae.Status, Message: ae.Message, Broke: errors.Is(err, wasm.ErrBroke)}
		}
		return nil, err
	}
	return out.Fields, nil
}
