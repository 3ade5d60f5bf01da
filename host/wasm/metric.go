package wasm

import (
	"errors"
	"strconv"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/host/modmetrics"
)

// hostMetric is the metric host function (docs/abi.md, "metric"): input
// [name, value (decimal)], result [] (size 0). The name must be one the
// module's manifest declares (metrics[]); the series is the module's name
// and the request's account (CallEnv.Account; "" for a call without a
// request, an adapter's).
func hostMetric(r hostRequest, dst []byte) ([]byte, int64) {
	if len(r.fields) != 2 {
		return fail(dst, abi.HostFailed, "metric: want [name, value]")
	}
	name := unsafeString(r.field(0))
	d := r.mod.Manifest.MetricNamed(name)
	if d == nil {
		return fail(dst, abi.HostDenied, "metric "+strconv.Quote(name)+" is not declared in the module's manifest (metrics[])")
	}
	v, err := strconv.ParseFloat(unsafeString(r.field(1)), 64)
	if err != nil {
		return fail(dst, abi.HostFailed, "metric "+name+": value "+strconv.Quote(string(r.field(1)))+" is not a number")
	}
	if err := r.engine.cfg.Metrics.Add(r.mod.Manifest.Name, r.env.Account, d, v); err != nil {
		if errors.Is(err, modmetrics.ErrFull) {
			return fail(dst, abi.HostQuota, "metric "+name+": "+err.Error())
		}
		return fail(dst, abi.HostFailed, "metric "+name+": "+err.Error())
	}
	return dst, 0
}
