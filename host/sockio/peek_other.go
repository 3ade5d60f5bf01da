//go:build !unix

package sockio

import (
	"errors"
	"syscall"
)

// Supported reports whether Peek can look at a socket here.
const Supported = false

var (
	errIntr  = errors.New("unreachable")
	errAgain = errIntr
)

func recvPeek(int, []byte) (int, error) { return 0, errors.ErrUnsupported }

const rawSupported = false

func rawRead(int, []byte) (int, syscall.Errno)  { return 0, syscall.ENOSYS }
func rawWrite(int, []byte) (int, syscall.Errno) { return 0, syscall.ENOSYS }
