//go:build linux

package wasm

import (
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU is the CPU time the calling OS thread has used. A call's
// module time is its difference across the call with the goroutine locked
// to its thread (callLog.now): what the module ran, not how long a loaded
// machine kept it waiting for a CPU (cpu_ms_per_minute is CPU time).
func threadCPU() (time.Duration, bool) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
