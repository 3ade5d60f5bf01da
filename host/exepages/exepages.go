// Package exepages hands back to the kernel the pages of the gateway's own
// executable that only its start-up read.
//
// Why: a Go program runs the init functions of every package it links
// (over 300 here: the AWS SDK's credential chain, gRPC and protobuf for
// OTLP, pgx, go-redis, Prometheus, wazero, …), and each page those inits
// touch is mapped into the process — 64 KiB at a time, because the kernel
// maps the cached pages around each faulting one (fault-around). After
// start-up about 33 MB of the 70 MB executable are mapped and counted in
// the process's RSS, though a request reads a fraction of them and many
// are never read again (measured in docs/performance.md). Mapped
// executable pages are also what the kernel reclaims last under memory
// pressure (it keeps referenced VM_EXEC pages active).
//
// Release unmaps the executable's read-only mappings (text, rodata,
// pclntab) with madvise(MADV_DONTNEED). Their contents are the file's,
// unchanged, so nothing is lost: the next read of a page faults it back in
// from the page cache (a minor fault, no disk read while the kernel keeps
// the file cached), and the process's RSS is again the pages it uses. The
// page cache itself is not touched: what changes is that the idle process
// no longer pins the start-up pages, so the kernel may drop them first.
//
// Writable mappings (.data, .bss, and any page the loader relocated) are
// never released: for a private mapping MADV_DONTNEED would throw their
// changes away.
package exepages

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
)

// mapping is one line of /proc/self/maps that Release may unmap.
type mapping struct {
	start, end uint64
}

// readOnlyOf returns the mappings of maps (the text of /proc/self/maps)
// that map the file at path (as /proc/self/exe reads), privately and
// without write permission. The path, not the device and inode, names the
// file: on overlayfs (a container's root) the maps line carries the
// underlying file's device and inode, which stat of the path does not
// return.
func readOnlyOf(maps io.Reader, path string) ([]mapping, error) {
	var out []mapping
	sc := bufio.NewScanner(maps)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		// address perms offset dev inode path — the path is the rest of
		// the line, and may hold spaces.
		line := sc.Bytes()
		var f [5][]byte
		rest := line
		for i := range f {
			rest = bytes.TrimLeft(rest, " ")
			end := bytes.IndexByte(rest, ' ')
			if end < 0 {
				end = len(rest)
			}
			f[i], rest = rest[:end], rest[end:]
		}
		if string(bytes.TrimLeft(rest, " ")) != path {
			continue
		}
		perms := f[1]
		if len(perms) != 4 || perms[0] != 'r' || perms[1] != '-' || perms[3] != 'p' {
			continue
		}
		lo, hi, ok := bytes.Cut(f[0], []byte{'-'})
		if !ok {
			return nil, fmt.Errorf("exepages: bad address range %q", f[0])
		}
		start, err1 := strconv.ParseUint(string(lo), 16, 64)
		end, err2 := strconv.ParseUint(string(hi), 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			return nil, fmt.Errorf("exepages: bad address range %q", f[0])
		}
		out = append(out, mapping{start, end})
	}
	return out, sc.Err()
}
