//go:build unix

package netguard

import "syscall"

// RaiseFDLimit raises the soft RLIMIT_NOFILE to the hard limit and returns
// the limit now in force. Go (1.19+) already does this when package os is
// initialised on most Unix systems; calling it at start makes the step
// explicit, reports the figure the caps are derived from, and covers
// platforms where the runtime does not.
func RaiseFDLimit() (uint64, error) {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0, err
	}
	if r.Cur < r.Max {
		want := r
		want.Cur = r.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err != nil {
			return uint64(r.Cur), err
		}
		r = want
	}
	return uint64(r.Cur), nil
}

// FDLimit is the soft RLIMIT_NOFILE (1024 if it cannot be read).
func FDLimit() uint64 {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 1024
	}
	return uint64(r.Cur)
}
