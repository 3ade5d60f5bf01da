//go:build !linux && !darwin

package wasm

import "github.com/tetratelabs/wazero/experimental"

// mmapAllocator: wazero's own allocation on platforms without mmap here.
var mmapAllocator experimental.MemoryAllocator
