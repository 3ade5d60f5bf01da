package wasm

import "encoding/binary"

// Encoders for tests that assemble a module.
var (
	AppendName = func(b []byte, s string) []byte {
		return append(binary.AppendUvarint(b, uint64(len(s))), s...)
	}
	AppendSLEB = func(b []byte, v int64) []byte {
		for {
			c := byte(v & 0x7f)
			v >>= 7
			if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
				return append(b, c)
			}
			b = append(b, c|0x80)
		}
	}
)
