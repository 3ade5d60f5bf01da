// Package sdk is what a Switchyard module author imports to write an adapter
// or plugin in standard Go (GOOS=wasip1 GOARCH=wasm, -buildmode=c-shared).
// It implements the guest side of ABI v1 (docs/abi.md): the exports, the
// frame codec and buffers that are reused across calls, because allocation
// inside a Go guest is what makes the Wasm hop slow.
//
// A module registers its handlers from an init function:
//
//	func init() {
//		sdk.Handle(abi.HookChatRequest, chatRequest)
//	}
//
// and its main package has an empty main (never called for c-shared).
//
// Only the exports, Handle, HTTP, Log and the host calls (Chat, CountTokens,
// KVGet, KVPut) are wasip1-only. In, Out, the JSON
// and content helpers and Run build for any platform, so a module's
// translation can live in a plain package, be called from its thin main
// and be tested natively with `go test` (see Run).
package sdk

import (
	"strconv"
	"unsafe"

	"github.com/switchyard/switchyard/abi"
)

// Handler runs one hook: in holds the input fields, out collects the output
// fields. Returning an error makes the call fail with its message.
type Handler func(in *In, out *Out) error

type errorString string

func (e errorString) Error() string { return string(e) }

// Errorf-free error constructor: fmt is heavy in a Wasm guest.
func Error(msg string) error { return errorString(msg) }

// In is a call's input. Fields alias the host-written buffer and are valid
// only during the call.
type In struct{ fields [][]byte }

// Len is the number of input fields.
func (in *In) Len() int { return len(in.fields) }

// Field returns field i, or nil when absent.
func (in *In) Field(i int) []byte {
	if i < 0 || i >= len(in.fields) {
		return nil
	}
	return in.fields[i]
}

// String returns field i as a string without copying; valid during the call.
func (in *In) String(i int) string { return unsafeString(in.Field(i)) }

func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// Out builds the output frame in a buffer reused across calls.
type Out struct {
	buf  []byte
	open int // offset of the length prefix of the open field, or -1
}

func (o *Out) reset() {
	o.buf = append(o.buf[:0], abi.StatusOK)
	o.open = -1
}

// Field appends a complete field.
func (o *Out) Field(b []byte) { o.buf = abi.AppendField(o.buf, b) }

// FieldString appends a complete string field.
func (o *Out) FieldString(s string) { o.buf = abi.AppendFieldString(o.buf, s) }

// Open starts a field written piecewise with Write*; Close ends it.
func (o *Out) Open() {
	o.open = len(o.buf)
	o.buf = append(o.buf, 0, 0, 0, 0)
}

// Write appends to the open field.
func (o *Out) Write(b []byte) { o.buf = append(o.buf, b...) }

// WriteString appends to the open field.
func (o *Out) WriteString(s string) { o.buf = append(o.buf, s...) }

// WriteQuoted appends s to the open field as a JSON string literal
// (AppendJSONString): no string is made for it, which matters in hooks
// that run once per stream event.
func (o *Out) WriteQuoted(s string) { o.buf = AppendJSONString(o.buf, s) }

// WriteInt appends n in decimal to the open field.
func (o *Out) WriteInt(n int64) { o.buf = strconv.AppendInt(o.buf, n, 10) }

// Byte appends one byte to the open field.
func (o *Out) Byte(c byte) { o.buf = append(o.buf, c) }

// Close ends the open field by patching its length.
func (o *Out) Close() {
	n := uint32(len(o.buf) - o.open - 4)
	b := o.buf[o.open:]
	b[0], b[1], b[2], b[3] = byte(n), byte(n>>8), byte(n>>16), byte(n>>24)
	o.open = -1
}

// Len is the number of bytes written to the open field so far.
func (o *Out) Len() int { return len(o.buf) - o.open - 4 }
