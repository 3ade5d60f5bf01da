package wasm

// Cheap preemption. wazero interrupts a call (WithCloseOnContextDone) by
// leaving native code for Go at the head of every loop iteration, which
// makes a guest that walks a request byte by byte 7-12x slower. Instead,
// instrument rewrites a module so that every loop head counts down a
// global of its own (a few instructions, no exit) and calls the host
// function switchyard.__yield when it reaches zero, every yieldEvery loop
// iterations; __yield resets nothing itself (the guest reloads the
// counter) and fails the call once its deadline has passed. The module then
// runs on a runtime without wazero's check: a spinning call is stopped soon
// after its time limit, and the goroutine passes through Go often enough
// for the scheduler and the garbage collector's stop-the-world. (A Go
// watchdog that sets a flag instead cannot work: it is itself stopped by
// the stop-the-world that waits for the spinning guest.)
//
// instrument understands the instructions of WebAssembly 1.0 with the
// sign-extension, saturating-conversion, bulk-memory, reference-types and
// tail-call extensions, which is what Go, C (clang) and AssemblyScript
// emit by default. A module using anything else (SIMD, threads, exception
// handling, GC types) is left alone and runs with wazero's check.

import (
	"context"
	"encoding/binary"
	"errors"

	"github.com/switchyard/switchyard/abi"
	"github.com/tetratelabs/wazero/api"
)

// yieldImport is the import the rewrite adds.
const yieldImport = "__yield"

// yieldEvery is how many loop iterations pass between two yields: a yield
// (an exit to Go and back) costs about as much as a few hundred simple
// iterations, so this keeps it under 1% while a spinning guest still
// passes through Go every fraction of a millisecond.
const yieldEvery = 20_000

var errUnsupported = errors.New("wasm: module uses instructions the preemption rewrite does not know")

// instrument returns the rewritten module, or an error when it cannot be
// rewritten (the caller then uses wazero's own preemption).
func instrument(bin []byte) ([]byte, error) {
	if len(bin) < 8 || string(bin[:4]) != "\x00asm" || binary.LittleEndian.Uint32(bin[4:8]) != 1 {
		return nil, errUnsupported
	}
	type section struct {
		id   byte
		body []byte
	}
	var secs []section
	for i := 8; i < len(bin); {
		id := bin[i]
		n, w := binary.Uvarint(bin[i+1:])
		if w <= 0 || uint64(len(bin)-i-1-w) < n {
			return nil, errUnsupported
		}
		secs = append(secs, section{id, bin[i+1+w : i+1+w+int(n)]})
		i += 1 + w + int(n)
	}
	find := func(id byte) int {
		for i, s := range secs {
			if s.id == id {
				return i
			}
		}
		return -1
	}
	// Types: append () -> ().
	var types []byte
	nTypes := uint64(0)
	if i := find(1); i >= 0 {
		r := reader{b: secs[i].body}
		nTypes = r.u()
		types = r.rest()
		if r.err != nil {
			return nil, errUnsupported
		}
	}
	yieldType := nTypes
	types = append(append(binary.AppendUvarint(nil, nTypes+1), types...), 0x60, 0, 0)

	// Imports: count functions and globals; append the yield import.
	var nFuncImports, nGlobalImports uint64
	var imports []byte
	nImports := uint64(0)
	if i := find(2); i >= 0 {
		r := reader{b: secs[i].body}
		nImports = r.u()
		for k := uint64(0); k < nImports; k++ {
			r.name()
			r.name()
			switch r.byte() {
			case 0:
				r.u()
				nFuncImports++
			case 1:
				r.byte()
				r.limits()
			case 2:
				r.limits()
			case 3:
				r.byte()
				r.byte()
				nGlobalImports++
			default:
				return nil, errUnsupported
			}
		}
		if r.err != nil || r.i != len(r.b) {
			return nil, errUnsupported
		}
		imports = r.b
		imports = imports[uvarintLen(imports):]
	}
	imp := binary.AppendUvarint(nil, nImports+1)
	imp = append(imp, imports...)
	imp = appendName(imp, abi.ImportModule)
	imp = appendName(imp, yieldImport)
	imp = append(imp, 0)
	imp = binary.AppendUvarint(imp, yieldType)
	yieldFunc := nFuncImports // the new import's index; defined functions move up one
	shift := func(f uint64) uint64 {
		if f >= yieldFunc {
			return f + 1
		}
		return f
	}

	// Globals: append the flag.
	nGlobals := uint64(0)
	var globals []byte
	if i := find(6); i >= 0 {
		r := reader{b: secs[i].body}
		nGlobals = r.u()
		globals = r.rest()
	}
	tick := nGlobalImports + nGlobals
	globals = append(append(binary.AppendUvarint(nil, nGlobals+1), globals...), 0x7f, 1, 0x41)
	globals = appendSLEB(globals, yieldEvery)
	globals = append(globals, 0x0b)

	out := append([]byte(nil), bin[:8]...)
	emit := func(id byte, body []byte) {
		out = append(out, id)
		out = binary.AppendUvarint(out, uint64(len(body)))
		out = append(out, body...)
	}
	wrote := map[byte]bool{}
	// Sections in the standard order; the ones we add go where they belong.
	emitBefore := func(id byte) {
		order := []byte{1, 2, 3, 4, 5, 13, 6}
		for _, o := range order {
			if o == id {
				return
			}
			if wrote[o] {
				continue
			}
			switch o {
			case 1:
				emit(1, types)
			case 2:
				emit(2, imp)
			case 6:
				emit(6, globals)
			default:
				continue
			}
			wrote[o] = true
		}
	}
	for _, s := range secs {
		if s.id == 0 {
			continue // custom sections (names, producers) name the old indices
		}
		emitBefore(s.id)
		var body []byte
		var err error
		switch s.id {
		case 1:
			body = types
		case 2:
			body = imp
		case 6:
			body = globals
		case 7:
			body = exportSection(s.body, shift)
			if body == nil {
				return nil, errUnsupported
			}
		case 8:
			r := reader{b: s.body}
			body = binary.AppendUvarint(nil, shift(r.u()))
			err = r.err
		case 9:
			body, err = elemSection(s.body, shift)
		case 10:
			body, err = codeSection(s.body, shift, tick, yieldFunc)
		default:
			body = s.body
		}
		if err != nil {
			return nil, err
		}
		emit(s.id, body)
		wrote[s.id] = true
	}
	emitBefore(255)
	return out, nil
}

// exportSection rewrites function indices.
func exportSection(body []byte, shift func(uint64) uint64) []byte {
	r := reader{b: body}
	n := r.u()
	out := binary.AppendUvarint(nil, n)
	for k := uint64(0); k < n; k++ {
		name := r.name()
		kind := r.byte()
		idx := r.u()
		if kind == 0 {
			idx = shift(idx)
		}
		out = appendName(out, string(name))
		out = append(out, kind)
		out = binary.AppendUvarint(out, idx)
	}
	if r.err != nil || r.i != len(r.b) {
		return nil
	}
	return out
}

func elemSection(body []byte, shift func(uint64) uint64) ([]byte, error) {
	r := reader{b: body}
	n := r.u()
	out := binary.AppendUvarint(nil, n)
	for k := uint64(0); k < n && r.err == nil; k++ {
		flags := r.u()
		out = binary.AppendUvarint(out, flags)
		if flags > 7 {
			return nil, errUnsupported
		}
		if flags&1 == 0 { // active
			if flags&2 != 0 {
				out = binary.AppendUvarint(out, r.u()) // table
			}
			var err error
			if out, err = rewriteExpr(&r, out, shift); err != nil {
				return nil, err
			}
		}
		if flags&3 != 0 { // elemkind or reftype
			out = append(out, r.byte())
		}
		m := r.u()
		out = binary.AppendUvarint(out, m)
		for j := uint64(0); j < m && r.err == nil; j++ {
			if flags&4 == 0 {
				out = binary.AppendUvarint(out, shift(r.u()))
				continue
			}
			var err error
			if out, err = rewriteExpr(&r, out, shift); err != nil {
				return nil, err
			}
		}
	}
	if r.err != nil || r.i != len(r.b) {
		return nil, errUnsupported
	}
	return out, nil
}

// rewriteExpr copies a constant expression up to its end, shifting
// ref.func.
func rewriteExpr(r *reader, out []byte, shift func(uint64) uint64) ([]byte, error) {
	return rewriteBody(r, out, shift, 0, 0, true)
}

func codeSection(body []byte, shift func(uint64) uint64, tick, yield uint64) ([]byte, error) {
	r := reader{b: body}
	n := r.u()
	out := binary.AppendUvarint(nil, n)
	var fn []byte
	for k := uint64(0); k < n && r.err == nil; k++ {
		size := r.u()
		if r.err != nil || uint64(len(r.b)-r.i) < size {
			return nil, errUnsupported
		}
		fr := reader{b: r.b[r.i : r.i+int(size)]}
		r.i += int(size)
		fn = fn[:0]
		groups := fr.u()
		fn = binary.AppendUvarint(fn, groups)
		for g := uint64(0); g < groups; g++ {
			fn = binary.AppendUvarint(fn, fr.u())
			fn = append(fn, fr.byte())
		}
		var err error
		if fn, err = rewriteBody(&fr, fn, shift, tick, yield, false); err != nil {
			return nil, err
		}
		if fr.err != nil || fr.i != len(fr.b) {
			return nil, errUnsupported
		}
		out = binary.AppendUvarint(out, uint64(len(fn)))
		out = append(out, fn...)
	}
	if r.err != nil || r.i != len(r.b) {
		return nil, errUnsupported
	}
	return out, nil
}

// rewriteBody copies instructions until the end that closes the body (or
// the constant expression), shifting function indices and, in code,
// putting the yield check at the head of every loop.
func rewriteBody(r *reader, out []byte, shift func(uint64) uint64, tick, yield uint64, constExpr bool) ([]byte, error) {
	depth := 0
	for r.err == nil {
		start := r.i
		op := r.byte()
		switch {
		case op == 0x0b: // end
			out = append(out, op)
			if depth == 0 {
				return out, r.err
			}
			depth--
			continue
		case op == 0x02 || op == 0x03 || op == 0x04: // block, loop, if
			r.blockType()
			out = append(out, r.b[start:r.i]...)
			depth++
			if op == 0x03 {
				// global.get n; i32.const 1; i32.sub; global.tee n...
				// wasm 1.0 has no global.tee: set, then get again.
				// if n == 0 { n = yieldEvery; call yield }
				out = append(out, 0x23)
				out = binary.AppendUvarint(out, tick)
				out = append(out, 0x41, 0x01, 0x6b, 0x24)
				out = binary.AppendUvarint(out, tick)
				out = append(out, 0x23)
				out = binary.AppendUvarint(out, tick)
				out = append(out, 0x45, 0x04, 0x40, 0x41)
				out = appendSLEB(out, yieldEvery)
				out = append(out, 0x24)
				out = binary.AppendUvarint(out, tick)
				out = append(out, 0x10)
				out = binary.AppendUvarint(out, yield)
				out = append(out, 0x0b)
			}
			continue
		case op == 0x10 || op == 0x12 || op == 0xd2: // call, return_call, ref.func
			out = append(out, op)
			out = binary.AppendUvarint(out, shift(r.u()))
			continue
		case op == 0x00 || op == 0x01 || op == 0x05 || op == 0x0f || op == 0x1a || op == 0x1b || op == 0xd1:
		case op == 0x0c || op == 0x0d || (op >= 0x20 && op <= 0x26) || op == 0x3f || op == 0x40:
			r.u()
		case op == 0x0e: // br_table
			for m := r.u(); m > 0 && r.err == nil; m-- {
				r.u()
			}
			r.u()
		case op == 0x11 || op == 0x13: // call_indirect, return_call_indirect
			r.u()
			r.u()
		case op == 0x1c: // select t*
			for m := r.u(); m > 0 && r.err == nil; m-- {
				r.byte()
			}
		case op >= 0x28 && op <= 0x3e: // memarg
			if align := r.u(); align&0x40 != 0 {
				r.u() // memory index (multi-memory)
			}
			r.u()
		case op == 0x41 || op == 0x42:
			r.s()
		case op == 0x43:
			r.skip(4)
		case op == 0x44:
			r.skip(8)
		case op >= 0x45 && op <= 0xc4:
		case op == 0xd0:
			r.byte()
		case op == 0xfc:
			switch sub := r.u(); {
			case sub <= 7:
			case sub == 9 || sub == 11 || sub == 13 || sub == 15 || sub == 16 || sub == 17:
				r.u()
			case sub == 8 || sub == 10 || sub == 12 || sub == 14:
				r.u()
				r.u()
			default:
				return nil, errUnsupported
			}
		default:
			return nil, errUnsupported
		}
		if constExpr && op != 0x41 && op != 0x42 && op != 0x43 && op != 0x44 && op != 0x23 && op != 0xd0 {
			return nil, errUnsupported
		}
		out = append(out, r.b[start:r.i]...)
	}
	return nil, errUnsupported
}

// reader decodes the parts of a module the rewrite needs; the first error
// sticks.
type reader struct {
	b   []byte
	i   int
	err error
}

func (r *reader) fail() { r.err, r.i = errUnsupported, len(r.b) }

func (r *reader) byte() byte {
	if r.i >= len(r.b) {
		r.fail()
		return 0
	}
	r.i++
	return r.b[r.i-1]
}

func (r *reader) u() uint64 {
	v, w := binary.Uvarint(r.b[min(r.i, len(r.b)):])
	if w <= 0 {
		r.fail()
		return 0
	}
	r.i += w
	return v
}

// s skips a signed LEB128.
func (r *reader) s() {
	for r.err == nil {
		if r.byte()&0x80 == 0 {
			return
		}
	}
}

func (r *reader) skip(n int) {
	if len(r.b)-r.i < n {
		r.fail()
		return
	}
	r.i += n
}

func (r *reader) name() []byte {
	n := r.u()
	if uint64(len(r.b)-r.i) < n {
		r.fail()
		return nil
	}
	r.i += int(n)
	return r.b[r.i-int(n) : r.i]
}

func (r *reader) limits() {
	f := r.byte()
	r.u()
	if f&1 != 0 {
		r.u()
	}
}

func (r *reader) blockType() {
	if r.i < len(r.b) {
		switch r.b[r.i] {
		case 0x40, 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f:
			r.i++
			return
		}
	}
	r.s() // a type index, as a signed LEB128 (s33)
}

func (r *reader) rest() []byte {
	if r.err != nil {
		return nil
	}
	b := r.b[r.i:]
	r.i = len(r.b)
	return b
}

func uvarintLen(b []byte) int {
	_, w := binary.Uvarint(b)
	return max(w, 0)
}

func appendName(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// hostYield is switchyard.__yield, called every yieldEvery loop
// iterations. Past the call's deadline it fails the call (wazero turns the
// panic into the call's error); otherwise it returns, and the goroutine has
// passed through Go.
func hostYield(ctx context.Context, _ api.Module) {
	if err := ctx.Err(); err != nil {
		panic(err)
	}
}
