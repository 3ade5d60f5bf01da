//go:build linux

package sockio

import (
	"syscall"
	"unsafe"
)

var (
	errIntr  error = syscall.EINTR
	errAgain error = syscall.EAGAIN
)

// recvPeek is recv(fd, b, MSG_PEEK|MSG_DONTWAIT) as a raw system call:
// MSG_DONTWAIT makes it return at once, so the runtime need not know.
func recvPeek(fd int, b []byte) (int, error) {
	n, _, e := syscall.RawSyscall6(syscall.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)),
		syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}
