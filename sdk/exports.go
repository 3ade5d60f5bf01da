//go:build wasip1

package sdk

import (
	"runtime"
	"runtime/metrics"
	"unsafe"

	"github.com/switchyard/switchyard/abi"
)

var (
	handlers [32]Handler
	inBuf    []byte
	out      Out
	in       In
)

// Handle registers h for hook. Call it from init.
func Handle(hook abi.Hook, h Handler) { handlers[hook] = h }

//go:wasmexport switchyard_abi_v1
func abiMarker() {}

// syInput hands the host a buffer for the next input. The buffer is reused
// and grown only when an input is larger than any before.
//
//go:wasmexport sy_input
func syInput(size int32) int32 {
	if int(size) > cap(inBuf) {
		inBuf = make([]byte, size)
	}
	inBuf = inBuf[:size]
	if size == 0 {
		return 0
	}
	return int32(uintptr(unsafe.Pointer(&inBuf[0])))
}

//go:wasmexport sy_handle
func syHandle(hook, size int32) int64 {
	out.reset()
	var h Handler
	if hook >= 0 && int(hook) < len(handlers) {
		h = handlers[hook]
	}
	var err error
	if h == nil {
		err = errorString("hook " + abi.Hook(hook).String() + " is not implemented by this module")
	} else {
		err = call(h, &in, &out, inBuf[:size])
		collect()
	}
	if err != nil {
		out.buf = append(out.buf[:0], abi.StatusError)
		out.buf = append(out.buf, err.Error()...)
	}
	if len(out.buf) == 0 {
		return 0
	}
	return int64(uintptr(unsafe.Pointer(&out.buf[0])))<<32 | int64(len(out.buf))
}

// gcEvery is how many bytes a module allocates before the SDK runs a
// collection after a call.
const gcEvery = 8 << 20

var (
	heapAllocs = []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	lastGC     uint64
)

// collect runs a full collection once the module has allocated gcEvery
// bytes since the last one. A Go reactor's collector only advances while an
// export runs, and its mark workers are goroutines nothing schedules
// between calls, so a cycle started during a call does not finish on its
// own: a module that allocates per call grows until it reaches
// limits.memory_pages and traps (the web and moderation modules did after
// a few thousand calls). Reading the counter costs well under a
// microsecond; calls that allocate little never pay for a collection.
func collect() {
	metrics.Read(heapAllocs)
	if a := heapAllocs[0].Value.Uint64(); a-lastGC > gcEvery {
		runtime.GC()
		metrics.Read(heapAllocs)
		lastGC = heapAllocs[0].Value.Uint64()
	}
}

// init leaves the Go runtime as a call finds it warm: the host may reset a
// tenant's instance to its state right after start before every call
// (host/wasm/snapshot.go), so whatever the runtime sets up lazily on a
// module's first call it would otherwise set up on every call. Reading the
// runtime's metrics builds their table once (collect reads one after each
// call), and a goroutine that has run and exited leaves one to reuse.
// Measured on the test plugin's trivial hook: 126 → 36 µs a call from the
// state after start (5 µs on a warm instance).
func init() {
	metrics.Read(heapAllocs)
	done := make(chan struct{})
	go func() { close(done) }()
	<-done
}
