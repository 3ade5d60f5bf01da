//go:build wasip1

package sdk

import "unsafe"

// Log levels for Log.
const (
	LevelDebug int32 = 0
	LevelInfo  int32 = 1
	LevelWarn  int32 = 2
	LevelError int32 = 3
)

//go:wasmimport switchyard log
func hostLog(level int32, ptr unsafe.Pointer, n int32)

// Log writes a line to the gateway's log, tagged with the module's name. The
// manifest must grant host function "log", or the host refuses to load a
// module that calls it.
func Log(level int32, msg string) {
	if len(msg) == 0 {
		return
	}
	hostLog(level, unsafe.Pointer(unsafe.StringData(msg)), int32(len(msg)))
}
