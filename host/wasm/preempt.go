package wasm

// Cheap preemption. wazero interrupts a call (WithCloseOnContextDone) by
// leaving native code for Go at the head of every loop iteration, which
// makes a guest that walks a request byte by byte 7-12x slower. Instead,
// rewrite changes a module so that every loop head counts down a
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
// rewrite understands the instructions of WebAssembly 1.0 with the
// sign-extension, saturating-conversion, bulk-memory, reference-types and
// tail-call extensions, which is what Go, C (clang) and AssemblyScript
// emit by default. A module using anything else (SIMD, threads, exception
// handling, GC types) is left alone and runs with wazero's check.

import (
	"context"
	"encoding/binary"
	"errors"
	"strconv"

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

// stateGlobalPrefix names the exports rewrite adds for the module's mutable
// globals (stateGlobal), which the host reads and sets to put an instance
// back as it was after its start (snapshot.go).
const stateGlobalPrefix = "__switchyard_state_global_"

func stateGlobal(i uint64) string { return stateGlobalPrefix + strconv.FormatUint(i, 10) }

// rewrite returns the module with the preemption check at every loop head
// (above), or an error when it cannot be rewritten (the caller then uses
// wazero's own preemption). It also exports every mutable global the module
// defines (stateGlobal); state is the names of those exports when an
// instance's whole state is its linear memory and those globals — nil when
// the module imports a memory, a table or a mutable global, or has
// instructions that change a table or drop a segment, all state a reset
// could not put back.
func rewrite(bin []byte) ([]byte, []string, error) {
	if len(bin) < 8 || string(bin[:4]) != "\x00asm" || binary.LittleEndian.Uint32(bin[4:8]) != 1 {
		return nil, nil, errUnsupported
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
			return nil, nil, errUnsupported
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
			return nil, nil, errUnsupported
		}
	}
	yieldType, growType := nTypes, nTypes+1
	types = append(append(binary.AppendUvarint(nil, nTypes+2), types...), 0x60, 0, 0, 0x60, 1, 0x7f, 1, 0x7f)

	// Imports: count functions and globals; append the yield import.
	var nFuncImports, nGlobalImports uint64
	importsState := false // a memory, table or mutable global from outside
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
				importsState = true
			case 2:
				r.limits()
				importsState = true
			case 3:
				r.byte()
				if r.byte() != 0 {
					importsState = true
				}
				nGlobalImports++
			default:
				return nil, nil, errUnsupported
			}
		}
		if r.err != nil || r.i != len(r.b) {
			return nil, nil, errUnsupported
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
	var mutable []uint64 // indices of the mutable globals defined here
	if i := find(6); i >= 0 {
		r := reader{b: secs[i].body}
		nGlobals = r.u()
		for k := uint64(0); k < nGlobals && r.err == nil; k++ {
			globals = append(globals, r.byte())
			mut := r.byte()
			globals = append(globals, mut)
			if mut != 0 {
				mutable = append(mutable, nGlobalImports+k)
			}
			var err error
			if globals, err = rewriteExpr(&r, globals, shift); err != nil {
				return nil, nil, err
			}
		}
		if r.err != nil || r.i != len(r.b) {
			return nil, nil, errUnsupported
		}
	}
	// The memory: its size as the guest sees it becomes a global of its
	// own, vsize (see growFunction), when the module defines one memory.
	var minPages uint64
	ownMemory := false
	if i := find(5); i >= 0 {
		r := reader{b: secs[i].body}
		switch n := r.u(); {
		case n > 1:
			return nil, nil, errUnsupported // multi-memory
		case n == 1:
			flags := r.u()
			if flags > 1 {
				return nil, nil, errUnsupported // shared or 64-bit
			}
			minPages = r.u()
			if flags == 1 {
				r.u()
			}
			ownMemory = true
		}
		if r.err != nil || r.i != len(r.b) {
			return nil, nil, errUnsupported
		}
	}
	tick, vsize := nGlobalImports+nGlobals, nGlobalImports+nGlobals+1
	mutable = append(mutable, tick, vsize)
	globals = append(append(binary.AppendUvarint(nil, nGlobals+2), globals...), 0x7f, 1, 0x41)
	globals = appendSLEB(globals, yieldEvery)
	globals = append(globals, 0x0b, 0x7f, 1, 0x41)
	globals = appendSLEB(globals, int64(minPages))
	globals = append(globals, 0x0b)

	// Functions: a module with a memory of its own gets growFunction,
	// declared after its defined functions.
	rw := &bodyRewrite{shift: shift, tick: tick, yield: yieldFunc}
	var funcs, growBody []byte
	if i := find(3); i >= 0 {
		fr := reader{b: secs[i].body}
		nDefined := fr.u()
		funcs = secs[i].body
		if ownMemory {
			funcs = append(binary.AppendUvarint(nil, nDefined+1), fr.rest()...)
			funcs = binary.AppendUvarint(funcs, growType)
			rw.vsize, rw.grow, rw.memory = vsize, nFuncImports+1+nDefined, true
			growBody = growFunction(vsize)
		}
		if fr.err != nil {
			return nil, nil, errUnsupported
		}
	} else if ownMemory {
		return nil, nil, errUnsupported // a memory but no functions
	}

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
	exported := false
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
		case 3:
			body = funcs
		case 6:
			body = globals
		case 7:
			body = exportSection(s.body, shift, mutable)
			if body == nil {
				return nil, nil, errUnsupported
			}
			exported = true
		case 8:
			r := reader{b: s.body}
			body = binary.AppendUvarint(nil, shift(r.u()))
			err = r.err
		case 9:
			body, err = elemSection(s.body, shift)
		case 10:
			body, err = codeSection(s.body, rw, growBody)
		default:
			body = s.body
		}
		if err != nil {
			return nil, nil, err
		}
		emit(s.id, body)
		wrote[s.id] = true
	}
	emitBefore(255)
	if importsState || rw.stateOps || !exported || !ownMemory {
		return out, nil, nil
	}
	state := make([]string, len(mutable))
	for i, g := range mutable {
		state[i] = stateGlobal(g)
	}
	return out, state, nil
}

// exportSection rewrites function indices and exports the globals of
// index add (stateGlobal).
func exportSection(body []byte, shift func(uint64) uint64, add []uint64) []byte {
	r := reader{b: body}
	n := r.u()
	out := binary.AppendUvarint(nil, n+uint64(len(add)))
	for _, g := range add {
		out = appendName(out, stateGlobal(g))
		out = append(out, 3)
		out = binary.AppendUvarint(out, g)
	}
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
	return rewriteBody(r, out, &bodyRewrite{shift: shift, constExpr: true})
}

// bodyRewrite is what rewriteBody does to the instructions it copies.
type bodyRewrite struct {
	shift func(uint64) uint64 // a function's new index
	// tick and yield: the countdown global and the yield import, put at
	// every loop head (code only).
	tick, yield uint64
	constExpr   bool // a constant expression, not code
	// memory: memory.size reads global vsize and memory.grow calls
	// function grow (growFunction).
	memory      bool
	vsize, grow uint64
	// stateOps is set when an instruction changes a table or drops a
	// segment.
	stateOps bool
}

// growFunction is the body of the function memory.grow becomes. The
// guest's memory size is the global vsize; the real memory grows only
// past it. After a reset (snapshot.go) vsize is the size at start again
// while the real memory keeps the size a call grew it to, its pages zero:
// the next call sees the memory a fresh instance has, and grows into those
// pages instead of growing the memory again (wazero cannot shrink it).
// Without resets vsize always equals the real size.
//
//	(func (param $n i32) (result i32) (local $old i32)
//	  (if (i32.gt_u (local.get $n) (i32.const 65536)) (return (i32.const -1)))
//	  (local.set $old (global.get $vsize))
//	  (if (i32.gt_u (i32.add (local.get $old) (local.get $n)) (memory.size))
//	    (if (i32.eq (memory.grow (i32.sub (i32.add (local.get $old) (local.get $n)) (memory.size))) (i32.const -1))
//	      (return (i32.const -1))))
//	  (global.set $vsize (i32.add (local.get $old) (local.get $n)))
//	  (local.get $old))
func growFunction(vsize uint64) []byte {
	b := []byte{1, 1, 0x7f, // one i32 local
		0x20, 0, 0x41, 0x80, 0x80, 0x04, 0x4b, 0x04, 0x40, 0x41, 0x7f, 0x0f, 0x0b,
		0x23}
	b = binary.AppendUvarint(b, vsize)
	b = append(b, 0x21, 1,
		0x20, 1, 0x20, 0, 0x6a, 0x3f, 0, 0x4b, 0x04, 0x40,
		0x20, 1, 0x20, 0, 0x6a, 0x3f, 0, 0x6b, 0x40, 0, 0x41, 0x7f, 0x46, 0x04, 0x40, 0x41, 0x7f, 0x0f, 0x0b,
		0x0b,
		0x20, 1, 0x20, 0, 0x6a, 0x24)
	b = binary.AppendUvarint(b, vsize)
	return append(b, 0x20, 1, 0x0b)
}

// codeSection rewrites every function body (rw) and appends extra, when
// set, the body of the function the rewrite adds.
func codeSection(body []byte, rw *bodyRewrite, extra []byte) ([]byte, error) {
	r := reader{b: body}
	n := r.u()
	added := uint64(0)
	if extra != nil {
		added = 1
	}
	out := binary.AppendUvarint(nil, n+added)
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
		if fn, err = rewriteBody(&fr, fn, rw); err != nil {
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
	if extra == nil {
		return out, nil
	}
	out = binary.AppendUvarint(out, uint64(len(extra)))
	return append(out, extra...), nil
}

// rewriteBody copies instructions until the end that closes the body (or
// the constant expression), shifting function indices and, in code,
// putting the yield check at the head of every loop and giving the guest
// its memory's size from vsize (bodyRewrite).
func rewriteBody(r *reader, out []byte, rw *bodyRewrite) ([]byte, error) {
	shift, tick, yield, constExpr := rw.shift, rw.tick, rw.yield, rw.constExpr
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
		case (op == 0x3f || op == 0x40) && rw.memory && !constExpr:
			if r.u() != 0 {
				return nil, errUnsupported // multi-memory
			}
			if op == 0x3f { // memory.size
				out = append(out, 0x23)
				out = binary.AppendUvarint(out, rw.vsize)
			} else { // memory.grow
				out = append(out, 0x10)
				out = binary.AppendUvarint(out, rw.grow)
			}
			continue
		case op == 0x0c || op == 0x0d || (op >= 0x20 && op <= 0x26) || op == 0x3f || op == 0x40:
			r.u()
			if op == 0x26 { // table.set
				rw.stateOps = true
			}
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
			sub := r.u()
			// data.drop, table.init, elem.drop, table.copy, table.grow,
			// table.fill.
			if sub == 9 || (sub >= 12 && sub <= 15) || sub == 17 {
				rw.stateOps = true
			}
			switch {
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
