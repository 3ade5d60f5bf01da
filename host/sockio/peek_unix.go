//go:build unix && !linux

package sockio

import "syscall"

// Supported reports whether Peek can look at a socket here.
const Supported = true

var (
	errIntr  error = syscall.EINTR
	errAgain error = syscall.EAGAIN
)

func recvPeek(fd int, b []byte) (int, error) {
	n, _, err := syscall.Recvfrom(fd, b, syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	return n, err
}

const rawSupported = false

func rawRead(int, []byte) (int, syscall.Errno)  { return 0, syscall.ENOSYS }
func rawWrite(int, []byte) (int, syscall.Errno) { return 0, syscall.ENOSYS }
