//go:build wasip1

package sdk

import (
	"strconv"
	"unsafe"

	"github.com/switchyard/switchyard/abi"
)

//go:wasmimport switchyard metric
func hostMetric(ptr unsafe.Pointer, n int32) int64

// Metric adds value to the counter, or observes it in the histogram, that
// the module's manifest declares as name (metrics[], with host function
// "metrics" granted). The gateway exports it on /metrics as
// switchyard_mod_<name>{module, account} (docs/observability.md). A name
// the manifest does not declare is refused (HostError, abi.HostDenied), as
// is a negative counter addition (abi.HostFailed) and a new series past
// the gateway's bound (abi.HostQuota). It allocates nothing once the
// request buffer has grown.
func Metric(name string, value float64) error {
	hostReq = abi.AppendFieldString(hostReq[:0], name)
	hostReq = abi.AppendField(hostReq, strconv.AppendFloat(metricBuf[:0], value, 'g', -1, 64))
	_, err := hostResultOf(hostMetric(reqPtr(), int32(len(hostReq))))
	return err
}

var metricBuf [32]byte
