package exepages

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Release unmaps the executable's read-only mappings (see the package
// comment) and returns how many bytes of address space it advised. Call
// it once start-up is over: pages read after it are mapped again as they
// are read.
func Release() (int64, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, fmt.Errorf("exepages: %w", err)
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return 0, fmt.Errorf("exepages: %w", err)
	}
	defer f.Close()
	maps, err := readOnlyOf(f, exe)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, m := range maps {
		// The raw syscall: the range is not Go memory, and a []byte over
		// it (unix.Madvise's argument) would only be made to be passed on.
		if _, _, e := unix.Syscall(unix.SYS_MADVISE, uintptr(m.start), uintptr(m.end-m.start), unix.MADV_DONTNEED); e != 0 {
			return n, fmt.Errorf("exepages: madvise %#x-%#x: %w", m.start, m.end, e)
		}
		n += int64(m.end - m.start)
	}
	return n, nil
}
