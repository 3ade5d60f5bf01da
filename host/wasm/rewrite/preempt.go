// Package rewrite holds the pure transformations host/wasm applies to a
// module's bytes before compiling it: Preempt (cheap preemption and the
// exports a reset needs) and MergeData (fewer data segments). Each is a
// function of the binary alone, so it can be fuzzed and checked against the
// original module without an engine (rewrite_test.go).
package rewrite

// Cheap preemption. wazero interrupts a call (WithCloseOnContextDone) by
// leaving native code for Go at the head of every loop iteration, which
// makes a guest that walks a request byte by byte 7-12x slower. Instead,
// Preempt changes a module so that every loop head counts down a
// global of its own (a few instructions, no exit) and calls the host
// function switchyard.__yield when it reaches zero, every YieldEvery loop
// iterations; __yield resets nothing itself (the guest reloads the
// counter) and fails the call once its deadline has passed. The module then
// runs on a runtime without wazero's check: a spinning call is stopped soon
// after its time limit, and the goroutine passes through Go often enough
// for the scheduler and the garbage collector's stop-the-world. (A Go
// watchdog that sets a flag instead cannot work: it is itself stopped by
// the stop-the-world that waits for the spinning guest.)
//
// Preempt understands the instructions of WebAssembly 1.0 with the
// sign-extension, saturating-conversion, bulk-memory, reference-types and
// tail-call extensions, which is what Go, C (clang) and AssemblyScript
// emit by default. A module using anything else (SIMD, threads, exception
// handling, GC types) is left alone and runs with wazero's check.

import (
	"encoding/binary"
	"errors"
	"strconv"

	"github.com/switchyard/switchyard/abi"
)

// YieldImport is the import (of module abi.ImportModule) Preempt adds.
const YieldImport = "__yield"

// YieldEvery is how many loop iterations pass between two yields: a yield
// (an exit to Go and back) costs about as much as a few hundred simple
// iterations, so this keeps it under 1% while a spinning guest still
// passes through Go every fraction of a millisecond.
const YieldEvery = 20_000

// ErrUnsupported is Preempt's refusal of a module it does not understand.
var ErrUnsupported = errors.New("wasm: module uses instructions the preemption rewrite does not know")

// StateGlobalPrefix names the exports Preempt adds for the module's mutable
// globals (stateGlobal), which the host reads and sets to put an instance
// back as it was after its start (host/wasm/snapshot.go).
const StateGlobalPrefix = "__switchyard_state_global_"

func stateGlobal(i uint64) string { return StateGlobalPrefix + strconv.FormatUint(i, 10) }

// Preempt returns the module with the preemption check at every loop head
// (above), or ErrUnsupported when it cannot be rewritten (the caller then
// uses wazero's own preemption). It also exports every mutable global the
// module defines (stateGlobal); state is the names of those exports when an
// instance's whole state is its linear memory and those globals — nil when
// the module imports a memory, a table or a mutable global, or has
// instructions that change a table or drop a segment, all state a reset
// could not put back. bin is not modified.
func Preempt(bin []byte) (out []byte, state []string, err error) {
	secs, err := sections(bin)
	if err != nil {
		return nil, nil, err
	}
	p := &preempt{secs: secs}
	// In this order: each step reads what the ones before it learnt (the
	// imports decide the function indices, the memory the globals added).
	for _, step := range []func() error{p.typeSection, p.importSection, p.globalSection, p.memorySection, p.addGlobals, p.functionSection} {
		if err := step(); err != nil {
			return nil, nil, err
		}
	}
	if out, err = p.assemble(bin[:8]); err != nil {
		return nil, nil, err
	}
	return out, p.state(), nil
}

// section is one section of a module: its id and its contents.
type section struct {
	id   byte
	body []byte
}

// sections splits a binary of WebAssembly 1 into its sections.
func sections(bin []byte) ([]section, error) {
	if len(bin) < 8 || string(bin[:4]) != "\x00asm" || binary.LittleEndian.Uint32(bin[4:8]) != 1 {
		return nil, ErrUnsupported
	}
	var secs []section
	for i := 8; i < len(bin); {
		id := bin[i]
		n, w := binary.Uvarint(bin[i+1:])
		if w <= 0 || uint64(len(bin)-i-1-w) < n {
			return nil, ErrUnsupported
		}
		secs = append(secs, section{id, bin[i+1+w : i+1+w+int(n)]})
		i += 1 + w + int(n)
	}
	return secs, nil
}

// preempt is one Preempt in progress: the sections it read and the new
// contents of those it changes.
type preempt struct {
	secs []section

	types, imp, globals, funcs []byte // the new sections' contents
	growBody                   []byte // the added function's body (growFunction), if any

	yieldType, growType          uint64 // the added types' indices
	nFuncImports, nGlobalImports uint64
	nGlobals                     uint64   // globals the module defines
	minPages                     uint64   // its memory's initial size
	vsize                        uint64   // the global holding the memory size the guest sees
	mutable                      []uint64 // the mutable globals to export (stateGlobal)

	importsState bool // a memory, table or mutable global from outside
	ownMemory    bool // the module defines its one memory
	exported     bool // it had an export section, now with mutable's exports
	rw           *bodyRewrite
}

func (p *preempt) find(id byte) int {
	for i, s := range p.secs {
		if s.id == id {
			return i
		}
	}
	return -1
}

// shift is a function's index after the yield import is added: the
// defined functions move up one.
func (p *preempt) shift(f uint64) uint64 {
	if f >= p.nFuncImports {
		return f + 1
	}
	return f
}

// typeSection appends the types of the yield import, () -> (), and of
// growFunction, (i32) -> (i32).
func (p *preempt) typeSection() error {
	var types []byte
	n := uint64(0)
	if i := p.find(1); i >= 0 {
		r := reader{b: p.secs[i].body}
		n = r.u()
		types = r.rest()
		if r.err != nil {
			return ErrUnsupported
		}
	}
	p.yieldType, p.growType = n, n+1
	p.types = append(append(binary.AppendUvarint(nil, n+2), types...), 0x60, 0, 0, 0x60, 1, 0x7f, 1, 0x7f)
	return nil
}

// importSection counts the imported functions and globals, notes imported
// state, and appends the yield import.
func (p *preempt) importSection() error {
	var imports []byte
	n := uint64(0)
	if i := p.find(2); i >= 0 {
		r := reader{b: p.secs[i].body}
		n = r.u()
		// Each loop over a count stops at the first error: a malformed
		// count (up to 2^64) would otherwise spin through failed reads.
		for k := uint64(0); k < n && r.err == nil; k++ {
			r.name()
			r.name()
			switch r.byte() {
			case 0:
				r.u()
				p.nFuncImports++
			case 1:
				r.byte()
				r.limits()
				p.importsState = true
			case 2:
				r.limits()
				p.importsState = true
			case 3:
				r.byte()
				if r.byte() != 0 {
					p.importsState = true
				}
				p.nGlobalImports++
			default:
				return ErrUnsupported
			}
		}
		if r.err != nil || r.i != len(r.b) {
			return ErrUnsupported
		}
		imports = r.b[uvarintLen(r.b):]
	}
	imp := binary.AppendUvarint(nil, n+1)
	imp = append(imp, imports...)
	imp = appendName(imp, abi.ImportModule)
	imp = appendName(imp, YieldImport)
	imp = append(imp, 0)
	p.imp = binary.AppendUvarint(imp, p.yieldType)
	// The new import's index is nFuncImports: the defined functions move
	// up one (shift).
	p.rw = &bodyRewrite{shift: p.shift, yield: p.nFuncImports}
	return nil
}

// globalSection copies the module's globals, noting the mutable ones.
func (p *preempt) globalSection() error {
	i := p.find(6)
	if i < 0 {
		return nil
	}
	r := reader{b: p.secs[i].body}
	p.nGlobals = r.u()
	for k := uint64(0); k < p.nGlobals && r.err == nil; k++ {
		p.globals = append(p.globals, r.byte())
		mut := r.byte()
		p.globals = append(p.globals, mut)
		if mut != 0 {
			p.mutable = append(p.mutable, p.nGlobalImports+k)
		}
		var err error
		if p.globals, err = rewriteExpr(&r, p.globals, p.shift); err != nil {
			return err
		}
	}
	if r.err != nil || r.i != len(r.b) {
		return ErrUnsupported
	}
	return nil
}

// memorySection reads the module's memory: its size as the guest sees it
// becomes a global of its own, vsize (see growFunction), when the module
// defines one memory.
func (p *preempt) memorySection() error {
	i := p.find(5)
	if i < 0 {
		return nil
	}
	r := reader{b: p.secs[i].body}
	switch n := r.u(); {
	case n > 1:
		return ErrUnsupported // multi-memory
	case n == 1:
		flags := r.u()
		if flags > 1 {
			return ErrUnsupported // shared or 64-bit
		}
		p.minPages = r.u()
		if flags == 1 {
			r.u()
		}
		p.ownMemory = true
	}
	if r.err != nil || r.i != len(r.b) {
		return ErrUnsupported
	}
	return nil
}

// addGlobals appends the countdown (tick) and vsize globals.
func (p *preempt) addGlobals() error {
	tick, vsize := p.nGlobalImports+p.nGlobals, p.nGlobalImports+p.nGlobals+1
	p.mutable = append(p.mutable, tick, vsize)
	g := append(append(binary.AppendUvarint(nil, p.nGlobals+2), p.globals...), 0x7f, 1, 0x41)
	g = appendSLEB(g, YieldEvery)
	g = append(g, 0x0b, 0x7f, 1, 0x41)
	g = appendSLEB(g, int64(p.minPages))
	p.globals = append(g, 0x0b)
	p.rw.tick, p.vsize = tick, vsize
	return nil
}

// functionSection declares growFunction, after the defined functions,
// for a module with a memory of its own.
func (p *preempt) functionSection() error {
	i := p.find(3)
	if i < 0 {
		if p.ownMemory {
			return ErrUnsupported // a memory but no functions
		}
		return nil
	}
	fr := reader{b: p.secs[i].body}
	nDefined := fr.u()
	p.funcs = p.secs[i].body
	if p.ownMemory {
		p.funcs = append(binary.AppendUvarint(nil, nDefined+1), fr.rest()...)
		p.funcs = binary.AppendUvarint(p.funcs, p.growType)
		p.rw.vsize, p.rw.grow, p.rw.memory = p.vsize, p.nFuncImports+1+nDefined, true
		p.growBody = growFunction(p.vsize)
	}
	if fr.err != nil {
		return ErrUnsupported
	}
	return nil
}

// assemble writes the module: head (magic and version), then the sections
// in the standard order, the ones the rewrite adds where they belong.
// Custom sections (names, producers) are left out: they name the old
// indices.
func (p *preempt) assemble(head []byte) ([]byte, error) {
	out := append([]byte(nil), head...)
	emit := func(id byte, body []byte) {
		out = append(out, id)
		out = binary.AppendUvarint(out, uint64(len(body)))
		out = append(out, body...)
	}
	wrote := map[byte]bool{}
	emitBefore := func(id byte) {
		for _, o := range []byte{1, 2, 3, 4, 5, 13, 6} {
			if o == id {
				return
			}
			if wrote[o] {
				continue
			}
			switch o {
			case 1:
				emit(1, p.types)
			case 2:
				emit(2, p.imp)
			case 6:
				emit(6, p.globals)
			default:
				continue
			}
			wrote[o] = true
		}
	}
	for _, s := range p.secs {
		if s.id == 0 {
			continue
		}
		emitBefore(s.id)
		body, err := p.section(s)
		if err != nil {
			return nil, err
		}
		emit(s.id, body)
		wrote[s.id] = true
	}
	emitBefore(255)
	return out, nil
}

// section is the new contents of s.
func (p *preempt) section(s section) ([]byte, error) {
	switch s.id {
	case 1:
		return p.types, nil
	case 2:
		return p.imp, nil
	case 3:
		return p.funcs, nil
	case 6:
		return p.globals, nil
	case 7:
		body := exportSection(s.body, p.shift, p.mutable)
		if body == nil {
			return nil, ErrUnsupported
		}
		p.exported = true
		return body, nil
	case 8:
		r := reader{b: s.body}
		body := binary.AppendUvarint(nil, p.shift(r.u()))
		return body, r.err
	case 9:
		return elemSection(s.body, p.shift)
	case 10:
		return codeSection(s.body, p.rw, p.growBody)
	}
	return s.body, nil
}

// state names the exports of the mutable globals when they and the memory
// are the whole state of an instance (Preempt), else nil. It reads what
// assemble learnt of the code.
func (p *preempt) state() []string {
	if p.importsState || p.rw.stateOps || !p.exported || !p.ownMemory {
		return nil
	}
	state := make([]string, len(p.mutable))
	for i, g := range p.mutable {
		state[i] = stateGlobal(g)
	}
	return state
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
	for k := uint64(0); k < n && r.err == nil; k++ {
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
			return nil, ErrUnsupported
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
		return nil, ErrUnsupported
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
			return nil, ErrUnsupported
		}
		fr := reader{b: r.b[r.i : r.i+int(size)]}
		r.i += int(size)
		fn = fn[:0]
		groups := fr.u()
		fn = binary.AppendUvarint(fn, groups)
		for g := uint64(0); g < groups && fr.err == nil; g++ {
			fn = binary.AppendUvarint(fn, fr.u())
			fn = append(fn, fr.byte())
		}
		var err error
		if fn, err = rewriteBody(&fr, fn, rw); err != nil {
			return nil, err
		}
		if fr.err != nil || fr.i != len(fr.b) {
			return nil, ErrUnsupported
		}
		out = binary.AppendUvarint(out, uint64(len(fn)))
		out = append(out, fn...)
	}
	if r.err != nil || r.i != len(r.b) {
		return nil, ErrUnsupported
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
				out = rw.appendLoopCheck(out)
			}
			continue
		case op == 0x10 || op == 0x12 || op == 0xd2: // call, return_call, ref.func
			out = append(out, op)
			out = binary.AppendUvarint(out, rw.shift(r.u()))
			continue
		case (op == 0x3f || op == 0x40) && rw.memory && !rw.constExpr:
			if r.u() != 0 {
				return nil, ErrUnsupported // multi-memory
			}
			if op == 0x3f { // memory.size
				out = append(out, 0x23)
				out = binary.AppendUvarint(out, rw.vsize)
			} else { // memory.grow
				out = append(out, 0x10)
				out = binary.AppendUvarint(out, rw.grow)
			}
			continue
		}
		if err := skipImmediates(r, op, rw); err != nil {
			return nil, err
		}
		if rw.constExpr && op != 0x41 && op != 0x42 && op != 0x43 && op != 0x44 && op != 0x23 && op != 0xd0 {
			return nil, ErrUnsupported
		}
		out = append(out, r.b[start:r.i]...)
	}
	return nil, ErrUnsupported
}

// appendLoopCheck appends the countdown put at a loop's head:
//
//	global.get n; i32.const 1; i32.sub; global.set n; global.get n
//	if n == 0 { n = YieldEvery; call yield }
//
// (wasm 1.0 has no global.tee: set, then get again).
func (rw *bodyRewrite) appendLoopCheck(out []byte) []byte {
	out = append(out, 0x23)
	out = binary.AppendUvarint(out, rw.tick)
	out = append(out, 0x41, 0x01, 0x6b, 0x24)
	out = binary.AppendUvarint(out, rw.tick)
	out = append(out, 0x23)
	out = binary.AppendUvarint(out, rw.tick)
	out = append(out, 0x45, 0x04, 0x40, 0x41)
	out = appendSLEB(out, YieldEvery)
	out = append(out, 0x24)
	out = binary.AppendUvarint(out, rw.tick)
	out = append(out, 0x10)
	out = binary.AppendUvarint(out, rw.yield)
	return append(out, 0x0b)
}

// skipImmediates reads the immediates of op, an instruction rewriteBody
// copies unchanged, noting in rw the ones that change a table or drop a
// segment; ErrUnsupported for an instruction it does not know.
func skipImmediates(r *reader, op byte, rw *bodyRewrite) error {
	switch {
	case op == 0x00 || op == 0x01 || op == 0x05 || op == 0x0f || op == 0x1a || op == 0x1b || op == 0xd1:
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
		return skipPrefixed(r, rw)
	default:
		return ErrUnsupported
	}
	return nil
}

// skipPrefixed reads an 0xfc instruction: the saturating conversions,
// bulk memory and the table instructions.
func skipPrefixed(r *reader, rw *bodyRewrite) error {
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
		return ErrUnsupported
	}
	return nil
}

// reader decodes the parts of a module the rewrite needs; the first error
// sticks.
type reader struct {
	b   []byte
	i   int
	err error
}

func (r *reader) fail() { r.err, r.i = ErrUnsupported, len(r.b) }

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
