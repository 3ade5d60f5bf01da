package sdk

import "github.com/switchyard/switchyard/abi"

// call decodes one input frame into in and runs h, writing to out.
func call(h Handler, in *In, out *Out, frame []byte) error {
	var err error
	if in.fields, err = abi.Fields(in.fields, frame); err != nil {
		return err
	}
	return h(in, out)
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
	in  In
	out Out
}

// Call runs h on fields, which h sees as they are (not copied, and not
// framed: there is no guest memory to cross), and returns its output fields
// copied into one new buffer, safe to keep. A handler's error is returned
// as it is.
func (c *Caller) Call(h Handler, fields ...[]byte) ([][]byte, error) {
	c.in.fields = fields
	c.out.reset()
	err := h(&c.in, &c.out)
	c.in.fields = nil // the caller's buffers are not kept past the call
	if err != nil {
		return nil, err
	}
	buf := append([]byte(nil), c.out.buf[1:]...)
	return abi.Fields(make([][]byte, 0, 4), buf)
}
