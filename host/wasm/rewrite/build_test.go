package rewrite

import "encoding/binary"

// A small WebAssembly binary writer for the hand-written test modules:
// sections are written as their items, each already encoded.

const (
	i32 = 0x7f
	i64 = 0x7e
)

// wasmModule is the binary with these sections (id, then contents).
func wasmModule(secs ...[]byte) []byte {
	out := []byte("\x00asm\x01\x00\x00\x00")
	for _, s := range secs {
		out = append(out, s...)
	}
	return out
}

// sec is section id holding the vector of items.
func sec(id byte, items ...[]byte) []byte {
	body := binary.AppendUvarint(nil, uint64(len(items)))
	for _, it := range items {
		body = append(body, it...)
	}
	return rawSec(id, body)
}

// rawSec is section id with body as its contents (no vector count added).
func rawSec(id byte, body []byte) []byte {
	return append(binary.AppendUvarint([]byte{id}, uint64(len(body))), body...)
}

func u(v uint64) []byte { return binary.AppendUvarint(nil, v) }

func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func functype(params, results []byte) []byte {
	return cat([]byte{0x60}, u(uint64(len(params))), params, u(uint64(len(results))), results)
}

func str(s string) []byte { return appendName(nil, s) }

// export is an export of kind (0 function, 1 table, 2 memory, 3 global).
func export(name string, kind byte, idx uint64) []byte {
	return cat(str(name), []byte{kind}, u(idx))
}

// importFunc imports mod.name of type typ.
func importFunc(mod, name string, typ uint64) []byte {
	return cat(str(mod), str(name), []byte{0}, u(typ))
}

// code is a function body: one local group per byte of locals (one local
// of that type each), then the instructions and the final end.
func code(locals []byte, instrs ...byte) []byte {
	body := u(uint64(len(locals)))
	for _, l := range locals {
		body = append(body, 1, l)
	}
	body = append(append(body, instrs...), 0x0b)
	return cat(u(uint64(len(body))), body)
}

// i32c is i32.const v.
func i32c(v int64) []byte { return appendSLEB([]byte{0x41}, v) }
