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
// module's first call it would otherwise set up on every call, and every
// page it writes doing so the host copies back after the call.
//   - Reading the runtime's metrics builds their table once (collect reads
//     one after each call).
//   - A goroutine that has run and exited leaves one to reuse.
//   - The stack: a reactor's exports run on the goroutine its init ran on
//     (runtime.main's), which starts small; a call that needs more copies
//     it to a larger one, every call from the state after start. Using 32
//     KiB of it here leaves it 64 KiB.
//   - The buffers the SDK reuses across calls get a capacity that holds a
//     usual request (16 KiB in, 4 KiB out): grown by a call, they would
//     be nil again for the next.
//
// Measured on the test plugin's trivial hook, a call from the state after
// start: 126 µs before any of it, 36 µs with the first two, 8.6 µs with
// all (3.8 µs on a warm instance); the Go example 70 → 33 µs with its own
// buffers sized in its init too (21 µs warm).
func init() {
	growStack(64)
	inBuf = make([]byte, 0, 16<<10)
	out.buf = make([]byte, 0, 4<<10)
	in.fields = make([][]byte, 0, 8)
	metrics.Read(heapAllocs)
	done := make(chan struct{})
	go func() { close(done) }()
	<-done
}

// growStack uses n frames of a little over 512 bytes of stack.
//
//go:noinline
func growStack(n int) byte {
	var pad [512]byte
	pad[n%len(pad)] = byte(n)
	if n > 0 {
		return growStack(n-1) + pad[(n*7)%len(pad)]
	}
	return pad[0]
}
