//go:build linux && race

package sockio

import "syscall"

// Under the race detector the calls are syscall.Read and syscall.Write:
// the same system calls, through the runtime's bookkeeping, because those
// also tell the detector that I/O orders memory (a test that changes a
// setting, then sends a request the gateway reads, is ordered by the
// socket between them; raw calls hide that edge from the detector, which
// then reports a race the kernel rules out). The code around them — the
// poller's callbacks, EAGAIN, deadlines, errors — is the same, and the
// raw calls themselves run in every build without -race (make test's
// PostgreSQL pass of the gateway's suite, and host/sockio's own tests).
const rawSupported = true

func rawRead(fd int, b []byte) (int, syscall.Errno) {
	n, err := syscall.Read(fd, b)
	return max(n, 0), errno(err)
}

func rawWrite(fd int, b []byte) (int, syscall.Errno) {
	if len(b) == 0 {
		return 0, 0
	}
	n, err := syscall.Write(fd, b)
	return max(n, 0), errno(err)
}

func errno(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	if e, ok := err.(syscall.Errno); ok {
		return e
	}
	return syscall.EIO
}
