//go:build !linux

package wasm

import "time"

// threadCPU has no per-thread CPU clock to read here: module time is
// wall time (callLog.now).
func threadCPU() (time.Duration, bool) { return 0, false }
