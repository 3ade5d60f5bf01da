//go:build wasip1

package sdk

import (
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
