//go:build !linux

package sockio

import "syscall"

// Raw reads and writes are Linux's here (New returns nil elsewhere).
const rawSupported = false

func rawRead(int, []byte) (int, syscall.Errno)  { return 0, syscall.ENOSYS }
func rawWrite(int, []byte) (int, syscall.Errno) { return 0, syscall.ENOSYS }
