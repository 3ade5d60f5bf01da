package wasm

import (
	"encoding/binary"
	"time"
)

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

// ParkIdle parks the engine's idle tenant modules as the parker would at
// now (park.go), and returns how many it parked.
func (e *Engine) ParkIdle(now time.Time) int { return e.parkIdle(now) }
