package rewrite

import (
	"encoding/binary"
	"errors"
	"sort"
)

// MergeData rewrites a module's data section so that its active data
// segments become a few large ones: Go's linker emits one segment per symbol
// (about 40,000 in a plugin), and wazero evaluates and copies each one on
// every instantiation, which was most of the cost of a fresh instance, and
// keeps each decoded segment as an object of its own while the module is
// loaded. Segments closer than mergeGap bytes are joined, the gap filled
// with zeros, which is what fresh memory holds there anyway. The module
// means exactly the same.
//
// The binary is returned unchanged when the rewrite could change meaning or
// is not understood: a DataCount section (the code may name segments by
// index, in memory.init or data.drop), passive segments or segments of
// another memory, offsets that are not constants, or segments that are not
// overlap (the order of writes would matter).
func MergeData(bin []byte) []byte {
	const mergeGap = 4096
	if len(bin) < 8 || string(bin[:4]) != "\x00asm" {
		return bin
	}
	var (
		segs                []seg
		dataStart, dataEnd  int
		haveData, haveCount bool
	)
	for i := 8; i < len(bin); {
		id := bin[i]
		n, w := binary.Uvarint(bin[i+1:])
		// Compared as uint64: a size of 2^63 or more is negative as an int.
		if w <= 0 || n > uint64(len(bin)-i-1-w) {
			return bin
		}
		body := bin[i+1+w : i+1+w+int(n)]
		switch id {
		case 12:
			haveCount = true
		case 11:
			haveData, dataStart, dataEnd = true, i, i+1+w+int(n)
			var err error
			if segs, err = parseData(body); err != nil {
				return bin
			}
		}
		i += 1 + w + int(n)
	}
	if !haveData || haveCount || len(segs) < 2 {
		return bin
	}
	// Segments that do not overlap can be written in any order.
	sort.SliceStable(segs, func(i, j int) bool { return segs[i].off < segs[j].off })
	merged := []seg{{off: segs[0].off, data: append([]byte(nil), segs[0].data...)}}
	for _, s := range segs[1:] {
		last := &merged[len(merged)-1]
		end := uint64(last.off) + uint64(len(last.data))
		if uint64(s.off) < end {
			return bin // overlapping: the order of writes matters
		}
		if gap := uint64(s.off) - end; gap <= mergeGap {
			last.data = append(last.data, make([]byte, gap)...)
			last.data = append(last.data, s.data...)
			continue
		}
		merged = append(merged, seg{off: s.off, data: append([]byte(nil), s.data...)})
	}
	var body []byte
	body = binary.AppendUvarint(body, uint64(len(merged)))
	for _, s := range merged {
		body = append(body, 0, 0x41) // active, memory 0; i32.const
		body = appendSLEB(body, int64(int32(s.off)))
		body = append(body, 0x0b) // end
		body = binary.AppendUvarint(body, uint64(len(s.data)))
		body = append(body, s.data...)
	}
	out := make([]byte, 0, len(bin))
	out = append(out, bin[:dataStart]...)
	out = append(out, 11)
	out = binary.AppendUvarint(out, uint64(len(body)))
	out = append(out, body...)
	return append(out, bin[dataEnd:]...)
}

// seg is an active data segment of memory 0.
type seg struct {
	off  uint32
	data []byte
}

var errDataShape = errors.New("data section not mergeable")

// parseData reads the segments of a data section whose segments are all
// active in memory 0 at an i32.const offset, in increasing order.
func parseData(b []byte) ([]seg, error) {
	n, w := binary.Uvarint(b)
	if w <= 0 || n > uint64(len(b)) {
		return nil, errDataShape
	}
	b = b[w:]
	segs := make([]seg, 0, n)
	for k := uint64(0); k < n; k++ {
		if len(b) < 2 || b[0] != 0 || b[1] != 0x41 {
			return nil, errDataShape
		}
		off, w := readSLEB(b[2:])
		if w <= 0 || off < 0 || off > 1<<32-1 || len(b) < 2+w+1 || b[2+w] != 0x0b {
			return nil, errDataShape
		}
		b = b[2+w+1:]
		size, w2 := binary.Uvarint(b)
		if w2 <= 0 || size > uint64(len(b)-w2) {
			return nil, errDataShape
		}
		segs = append(segs, seg{off: uint32(off), data: b[w2 : w2+int(size)]})
		b = b[w2+int(size):]
	}
	if len(b) != 0 {
		return nil, errDataShape
	}
	return segs, nil
}

// readSLEB decodes a signed LEB128 of at most 5 bytes (an i32).
func readSLEB(b []byte) (int64, int) {
	var r int64
	var shift uint
	for i := 0; i < len(b) && i < 5; i++ {
		c := b[i]
		r |= int64(c&0x7f) << shift
		shift += 7
		if c&0x80 == 0 {
			if shift < 64 && c&0x40 != 0 {
				r |= -1 << shift
			}
			return int64(int32(r)), i + 1
		}
	}
	return 0, -1
}

func appendSLEB(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
