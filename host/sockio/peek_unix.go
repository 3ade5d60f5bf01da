//go:build unix && !linux

package sockio

import "syscall"

var (
	errIntr  error = syscall.EINTR
	errAgain error = syscall.EAGAIN
)

func recvPeek(fd int, b []byte) (int, error) {
	n, _, err := syscall.Recvfrom(fd, b, syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	return n, err
}
