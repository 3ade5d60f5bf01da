package sdk

import (
	"fmt"
	"runtime"
	"strings"

	"github.com/switchyard/switchyard/abi"
)

// call decodes one input frame into in and runs h, writing to out. A panic
// in h becomes the hook's error, with the panic's value and the line of
// the plugin's code it came from: left alone it would trap the instance,
// and the gateway would report only "wasm error: unreachable" (the Go
// runtime's message goes to a stderr nobody reads).
func call(h Handler, in *In, out *Out, frame []byte) (err error) {
	if in.fields, err = abi.Fields(in.fields, frame); err != nil {
		return err
	}
	defer func() {
		if v := recover(); v != nil {
			err = errorString(panicMessage(v))
		}
	}()
	return h(in, out)
}

// panicMessage describes a recovered panic: "panic: <value> (at
// file.go:42)", where it was raised: the first frame below the deferred
// recovery that is not the Go runtime's own.
func panicMessage(v any) string {
	msg := fmt.Sprint(v)
	if e, ok := v.(error); ok {
		msg = e.Error()
	}
	var pcs [32]uintptr
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs[:])])
	for {
		f, more := frames.Next()
		if f.File != "" && !strings.HasPrefix(f.Function, "runtime.") {
			i := strings.LastIndexByte(f.File, '/')
			return fmt.Sprintf("panic: %s (at %s:%d)", msg, f.File[i+1:], f.Line)
		}
		if !more {
			return "panic: " + msg
		}
	}
}

// Run calls h natively with the given input fields, through the same frame
// encoding the module's exports use, and returns its output fields (copies,
// safe to keep). It is how a module's translation is tested with `go test`
// on the host: the handler registered with Handle in the module is the one
// Run calls.
func Run(h Handler, fields ...[]byte) ([][]byte, error) {
	var frame []byte
	for _, f := range fields {
		frame = abi.AppendField(frame, f)
	}
	var in In
	var out Out
	out.reset()
	if err := call(h, &in, &out, frame); err != nil {
		return nil, err
	}
	got, err := abi.Fields(nil, out.buf[1:])
	if err != nil {
		return nil, err
	}
	res := make([][]byte, len(got))
	for i, f := range got {
		res[i] = append([]byte{}, f...)
	}
	return res, nil
}

// Caller runs handlers natively, the way the host runs a hook that a module
// declares "native" (docs/abi.md §native hooks): the host's implementation
// is the module's own handler, called through a Caller on the host instead
// of through the module's exports. A Caller reuses its buffers; it is not
// safe for concurrent use (keep one per goroutine, or pool them).
type Caller struct {
	in     In
	out    Out
	fields [][]byte
}

// Call runs h on fields, which h sees as they are (not copied, and not
// framed: there is no guest memory to cross), and returns its output fields
// copied into one new buffer, safe to keep. A handler's error is returned
// as it is.
func (c *Caller) Call(h Handler, fields ...[]byte) ([][]byte, error) {
	if _, err := c.run(h, fields); err != nil {
		return nil, err
	}
	buf := append([]byte(nil), c.out.buf[1:]...)
	return abi.Fields(make([][]byte, 0, 4), buf)
}

// CallBorrowed is Call without the copy: the output fields are the
// Caller's own buffer, valid until its next call. A host that writes a
// 128 KB translated body to the network and is done with it saves an
// allocation and a copy of its size.
func (c *Caller) CallBorrowed(h Handler, fields ...[]byte) ([][]byte, error) {
	return c.run(h, fields)
}

func (c *Caller) run(h Handler, fields [][]byte) ([][]byte, error) {
	c.in.fields = fields
	c.out.reset()
	err := h(&c.in, &c.out)
	c.in.fields = nil // the caller's buffers are not kept past the call
	if err != nil {
		return nil, err
	}
	var ferr error
	c.fields, ferr = abi.Fields(c.fields[:0], c.out.buf[1:])
	return c.fields, ferr
}
