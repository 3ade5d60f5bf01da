package billing

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// A segment's mirror is a file in shared memory (tmpfs, /dev/shm) of the
// segment's size, mapped into the gateway: settlements copy their frames
// into the mirror, and the flusher writes what is new there into the
// segment's file just before each fdatasync (flush: one linked io_uring
// chain, or a pwrite(2)).
//
// Why not map the segment's file itself, as a segment without a mirror
// is: the kernel's writeback write-protects every mapped page it cleans,
// and the next copy into a page faults it back writable through the
// filesystem (ext4's page_mkwrite: 4–5 µs a page on the development VM);
// unmapping the pages written before each sync spares the writeback's
// TLB shootdowns but not the faults. Under load every page of a segment
// is written, synced and written again each time the segment restarts,
// so a settlement paid ~0.7 µs in faults and the sync ~0.5 µs in TLB
// shootdowns and madvise (docs/performance.md, 2026-12-01). A tmpfs page
// is never written back: once touched it stays writable, and the write
// copies from it into the page cache like any write.
//
// A process that dies loses nothing: the mirror outlives it (tmpfs keeps
// a file until it is deleted or the machine stops), and the next Open
// replays a segment from its mirror — the file plus the writes not yet
// copied — when there is one. A power loss or kernel crash takes the
// mirror too, and the segment's file holds what was synced: the bound is
// the sync period's, as without a mirror.
//
// Mirrors are named after the journal directory's device and inode, so
// two gateways on one machine (each its own data_dir) never share one,
// and are deleted with their segments. Beside them a file (the prefix and
// "dir") names the directory: a journal directory deleted while mirrors
// of it were left in shared memory (a gateway killed, then its data_dir
// removed) leaves orphans, which the next journal opened on the machine
// deletes (sweepMirrors) instead of tmpfs keeping them until a restart.

// mirrorRoot is where mirrors live; empty when there is no tmpfs there.
// Asked the first time a journal opens, not when the package loads.
var mirrorRoot = sync.OnceValue(func() string {
	const dir = "/dev/shm"
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil || st.Type != tmpfsMagic {
		return ""
	}
	return dir
})

const tmpfsMagic = 0x01021994

// mirrorPrefix names the mirrors of the journal in dir; empty when
// segments are not mirrored (no tmpfs, or dir cannot be identified).
func mirrorPrefix(root, dir string) string {
	if root == "" {
		return ""
	}
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		return ""
	}
	return filepath.Join(root, fmt.Sprintf("switchyard-journal-%x-%x-", st.Dev, st.Ino))
}

// mirrorDirSuffix ends the name of the file that names a prefix's journal
// directory.
const mirrorDirSuffix = "dir"

// claimMirrors records which directory the mirrors of prefix belong to
// (see sweepMirrors).
func claimMirrors(prefix, dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	return os.WriteFile(prefix+mirrorDirSuffix, []byte(abs), 0o600)
}

// sweepMirrors deletes the mirrors in root whose journal directory is
// gone (or is another directory now: its device and inode differ).
func sweepMirrors(root string) {
	if root == "" {
		return
	}
	ents, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, "switchyard-journal-") || !strings.HasSuffix(name, "-"+mirrorDirSuffix) {
			continue
		}
		prefix := filepath.Join(root, strings.TrimSuffix(name, mirrorDirSuffix))
		dir, err := os.ReadFile(prefix + mirrorDirSuffix)
		if err != nil || mirrorPrefix(root, string(dir)) == prefix {
			continue // unreadable (another user's), or its directory is there
		}
		removeMirrors(prefix)
		_ = os.Remove(prefix + mirrorDirSuffix)
	}
}

// mirrorOf is the mirror of segment path for prefix.
func mirrorOf(prefix, path string) string {
	if prefix == "" {
		return ""
	}
	return prefix + filepath.Base(path)
}

// createMirror makes the mirror of a new segment of size bytes (zeros, as
// the segment's file) and maps it.
func createMirror(path string, size int64) ([]byte, error) {
	_ = os.Remove(path) // a stale one of an earlier segment of that number
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	defer f.Close() // the mapping keeps the file
	if err := f.Truncate(size); err != nil {
		os.Remove(path)
		return nil, err
	}
	m, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		os.Remove(path)
		return nil, err
	}
	return m, nil
}

// readSegment is what a replay reads of segment path: its mirror when it
// has one (the file plus the writes not yet copied into it), else the
// file.
func readSegment(prefix, path string) ([]byte, error) {
	if mp := mirrorOf(prefix, path); mp != "" {
		data, err := os.ReadFile(mp)
		if err == nil {
			return data, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	return os.ReadFile(path)
}

// removeMirrors deletes every mirror of the journal with prefix (replay,
// once their segments are in the store), but not the file naming its
// directory.
func removeMirrors(prefix string) {
	if prefix == "" {
		return
	}
	dir, base := filepath.Split(prefix)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), base) && e.Name() != base+mirrorDirSuffix {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// markDirty records that [lo, hi) of a mirrored segment changed: the next
// sync copies it into the file. mu is held, or the segment is sealed and
// only its recycler writes it.
func (s *segment) markDirty(lo, hi int64) {
	if s.dhi <= s.dlo {
		s.dlo, s.dhi = lo, hi
		return
	}
	s.dlo, s.dhi = min(s.dlo, lo), max(s.dhi, hi)
}

// takeDirty returns the mirror's bytes changed since the last call and
// their offset, and forgets them. mu is held (or see markDirty).
func (s *segment) takeDirty() (b []byte, off int64) {
	if s.mirror == "" || s.dhi <= s.dlo {
		return nil, 0
	}
	b, off = s.m[s.dlo:s.dhi], s.dlo
	s.dlo, s.dhi = 0, 0
	return b, off
}

// flushDirty copies what changed in s's mirror into its file, and syncs
// the file. mu is held (or see markDirty).
func (j *journal) flushDirty(s *segment) error {
	b, off := s.takeDirty()
	return j.flush(s.f, b, off)
}
