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
//   - a period (settle: journal, the default, 5 ms): the write(2) only;
//     the flusher fdatasyncs the segment within the period after its
//     first unsynced write. The record is in the kernel's page cache
//     when the client hears its cost, so a crash of the process (kill -9,
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
// commit: the flusher writes what accumulated, syncs, and wakes all of
// their waiters at once). The store still gathers a commit window of
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

	// flushMu is held by whoever writes: a settling goroutine that found
	// nobody writing, or the flusher goroutine (loop).
	flushMu sync.Mutex
	mu      sync.Mutex
	buf     []byte  // frames waiting for the next write
	next    *jbatch // the batch buf's frames belong to
	closed  bool

	wake   chan struct{}
	quit   chan struct{}
	exited chan struct{}

	// syncEvery is Options.JournalSync: 0 syncs each write before its
	// waiters wake; otherwise the longest a write stays unsynced.
	syncEvery time.Duration

	// With flushMu held.
	seg      *segment
	segN     uint64
	spareBuf []byte
	dirty    bool // seg has writes not yet fdatasynced (syncEvery > 0)
	armed    bool // the flusher's sync timer is set (dirty writes will be synced)
	// segSize is a segment's preallocated size (journalSegment; tests
	// make it small to fill segments quickly).
	segSize int64

	// spareMu guards the segment ready to be the next one, and whether
	// one is being made ready (retired or created) in the background.
	spareMu   sync.Mutex
	spare     *segment
	preparing bool
	closing   bool           // close began: segments are deleted, not kept
	bg        sync.WaitGroup // background preparations, waited for by close
}

// jbatch is one group commit of the journal: done is closed when its
// frames are durable (err nil) or failed.
type jbatch struct {
	done chan struct{}
	n    int64
	seg  *segment
	err  error
}

// segment is one journal file. pending counts its settlements not yet
// committed to the store; a sealed segment (no more appends) with none
// pending is deleted.
type segment struct {
	path string
	f    *os.File
	// m maps the whole preallocated file (MAP_SHARED): frames are copied
	// into it (put). nil when the mapping failed: frames are written with
	// pwrite(2) instead.
	m       []byte
	off     int64
	size    int64
	epoch   uint32
	born    time.Time // when the epoch's first frame was written
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
	j := &journal{dir: dir, lock: lock, logf: logf, syncEvery: syncEvery, segSize: journalSegment, next: &jbatch{done: make(chan struct{})},
		wake: make(chan struct{}, 1), quit: make(chan struct{}), exited: make(chan struct{})}
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
// committed, once the store has it). It waits for the group commit the
// payload joins.
func (j *journal) append(payload []byte) (*segment, error) {
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return nil, ErrClosed
	}
	// The epoch is written by the flusher, which knows the segment.
	var hdr [frameHeader]byte
	binary.LittleEndian.PutUint32(hdr[:4], uint32(len(payload)))
	binary.LittleEndian.PutUint32(hdr[4:], crc32.Checksum(payload, crcTable))
	j.buf = append(append(j.buf, hdr[:]...), payload...)
	b := j.next
	b.n++
	j.mu.Unlock()
	// Nobody flushing: this goroutine writes the batch itself, which saves
	// a lone client two goroutine hand-offs per request, and wakes the
	// flusher only if the write is the first unsynced one (its fdatasync
	// must be scheduled; waking it after every settlement cost a hand-off
	// and an empty pass). Otherwise the flusher takes the batch, after the
	// flush in progress.
	if j.flushMu.TryLock() {
		j.flush()
		idle := !j.dirty || j.armed
		j.flushMu.Unlock()
		if !idle {
			j.poke()
		}
	} else {
		j.poke()
	}
	<-b.done
	return b.seg, b.err
}

// poke wakes the flusher goroutine.
func (j *journal) poke() {
	select {
	case j.wake <- struct{}{}:
	default:
	}
}

func (j *journal) loop() {
	defer close(j.exited)
	// sync fires syncEvery after the first write the disk does not have
	// yet: a burst of settlements shares one fdatasync, and an idle journal
	// never wakes.
	sync := time.NewTimer(time.Hour)
	sync.Stop()
	defer sync.Stop()
	for {
		quit, fired := false, false
		select {
		case <-j.wake:
		case <-sync.C:
			fired = true
		case <-j.quit:
			j.mu.Lock()
			j.closed = true
			j.mu.Unlock()
			quit = true
		}
		j.flushMu.Lock()
		if fired {
			j.armed = false
		}
		for j.flush() {
		}
		j.retire()
		if quit || fired {
			j.sync()
		}
		if j.dirty && !j.armed {
			sync.Reset(j.syncEvery)
			j.armed = true
		}
		j.flushMu.Unlock()
		if quit {
			return
		}
	}
}

// sync makes the current segment's writes durable. flushMu is held.
func (j *journal) sync() {
	if !j.dirty { // seal syncs and clears it: dirty implies a segment
		return
	}
	j.dirty = false
	if err := syscall.Fdatasync(int(j.seg.f.Fd())); err != nil {
		// The records are in the page cache and reach the disk with the
		// kernel's writeback; a segment that cannot sync takes no more.
		if j.logf != nil {
			j.logf("billing: journal fdatasync failed (a new segment is started): %v", err)
		}
		j.seg.broken.Store(true)
		j.seal()
	}
}

// flush writes and syncs what accumulated, then wakes its waiters; it
// reports whether there was anything. flushMu is held.
func (j *journal) flush() bool {
	j.mu.Lock()
	buf, b := j.buf, j.next
	if len(buf) == 0 {
		j.mu.Unlock()
		return false
	}
	j.buf, j.spareBuf = j.spareBuf[:0], nil
	j.next = &jbatch{done: make(chan struct{})}
	j.mu.Unlock()

	b.err = j.write(buf)
	if b.err == nil {
		b.seg = j.seg
		j.seg.pending.Add(b.n)
	} else if j.logf != nil {
		j.logf("billing: journal write failed (settlements wait for the store instead): %v", b.err)
	}
	close(b.done)
	j.mu.Lock()
	j.spareBuf = buf[:0]
	j.mu.Unlock()
	return true
}

// retire empties the current segment once the store has every settlement
// in it: a zero length written over its first frame ends it for a replay.
// Without it, a gateway that goes idle would keep its last settlements in
// the journal indefinitely, and after retention pruned their records (an
// hour at the least) a crash's replay would charge them again. flushMu is
// held.
func (j *journal) retire() {
	s := j.seg
	if s == nil || s.off == 0 || s.pending.Load() != 0 {
		return
	}
	if err := s.empty(); err != nil {
		s.broken.Store(true)
		j.seal()
		return
	}
	if err := j.synced(s); err != nil {
		s.broken.Store(true)
		j.seal()
		return
	}
	s.restart()
}

// synced makes a write to s durable now (syncEvery 0) or marks it for the
// flusher's next sync. flushMu is held.
func (j *journal) synced(s *segment) error {
	if j.syncEvery > 0 {
		j.dirty = true
		return nil
	}
	return syscall.Fdatasync(int(s.f.Fd()))
}

// empty writes a zero length over the segment's first frame: a replay
// reads nothing of it from then on (retire, recycle).
func (s *segment) empty() error {
	var zero [frameHeader]byte
	return s.put(zero[:], 0)
}

// restart makes the segment's next frame its first, in a new epoch (a
// frame of the old one, still on disk after the new ones, ends a replay).
// flushMu is held.
func (s *segment) restart() { s.off, s.epoch = 0, s.epoch+1 }

// write puts buf at the end of the current segment — at its beginning,
// in a new epoch, when the store has all of it — starting a new segment
// when it does not fit or is too old, and syncs it (or has the flusher
// sync it within syncEvery).
func (j *journal) write(buf []byte) error {
	now := time.Now()
	if s := j.seg; s != nil && s.off > 0 && s.pending.Load() == 0 {
		s.restart() // the store has it all: no need to keep it
	}
	if s := j.seg; s == nil || s.off+int64(len(buf)) > s.size || (s.off > 0 && now.Sub(s.born) > journalMaxAge) {
		if err := j.rotate(max(j.segSize, int64(len(buf))+frameHeader)); err != nil {
			return err
		}
	}
	s := j.seg
	if s.off == 0 {
		s.born = now
	}
	for off := 0; off < len(buf); off += frameHeader + int(binary.LittleEndian.Uint32(buf[off:])) {
		binary.LittleEndian.PutUint32(buf[off+8:], s.epoch)
	}
	if err := s.put(buf, s.off); err != nil {
		// The segment may hold part of buf: nothing more goes into it (a
		// torn frame ends a segment at replay).
		s.broken.Store(true)
		j.seal()
		return err
	}
	if err := j.synced(s); err != nil {
		s.broken.Store(true)
		j.seal()
		return err
	}
	// Once per segment, three quarters in: the last quarter (~0.1 s at
	// 15,000 settlements a second) is time enough to make one (~3 ms),
	// and the sealed segment before it has had three quarters of this
	// one to drain into the store and be made the spare instead.
	if mark := s.size / 4 * 3; s.off <= mark && s.off+int64(len(buf)) > mark {
		j.prepareSpare()
	}
	s.off += int64(len(buf))
	return nil
}

// rotate seals the current segment and starts the spare one, or, when
// there is none ready (or size is more than a segment's), a new one.
// flushMu is held.
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
	if m, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED); err == nil {
		s.m = m
	} else if j.logf != nil {
		j.logf("billing: journal segment not mapped, written with pwrite instead: %v", err)
	}
	return s, nil
}

// prepareSpare makes a new segment the spare in the background, unless
// there is one or one is on its way (a sealed segment being retired).
// flushMu is held (for segN).
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
		if err := s.empty(); err != nil || syscall.Fdatasync(int(s.f.Fd())) != nil {
			s.remove()
			j.offerSpare(nil)
			return
		}
		_ = syscall.Madvise(s.m, syscall.MADV_DONTNEED)
		j.offerSpare(&segment{path: s.path, f: s.f, m: s.m, size: s.size, epoch: s.epoch + 1, j: j})
	}()
}

// put writes b at off in the segment. Through the mapping it is a copy
// into the file's page cache — where a write(2) would have put it, so a
// process that dies once put returned loses nothing — without the system
// call: at a settlement a request, the pwrite was ~3% of a 1 KB chat's
// gateway CPU. The fdatasync that follows (sync, synced) writes the
// mapped pages back like any other dirty page of the file.
//
// A page of the mapping that cannot be read in (an I/O error) would kill
// the process with SIGBUS; the runtime turns it into a panic here
// instead (debug.SetPanicOnFault), and the write fails like a pwrite
// would, which seals the segment.
func (s *segment) put(b []byte, off int64) (err error) {
	if off < 0 || off+int64(len(b)) > s.size {
		return fmt.Errorf("billing: journal write of %d bytes at %d past the segment's %d", len(b), off, s.size)
	}
	if s.m == nil {
		_, err = s.f.WriteAt(b, off)
		return err
	}
	defer func(was bool) {
		debug.SetPanicOnFault(was)
		if r := recover(); r != nil {
			err = fmt.Errorf("billing: journal segment %s: a page of its mapping failed: %v", s.path, r)
		}
	}(debug.SetPanicOnFault(true))
	copy(s.m[off:], b)
	return nil
}

// seal ends appends to the current segment, after syncing what it has
// not (a sealed segment is no longer the flusher's). flushMu is held.
func (j *journal) seal() {
	if s := j.seg; s != nil {
		if j.dirty {
			_ = syscall.Fdatasync(int(s.f.Fd())) // best effort: a write that failed sealed it
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

// remove unmaps, closes and deletes the segment's file.
func (s *segment) remove() {
	if s.m != nil {
		_ = syscall.Munmap(s.m)
		s.m = nil
	}
	s.f.Close()
	if err := os.Remove(s.path); err != nil && s.j.logf != nil {
		s.j.logf("billing: journal: %v", err)
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
	j.seal()
	j.bg.Wait()
	j.spareMu.Lock()
	spare := j.spare
	j.spare = nil
	j.spareMu.Unlock()
	if spare != nil {
		spare.remove()
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
func readJournal(path string) (owners []string, gens []*Generation, err error) {
	data, err := os.ReadFile(path)
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
		owners, gens, err := readJournal(s.path)
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
	return replayed, syncDir(j.dir)
}

// pruneSafe bounds the age of a settlement replayed on a shared store: well
// inside config.MinRetention (an hour), the youngest record retention may
// delete.
const pruneSafe = 45 * time.Minute
