package wasm_test

// A tiny WebAssembly binary writer, so tests can make exactly the module they
// need (a wrong ABI marker, a missing export, a hostile loop) without a
// toolchain. Only what the tests use is supported.

const (
	i32 = 0x7f
	i64 = 0x7e
)

type fn struct {
	export          string
	params, results []byte
	body            []byte // instructions, without the final end
}

type imp struct {
	module, name    string
	params, results []byte
}

func uleb(v uint32) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			c |= 0x80
		}
		b = append(b, c)
		if v == 0 {
			return b
		}
	}
}

func name(s string) []byte { return append(uleb(uint32(len(s))), s...) }

func vec(items ...[]byte) []byte {
	out := uleb(uint32(len(items)))
	for _, it := range items {
		out = append(out, it...)
	}
	return out
}

func section(id byte, content []byte) []byte {
	return append(append([]byte{id}, uleb(uint32(len(content)))...), content...)
}

func functype(params, results []byte) []byte {
	t := []byte{0x60}
	t = append(t, uleb(uint32(len(params)))...)
	t = append(t, params...)
	t = append(t, uleb(uint32(len(results)))...)
	return append(t, results...)
}

// module builds a binary with the imports, functions, one exported memory of
// memPages pages (none when 0) and the given extra exports of functions.
func module(imports []imp, funcs []fn, memPages uint32) []byte {
	var types, imps, fidx, exports, codes [][]byte
	for i, im := range imports {
		types = append(types, functype(im.params, im.results))
		imps = append(imps, append(append(name(im.module), name(im.name)...), append([]byte{0x00}, uleb(uint32(i))...)...))
	}
	for i, f := range funcs {
		ti := uint32(len(imports) + i)
		types = append(types, functype(f.params, f.results))
		fidx = append(fidx, uleb(ti))
		if f.export != "" {
			exports = append(exports, append(name(f.export), append([]byte{0x00}, uleb(uint32(len(imports)+i))...)...))
		}
		body := append([]byte{0x00}, f.body...) // no locals
		body = append(body, 0x0b)
		codes = append(codes, append(uleb(uint32(len(body))), body...))
	}
	out := []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}
	out = append(out, section(1, vec(types...))...)
	if len(imps) > 0 {
		out = append(out, section(2, vec(imps...))...)
	}
	out = append(out, section(3, vec(fidx...))...)
	if memPages > 0 {
		out = append(out, section(5, vec(append([]byte{0x00}, uleb(memPages)...)))...)
		exports = append(exports, append(name("memory"), 0x02, 0x00))
	}
	out = append(out, section(7, vec(exports...))...)
	out = append(out, section(10, vec(codes...))...)
	return out
}

// Instructions.
var (
	i32const1024 = []byte{0x41, 0x80, 0x08}
	i64OutOK     = []byte{0x42, 0x81, 0x80, 0x80, 0x80, 0x80, 0x02} // (2048<<32)|1: one zero byte = status ok
	loopForever  = []byte{0x03, 0x40, 0x0c, 0x00, 0x0b}             // loop br 0 end
	growForever  = []byte{0x03, 0x40, 0x41, 0x10, 0x40, 0x00, 0x1a, 0x0c, 0x00, 0x0b}
	unreachable  = []byte{0x00}
	// loop v128.const 0 drop br 0 end: SIMD, which rewrite leaves alone.
	loopForeverSIMD = append(append([]byte{0x03, 0x40, 0xfd, 0x0c}, make([]byte, 16)...), 0x1a, 0x0c, 0x00, 0x0b)
)

// abiFuncs are the exports of a well-formed ABI v1 module whose handle runs
// prefix first, then returns an empty ok output.
func abiFuncs(marker string, handlePrefix []byte) []fn {
	return []fn{
		{export: marker},
		{export: "sy_input", params: []byte{i32}, results: []byte{i32}, body: i32const1024},
		{export: "sy_handle", params: []byte{i32, i32}, results: []byte{i64}, body: append(append([]byte{}, handlePrefix...), i64OutOK...)},
	}
}
