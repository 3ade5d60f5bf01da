package billing

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/switchyard/switchyard/host/datasync"
	"github.com/switchyard/switchyard/host/store"
)

// The settlement journal makes an acknowledged charge durable without
// waiting for the store's commit (Options.Journal, docs/billing.md):
// Settle appends the generation record to a local append-only file, then
// queues the store write as before. The next Open replays every record of
// the journal that the store does not have yet, before it serves.
//
// How durable the append is before Settle returns is Options.JournalSync:
//   - zero (settle: journal-fsync): the file's fdatasync. Nothing
//     acknowledged is lost even to a power loss or a kernel crash.
//   - a period (settle: journal, the default 5 ms, settle_journal_sync):
//     the copy into the segment's mirror in shared memory
//     (journal_mirror.go; without one, into the segment's mapped file, or
//     its write(2)) only; the flusher copies what is new into the file
//     and fdatasyncs it within the period after its first unsynced
//     write. The record is in a file of the kernel's (tmpfs or the page
//     cache) when the client hears its cost, so a crash of the process (kill -9,
//     an OOM kill, a panic) loses nothing; a power loss or kernel crash
//     loses at most the last period's settlements. What this buys: an
//     fdatasync (~0.5 ms on the development machine, and a blocked thread
//     the runtime replaces) is taken off every request's latency, and is
//     paid once per period instead of once per group (measured in
//     docs/performance.md: 25% of the gateway's CPU for a 1 KB chat at 16
//     clients, and 0.3 ms of its added p50 at one).
//
// Why not wait for the store: a bbolt commit costs two fsyncs and rewrites
// the last pages of each tree it touches (~1.2 ms per request measured);
// a record appended to a preallocated file costs one fdatasync of the
// pages written (~0.5 ms on the development machine), shared by every
// settlement that arrives while the previous one is in flight (group
// commit: each settling goroutine writes its own frame, and the flusher's
// one sync wakes all of them at once). The store still gathers a commit window of
// writes into one transaction, so its cost per request is unchanged.
//
// On disk: segments journal-<n>.log in one directory, each preallocated
// with zeros (so a write of records already allocated needs no metadata
// flush) and filled with frames [length u32][crc32c u32][epoch u32]
// [payload]. A zero length ends a segment; a frame whose checksum fails is
// a write torn by the crash (never acknowledged: its waiters were not
// woken) and ends it too. When every settlement of the current segment is
// in the store, the flusher writes a zero length over its first frame
// (retire) and the next write starts again at its beginning with the next
// epoch; a frame of an older epoch ends the segment; a segment
// that fills up, or that has kept settlements for journalMaxAge, is
// sealed and the spare one takes its place. A sealed segment whose
// settlements are all in the store becomes the spare (retired: a zero
// length over its first frame, synced, so a replay reads nothing of it
// however long it waits), or is deleted when there is one. Without a
// spare, one is prepared in the background once the current segment is
// three quarters full. So no settlement waits for a segment to be
// created (4 MiB of zeros written and fsynced: 2–3 ms on the development
// machine, which every client waiting on the journal then waited for),
// and under steady load the journal writes each byte once, not once as
// zeros and again as frames. So the journal holds only
// settlements the store may lack and ones committed minutes ago —
// never a record old enough for retention to have pruned it, which a
// replay would charge again. Whatever is left at Open is replayed; replay
// is idempotent because a settlement commits only when its generation
// record is absent (commitSettlement).
type journal struct {
	dir  string
	lock *os.File // flock: one process per journal directory
	logf func(string, ...any)

	// syncEvery is Options.JournalSync: 0 syncs each write before its
	// settlement returns; otherwise the longest a write stays unsynced.
	syncEvery time.Duration
	// segSize is a segment's preallocated size (journalSegment; tests
	// make it small to fill segments quickly).
	segSize int64
	// flush writes b (what changed in a segment's mirror, if anything)
	// at off in the segment's file, then fdatasyncs it (tests hold it):
	// syncer's, which does both without holding a P of the scheduler
	// where io_uring is available (host/datasync says why).
	flush  func(f *os.File, b []byte, off int64) error
	syncer *datasync.Syncer

	// mu is held by whoever writes a frame (a settling goroutine, which
	// copies its own frame into the segment) or changes the current
	// segment — never across an fdatasync of the current segment: the
	// flusher syncs outside it, so settlements keep being written while
	// the disk works (it held every settlement for the 0.5–3 ms of each
	// sync when the sync was taken under the writers' lock: 2.5 µs of a
	// 1 KB chat's CPU at 16 clients in hand-offs and wake-ups,
	// docs/performance.md).
	mu      sync.Mutex
	closed  bool
	seg     *segment
	segN    uint64
	dirty   bool    // seg has writes the next sync must cover
	armed   bool    // the flusher knows of them (it was poked since its last sync)
	batch   *jbatch // syncEvery 0: the settlements waiting for the next sync
	sealErr error   // syncEvery 0: a seal's sync failed, which fails the batch
	scratch []byte  // a frame assembled for pwrite (a segment not mapped)
	// syncing: the flusher is copying the current segment's mirror into
	// its file outside mu, so the segment must not restart (its frames
	// would be overwritten under the copy).
	syncing bool
	// mirrors names the segments' mirrors in shared memory
	// (journal_mirror.go); empty: segments are not mirrored.
	mirrors string

	wake   chan struct{}
	quit   chan struct{}
	exited chan struct{}

	// spareMu guards the segment ready to be the next one, and whether
	// one is being made ready (retired or created) in the background.
	spareMu   sync.Mutex
	spare     *segment
	preparing bool
	closing   bool           // close began: segments are deleted, not kept
	bg        sync.WaitGroup // background preparations, waited for by close
}

// jbatch is one group commit of the journal (syncEvery 0): done is closed
// when the sync covering its settlements' frames returned, err its error.
type jbatch struct {
	done chan struct{}
	err  error
}

// segment is one journal file. pending counts its settlements not yet
// committed to the store; a sealed segment (no more appends) with none
// pending is recycled or deleted.
type segment struct {
	path string
	f    *os.File
	// m maps the segment's mirror (journal_mirror.go) or, without one,
	// the whole preallocated file (MAP_SHARED): frames are copied into it
	// (put). nil when the mapping failed: frames are written with
	// pwrite(2) instead.
	m []byte
	// mirror is the mirror's path, empty without one; [dlo, dhi) is what
	// changed in it since the last copy into the file.
	mirror   string
	dlo, dhi int64
	off      int64
	size     int64
	epoch    uint32
	// dropped: the mapping's pages below it, all written in this epoch,
	// have been taken out of the process's page table (sync).
	dropped int64
	born    time.Time // when the epoch's first frame was written
	// use is read-held by an fdatasync of the file taken outside the
	// journal's mu, and write-held by remove, so the file is not closed
	// (and its descriptor reused) under the sync.
	use     sync.RWMutex
	pending atomic.Int64
	j       *journal
	sealed  atomic.Bool
	removed atomic.Bool
	// broken: a write or sync of the segment failed, so it is never
	// used again (not made the spare).
	broken atomic.Bool
}

// journalSegment is a segment's preallocated size: about 5,000 settlements
// of a 1 KB chat. A larger batch gets a segment of its own size.
const journalSegment = 4 << 20

// journalMaxAge bounds how long a segment keeps frames (its epoch's first
// one) before it is sealed: far inside config.MinRetention (an hour), the
// age of the youngest generation record retention may delete.
const journalMaxAge = 5 * time.Minute

var pageSize = os.Getpagesize()

// frameHeader is a frame's length, checksum and epoch.
const frameHeader = 12

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// openJournal takes the directory's lock for the process's life. Segments
// an earlier process left must be replayed (replayJournal, under this
// lock) before the first append: replay deletes them, and new segments
// are numbered from 1.
func openJournal(dir string, syncEvery time.Duration, logf func(string, ...any)) (*journal, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("billing: journal: %w", err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	j := &journal{dir: dir, lock: lock, logf: logf, syncEvery: syncEvery, segSize: journalSegment, syncer: datasync.New(),
		wake: make(chan struct{}, 1), quit: make(chan struct{}), exited: make(chan struct{})}
	j.flush = j.syncer.WriteDatasync
	sweepMirrors(mirrorRoot())
	if j.mirrors = mirrorPrefix(mirrorRoot(), dir); j.mirrors != "" {
		if err := claimMirrors(j.mirrors, dir); err != nil {
			if logf != nil {
				logf("billing: journal segments not mirrored in shared memory: %v", err)
			}
			j.mirrors = ""
		}
	}
	if syncEvery == 0 {
		j.batch = &jbatch{done: make(chan struct{})}
	}
	go j.loop()
	return j, nil
}

// lockDir takes an exclusive lock on dir/LOCK for this process's life: two
// gateways appending to one journal would each replay the other's
// records as their own.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("billing: journal: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("billing: journal %s is in use by another process (one gateway per data_dir): %w", dir, err)
	}
	return f, nil
}

type segFile struct {
	n    uint64
	path string
}

// journalSegments lists dir's segments in order.
func journalSegments(dir string) ([]segFile, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("billing: journal: %w", err)
	}
	var segs []segFile
	for _, e := range ents {
		name := e.Name()
		num, ok := strings.CutPrefix(name, "journal-")
		num, ok2 := strings.CutSuffix(num, ".log")
		if !ok || !ok2 {
			continue
		}
		n, err := strconv.ParseUint(num, 10, 64)
		if err != nil {
			continue
		}
		segs = append(segs, segFile{n: n, path: filepath.Join(dir, name)})
	}
	slices.SortFunc(segs, func(a, b segFile) int { return cmp.Compare(a.n, b.n) })
	return segs, nil
}

// append makes payload durable and returns the segment it is in (for
// committed, once the store has it). The settling goroutine writes its
// frame itself — a copy into the segment's mapping, under mu — so a
// settlement costs no hand-off to another goroutine; with a sync period
// it returns then (the flusher is poked only by the first write since
// its last sync, to schedule the next), and with none (syncEvery 0) it
// waits for the sync that covers its frame, shared by every settlement
// written while the previous one was in flight (group commit).
func (j *journal) append(payload []byte) (*segment, error) {
	var hdr [frameHeader]byte // the epoch is the segment's, under mu
	binary.LittleEndian.PutUint32(hdr[:4], uint32(len(payload)))
	binary.LittleEndian.PutUint32(hdr[4:], crc32.Checksum(payload, crcTable))
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return nil, ErrClosed
	}
	s, err := j.write(hdr[:], payload)
	if err != nil {
		j.mu.Unlock()
		if j.logf != nil {
			j.logf("billing: journal write failed (the settlement waits for the store instead): %v", err)
		}
		return nil, err
	}
	s.pending.Add(1)
	b := j.batch
	poke := !j.armed
	j.armed = true
	j.mu.Unlock()
	if poke {
		j.poke()
	}
	if b != nil {
		<-b.done
		if b.err != nil {
			// Not durable: the settlement waits for the store, and the
			// segment does not keep it.
			s.committed()
			return nil, b.err
		}
	}
	return s, nil
}

// poke wakes the flusher goroutine.
func (j *journal) poke() {
	select {
	case j.wake <- struct{}{}:
	default:
	}
}

// loop is the flusher: it retires the current segment once the store has
// all of it, and syncs — within syncEvery of the first write the disk
// does not have yet (a burst of settlements shares one fdatasync, and an
// idle journal never wakes), or at once with no period.
func (j *journal) loop() {
	defer close(j.exited)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	set := false // the timer is running
	for {
		quit, fired := false, false
		select {
		case <-j.wake:
		case <-timer.C:
			fired, set = true, false
		case <-j.quit:
			j.mu.Lock()
			j.closed = true
			j.mu.Unlock()
			quit = true
		}
		j.retire()
		if quit || fired || j.syncEvery == 0 {
			j.sync()
		}
		if quit {
			return
		}
		j.mu.Lock()
		due := j.dirty && !set
		j.mu.Unlock()
		if due {
			timer.Reset(j.syncEvery)
			set = true
		}
	}
}

// sync makes what was written to the current segment so far durable,
// outside mu, and ends the group commit waiting for it. Writes that land
// while it runs are the next sync's: they found armed false and poked.
// Only the flusher calls it.
func (j *journal) sync() {
	j.mu.Lock()
	s, dirty, b, sealErr := j.seg, j.dirty, j.batch, j.sealErr
	j.dirty, j.armed, j.sealErr = false, false, nil
	if b != nil {
		j.batch = &jbatch{done: make(chan struct{})}
	}
	var written, out []byte
	var outOff int64
	if dirty { // seal syncs and clears dirty: dirty implies a segment
		s.use.RLock()
		if s.mirror != "" {
			out, outOff = s.takeDirty()
			j.syncing = true
		} else if to := s.off &^ int64(pageSize-1); s.m != nil && to > s.dropped {
			written, s.dropped = s.m[s.dropped:to], to
		}
	}
	j.mu.Unlock()
	var err error
	if dirty {
		// The pages written in full since the last sync leave the page
		// table first (one madvise, one TLB flush for the range), so the
		// writeback below finds them unmapped: otherwise it write-protects
		// each mapped page it cleans, a TLB-shootdown interrupt to the
		// other CPUs per page (~1 µs of a 1 KB chat's CPU at 16 clients,
		// docs/performance.md). They stay in the page cache, dirty until
		// written back — MADV_DONTNEED on a shared file mapping drops the
		// mapping, not the data — and no settlement writes them again
		// before the segment restarts (one that does then just faults it
		// back in).
		if written != nil {
			_ = syscall.Madvise(written, syscall.MADV_DONTNEED)
		}
		// What changed in the mirror, if any, goes into the file, and
		// the file to the disk.
		err = j.flush(s.f, out, outOff)
		s.use.RUnlock()
		if out != nil {
			j.mu.Lock()
			j.syncing = false
			j.mu.Unlock()
		}
	}
	if err != nil {
		// The frames are in the page cache and reach the disk with the
		// kernel's writeback; a segment that cannot sync takes no more.
		if j.logf != nil {
			j.logf("billing: journal fdatasync failed (a new segment is started): %v", err)
		}
		s.broken.Store(true)
		j.mu.Lock()
		if j.seg == s {
			j.seal()
		}
		j.mu.Unlock()
	}
	if b != nil {
		// Either failure leaves some of the batch's frames unsynced: a
		// seal's (the sealed segment's) or this sync's (the current one's).
		b.err = cmp.Or(err, sealErr)
		close(b.done)
	}
}

// retire empties the current segment once the store has every settlement
// in it: a zero length written over its first frame ends it for a replay
// (made durable by the next sync). Without it, a gateway that goes idle
// would keep its last settlements in the journal indefinitely, and after
// retention pruned their records (an hour at the least) a crash's replay
// would charge them again.
func (j *journal) retire() {
	j.mu.Lock()
	defer j.mu.Unlock()
	s := j.seg
	if s == nil || s.off == 0 || s.pending.Load() != 0 {
		return
	}
	if err := s.empty(); err != nil {
		s.broken.Store(true)
		j.seal()
		return
	}
	j.dirty = true
	s.restart()
}

// empty writes a zero length over the segment's first frame: a replay
// reads nothing of it from then on (retire, recycle).
func (s *segment) empty() error {
	var zero [frameHeader]byte
	return s.put(zero[:], nil, 0)
}

// restart makes the segment's next frame its first, in a new epoch (a
// frame of the old one, still on disk after the new ones, ends a replay).
// mu is held.
func (s *segment) restart() { s.off, s.epoch, s.dropped = 0, s.epoch+1, 0 }

// write puts the frame (hdr, payload) at the end of the current segment —
// at its beginning, in a new epoch, when the store has all of it —
// starting a new segment when it does not fit or is too old, and returns
// the segment. mu is held.
func (j *journal) write(hdr, payload []byte) (*segment, error) {
	n := int64(len(hdr) + len(payload))
	now := time.Now()
	if s := j.seg; s != nil && s.off > 0 && s.pending.Load() == 0 && !j.syncing {
		// The store has it all: no need to keep it, nor to copy what the
		// mirror has of it into the file.
		s.dlo, s.dhi = 0, 0
		s.restart()
	}
	if s := j.seg; s == nil || s.off+n > s.size || (s.off > 0 && now.Sub(s.born) > journalMaxAge) {
		if err := j.rotate(max(j.segSize, n)); err != nil {
			return nil, err
		}
	}
	s := j.seg
	if s.off == 0 {
		s.born = now
	}
	binary.LittleEndian.PutUint32(hdr[8:], s.epoch)
	if s.m == nil {
		// One pwrite of the whole frame: a torn frame fails its checksum.
		j.scratch = append(append(j.scratch[:0], hdr...), payload...)
		hdr, payload = j.scratch, nil
	}
	if err := s.put(hdr, payload, s.off); err != nil {
		// The segment may hold part of the frame: nothing more goes
		// into it (a torn frame ends a segment at replay).
		s.broken.Store(true)
		j.seal()
		return nil, err
	}
	j.dirty = true
	// Once per segment, three quarters in: the last quarter (~0.1 s at
	// 15,000 settlements a second) is time enough to make one (~3 ms),
	// and the sealed segment before it has had three quarters of this
	// one to drain into the store and be made the spare instead.
	if mark := s.size / 4 * 3; s.off <= mark && s.off+n > mark {
		j.prepareSpare()
	}
	s.off += n
	return s, nil
}

// rotate seals the current segment and starts the spare one, or, when
// there is none ready (or size is more than a segment's), a new one. mu
// is held.
func (j *journal) rotate(size int64) error {
	j.seal()
	if size <= j.segSize {
		j.spareMu.Lock()
		s := j.spare
		j.spare = nil
		j.spareMu.Unlock()
		if s != nil {
			j.seg = s
			return nil
		}
	}
	j.segN++
	s, err := j.createSegment(j.segN, size)
	if err != nil {
		return err
	}
	j.seg = s
	return nil
}

// createSegment makes segment file n of size bytes: zeros written and
// synced, with its directory entry.
func (j *journal) createSegment(n uint64, size int64) (*segment, error) {
	path := filepath.Join(j.dir, fmt.Sprintf("journal-%020d.log", n))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	// Zeros written (not fallocate's unwritten extents): overwriting
	// allocated, initialised blocks needs no metadata in each fdatasync.
	zeros := make([]byte, 64<<10)
	for off := int64(0); off < size; off += int64(len(zeros)) {
		if _, err := f.WriteAt(zeros[:min(int64(len(zeros)), size-off)], off); err != nil {
			f.Close()
			os.Remove(path)
			return nil, err
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(path)
		return nil, err
	}
	if err := syncDir(j.dir); err != nil {
		f.Close()
		os.Remove(path)
		return nil, err
	}
	s := &segment{path: path, f: f, size: size, j: j}
	if mp := mirrorOf(j.mirrors, path); mp != "" {
		m, err := createMirror(mp, size)
		if err == nil {
			s.m, s.mirror = m, mp
			return s, nil
		}
		if j.logf != nil {
			j.logf("billing: journal segment not mirrored in shared memory, its file is mapped instead: %v", err)
		}
	}
	if m, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED); err == nil {
		s.m = m
	} else if j.logf != nil {
		j.logf("billing: journal segment not mapped, written with pwrite instead: %v", err)
	}
	return s, nil
}

// prepareSpare makes a new segment the spare in the background, unless
// there is one or one is on its way (a sealed segment being retired).
// mu is held (for segN).
func (j *journal) prepareSpare() {
	j.spareMu.Lock()
	defer j.spareMu.Unlock()
	if j.spare != nil || j.preparing || j.closing {
		return
	}
	j.preparing = true
	j.segN++
	n := j.segN
	j.bg.Add(1)
	go func() {
		defer j.bg.Done()
		s, err := j.createSegment(n, j.segSize)
		if err != nil && j.logf != nil {
			// rotate creates one itself when the time comes.
			j.logf("billing: journal: preparing the next segment: %v", err)
		}
		j.offerSpare(s)
	}()
}

// offerSpare makes s (nil: none) the spare when there is none, and
// deletes it otherwise; the preparation in flight, if any, is over.
func (j *journal) offerSpare(s *segment) {
	j.spareMu.Lock()
	j.preparing = false
	take := s != nil && j.spare == nil && !j.closing
	if take {
		j.spare = s
	}
	j.spareMu.Unlock()
	if s != nil && !take {
		s.remove()
	}
}

// recycle makes sealed segment s, every settlement of which is in the
// store, the spare: its first frame is zeroed and synced (a replay then
// reads nothing of it, however long it waits, and the records of its old
// settlements may be pruned by then), its pages leave the process's
// memory (the page cache keeps them), and it serves its next use from its
// start in a new epoch. When there is a spare already, or s cannot be
// reused, it is deleted. It runs in the background: the caller is the
// store's writer or the flusher.
func (j *journal) recycle(s *segment) {
	j.spareMu.Lock()
	keep := j.spare == nil && !j.preparing && !j.closing && !s.broken.Load() && s.m != nil && s.size == j.segSize
	if keep {
		j.preparing = true
		j.bg.Add(1)
	}
	j.spareMu.Unlock()
	if !keep {
		s.remove()
		return
	}
	go func() {
		defer j.bg.Done()
		// An fdatasync of s begun while it was the current segment has
		// returned (none begins now: it is sealed).
		s.use.Lock()
		s.use.Unlock()
		if err := s.empty(); err != nil || j.flushDirty(s) != nil {
			s.remove()
			j.offerSpare(nil)
			return
		}
		if s.mirror == "" {
			_ = syscall.Madvise(s.m, syscall.MADV_DONTNEED)
		}
		j.offerSpare(&segment{path: s.path, f: s.f, m: s.m, mirror: s.mirror, size: s.size, epoch: s.epoch + 1, j: j})
	}()
}

// put writes a then b at off in the segment (one part only when the
// segment is not mapped: a frame is one pwrite). Through the mapping it is a copy
// into the segment's mirror, or into the file's page cache — where a
// write(2) would have put it; either way a
// process that dies once put returned loses nothing — without the system
// call: at a settlement a request, the pwrite was ~3% of a 1 KB chat's
// gateway CPU. The fdatasync that follows (sync, seal) writes the
// mapped pages back like any other dirty page of the file.
//
// A page of the mapping that cannot be read in (an I/O error) would kill
// the process with SIGBUS; the runtime turns it into a panic here
// instead (debug.SetPanicOnFault), and the write fails like a pwrite
// would, which seals the segment.
func (s *segment) put(a, b []byte, off int64) (err error) {
	n := int64(len(a) + len(b))
	if off < 0 || off+n > s.size {
		return fmt.Errorf("billing: journal write of %d bytes at %d past the segment's %d", n, off, s.size)
	}
	if s.m == nil {
		if len(b) > 0 {
			return fmt.Errorf("billing: journal write in two parts to an unmapped segment")
		}
		_, err = s.f.WriteAt(a, off)
		return err
	}
	defer func(was bool) {
		debug.SetPanicOnFault(was)
		if r := recover(); r != nil {
			err = fmt.Errorf("billing: journal segment %s: a page of its mapping failed: %v", s.path, r)
		}
	}(debug.SetPanicOnFault(true))
	copy(s.m[off+int64(len(a)):], b)
	copy(s.m[off:], a)
	if s.mirror != "" {
		s.markDirty(off, off+n)
	}
	return nil
}

// seal ends appends to the current segment, after syncing what it has
// not (a sealed segment is no longer the flusher's). mu is held.
func (j *journal) seal() {
	if s := j.seg; s != nil {
		if j.dirty {
			// A write that failed sealed the segment; a sync that fails
			// here fails the group commit waiting for it.
			if err := j.flushDirty(s); err != nil && j.batch != nil {
				j.sealErr = err
			}
			j.dirty = false
		}
		j.seg = nil
		s.sealed.Store(true)
		s.maybeRemove()
	}
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// committed records that one of the segment's settlements is in the store.
func (s *segment) committed() {
	if s.pending.Add(-1) == 0 {
		s.maybeRemove()
		s.j.poke() // the current segment: retire it
	}
}

// maybeRemove recycles (or deletes) a sealed segment once the store has
// all of its settlements. Whoever sees that first does it, once.
func (s *segment) maybeRemove() {
	if !s.sealed.Load() || s.pending.Load() != 0 || !s.removed.CompareAndSwap(false, true) {
		return
	}
	s.j.recycle(s)
}

// remove unmaps, closes and deletes the segment's file, after any
// fdatasync of it in flight.
func (s *segment) remove() {
	s.use.Lock()
	defer s.use.Unlock()
	if s.m != nil {
		_ = syscall.Munmap(s.m)
		s.m = nil
	}
	s.f.Close()
	if err := os.Remove(s.path); err != nil && s.j.logf != nil {
		s.j.logf("billing: journal: %v", err)
	}
	if s.mirror != "" {
		_ = os.Remove(s.mirror)
	}
}

// close stops appends and deletes the segments whose settlements are all
// in the store; the store's writer must have been closed first. A segment
// with settlements the store never got (it stayed unreachable) is kept for
// the next Open to replay.
func (j *journal) close() {
	close(j.quit)
	<-j.exited
	j.spareMu.Lock()
	j.closing = true
	j.spareMu.Unlock()
	j.mu.Lock()
	j.seal()
	j.mu.Unlock()
	j.bg.Wait()
	j.spareMu.Lock()
	spare := j.spare
	j.spare = nil
	j.spareMu.Unlock()
	if spare != nil {
		spare.remove()
	}
	_ = j.syncer.Close()
	if segs, err := journalSegments(j.dir); err == nil && len(segs) == 0 && j.mirrors != "" {
		// Nothing kept for a replay: no mirror of this journal is left.
		_ = os.Remove(j.mirrors + mirrorDirSuffix)
	}
	j.lock.Close()
}

// journalPayload is what a journal frame holds: the lease owner the
// settlement draws on (cluster mode; empty on one gateway), a newline and
// the generation record as the store keeps it.
func journalPayload(owner string, g *Generation) []byte {
	b := make([]byte, 0, 1024)
	b = append(append(b, owner...), '\n')
	return appendGeneration(b, g)
}

// readJournal returns the settlements of one segment, up to its end: a
// zero length, a torn frame or a frame of an earlier epoch.
func readJournal(mirrors, path string) (owners []string, gens []*Generation, err error) {
	data, err := readSegment(mirrors, path)
	if err != nil {
		return nil, nil, err
	}
	first, epoch := true, uint32(0)
	for len(data) >= frameHeader {
		n := binary.LittleEndian.Uint32(data[:4])
		if n == 0 || int64(n) > int64(len(data)-frameHeader) {
			break
		}
		e := binary.LittleEndian.Uint32(data[8:12])
		if first {
			first, epoch = false, e
		}
		payload := data[frameHeader : frameHeader+int(n)]
		if e != epoch || crc32.Checksum(payload, crcTable) != binary.LittleEndian.Uint32(data[4:8]) {
			break
		}
		data = data[frameHeader+int(n):]
		owner, rec, ok := bytes.Cut(payload, []byte{'\n'})
		if !ok {
			return nil, nil, fmt.Errorf("billing: journal %s: a frame without an owner line", path)
		}
		g := new(Generation)
		if err := json.Unmarshal(rec, g); err != nil {
			return nil, nil, fmt.Errorf("billing: journal %s: %w", path, err)
		}
		owners = append(owners, string(owner))
		gens = append(gens, g)
	}
	return owners, gens, nil
}

// replayJournal commits every settlement of the journal's directory that
// the store does not have yet, then deletes the segments. It runs in Open,
// with the journal's lock held and before the first append, and before the
// balances are loaded, so memory starts from the replayed store.
//
// On a shared store a settlement drew on its instance's leases; when that
// instance was reconciled meanwhile (its heartbeat record is gone, its
// leases returned) the charge comes from the balance alone. A settlement
// older than pruneSafe is not replayed there: another gateway's retention
// may have pruned its record, and replaying it would charge it twice.
func (l *Ledger) replayJournal(j *journal) (int, error) {
	segs, err := journalSegments(j.dir)
	if err != nil || len(segs) == 0 {
		return 0, err
	}
	replayed := 0
	now := l.now()
	for _, s := range segs {
		owners, gens, err := readJournal(j.mirrors, s.path)
		if err != nil {
			return replayed, err
		}
		for start := 0; start < len(gens); start += 1000 {
			end := min(start+1000, len(gens))
			err := l.db.Update(func(tx store.Tx) error {
				if err := createBuckets(tx); err != nil {
					return err
				}
				for i := start; i < end; i++ {
					g, owner := gens[i], owners[i]
					if l.shared {
						if now.Sub(g.SettledAt) > pruneSafe {
							if l.opts.Logf != nil {
								l.opts.Logf("billing: journal: settlement %s (%s charged) is older than %s and not replayed on a shared store", g.ID, g.Charged, pruneSafe)
							}
							continue
						}
						if owner != "" && tx.Bucket(bucketInstances).Get([]byte(owner)) == nil {
							owner = ""
						}
					}
					if tx.Bucket(bucketGenerations).Get([]byte(g.ID)) == nil {
						replayed++
					}
					if err := l.commit(tx, g, nil, owner); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				return replayed, fmt.Errorf("billing: journal replay: %w", err)
			}
		}
	}
	for _, s := range segs {
		if err := os.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return replayed, err
		}
	}
	if err := syncDir(j.dir); err != nil {
		return replayed, err
	}
	// Only once the segments' deletion is durable: a mirror is what a
	// replay reads of its segment.
	removeMirrors(j.mirrors)
	return replayed, nil
}

// pruneSafe bounds the age of a settlement replayed on a shared store: well
// inside config.MinRetention (an hour), the youngest record retention may
// delete.
const pruneSafe = 45 * time.Minute
