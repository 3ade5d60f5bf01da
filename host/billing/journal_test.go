package billing

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// copyJournal copies dir's segments to dst as they are now.
func copyJournal(t *testing.T, dir, dst string) int {
	t.Helper()
	segs, err := journalSegments(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dst, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, s := range segs {
		b, err := os.ReadFile(s.path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, filepath.Base(s.path)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return len(segs)
}

// A journal whose settlements the store already committed (a crash after
// the commit, before the segment was deleted) replays to nothing: nothing
// is charged twice, the books stay as they were.
func TestJournalReplayIsIdempotent(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "journal")
	opts := Options{AsyncSettle: true, Journal: dir, CommitWindow: time.Hour}
	e, k := newEnv(t, 10*NanosPerUSD, nil, "", opts)
	acks := map[string]Nanos{}
	for i := range 20 {
		r, aerr := e.l.Reserve(k, testReq(fmt.Sprintf("gen-j-%d", i)))
		if aerr != nil {
			t.Fatal(aerr)
		}
		g, err := r.Settle(Outcome{Usage: Usage{PromptTokens: 100, CompletionTokens: 50, Requests: 1}})
		if err != nil {
			t.Fatal(err)
		}
		acks[g.ID] = g.Charged
	}
	// The commit window is an hour: every settlement is in the journal
	// only. Keep a copy of it as a crash would leave it.
	saved := filepath.Join(t.TempDir(), "saved")
	if n := copyJournal(t, dir, saved); n != 1 {
		t.Fatalf("%d journal segments for 20 settlements, want 1", n)
	}
	path, acct := e.path, e.acct
	e.close() // commits everything and deletes the journal
	if segs, _ := journalSegments(dir); len(segs) != 0 {
		t.Fatalf("segments left after a clean close: %v", segs)
	}
	plain := openEnv(t, path, Options{})
	before := plain.l.Balance(acct)
	plain.close()
	for range 2 {
		copyJournal(t, saved, dir)
		e2 := openEnv(t, path, opts)
		if after := e2.l.Balance(acct); after != before {
			t.Fatalf("replaying committed settlements changed the balance: %+v → %+v", before, after)
		}
		for id, c := range acks {
			if g, err := e2.l.Generation(id); err != nil || g.Charged != c {
				t.Fatalf("%s: %+v %v", id, g, err)
			}
		}
		mustAudit(t, e2.l)
		e2.close()
	}
}

// The journal's frames: a torn last frame (its checksum fails) ends the
// segment, and so do zeros (the preallocated, unwritten rest).
func TestReadJournalStopsAtTornFrame(t *testing.T) {
	dir := t.TempDir()
	j, err := openJournal(dir, 0, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		g := &Generation{ID: fmt.Sprintf("gen-%d", i), AccountID: "a", KeyHash: "k", Charged: Nanos(i + 1), SettledAt: time.Now().UTC()}
		if _, err := j.append(journalPayload("owner", g)); err != nil {
			t.Fatal(err)
		}
	}
	j.close()
	segs, _ := journalSegments(dir)
	if len(segs) != 1 {
		t.Fatalf("segments %v (three settlements nobody committed must be kept)", segs)
	}
	// Closing synced every frame into the file: read it, not the mirror.
	owners, gens, err := readJournal("", segs[0].path)
	if err != nil || len(gens) != 3 || owners[2] != "owner" || gens[2].ID != "gen-2" || gens[2].Charged != 3 {
		t.Fatalf("%v %+v %v", owners, gens, err)
	}
	if st, _ := os.Stat(segs[0].path); st.Size() != journalSegment {
		t.Fatalf("segment of %d bytes, want preallocated %d", st.Size(), journalSegment)
	}
	// Tear the last frame: flip a byte of its payload.
	data, _ := os.ReadFile(segs[0].path)
	end := 0
	for i := 0; i < 3; i++ {
		end += frameHeader + int(binary.LittleEndian.Uint32(data[end:]))
	}
	data[end-2] ^= 0xff
	if err := os.WriteFile(segs[0].path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, gens, err := readJournal("", segs[0].path); err != nil || len(gens) != 2 {
		t.Fatalf("after tearing the third frame: %d frames, %v", len(gens), err)
	}
}

// Two processes never append to one journal.
func TestJournalIsLocked(t *testing.T) {
	dir := t.TempDir()
	j, err := openJournal(dir, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j.close()
	if _, err := openJournal(dir, 0, nil); err == nil {
		t.Fatal("a second journal opened the same directory")
	}
}

func FuzzReadJournal(f *testing.F) {
	frame := func(p []byte) []byte {
		var h [frameHeader]byte
		binary.LittleEndian.PutUint32(h[:4], uint32(len(p)))
		binary.LittleEndian.PutUint32(h[4:], crc32.Checksum(p, crcTable))
		return append(h[:], p...)
	}
	good := journalPayload("o", &Generation{ID: "gen-1", AccountID: "a", Charged: 5})
	f.Add(frame(good))
	f.Add(append(frame(good), frame([]byte("x\n{"))...))
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 'x'})
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "journal-1.log")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		owners, gens, err := readJournal("", path)
		if err != nil {
			return
		}
		if len(owners) != len(gens) {
			t.Fatalf("%d owners, %d records", len(owners), len(gens))
		}
		// Every record returned came from a frame whose checksum holds.
		for _, o := range owners {
			if bytes.IndexByte([]byte(o), '\n') >= 0 {
				t.Fatalf("owner %q holds a newline", o)
			}
		}
	})
}

// Once the store has every settlement of the current segment, the segment
// is emptied (a zero length over its first frame) without waiting for the
// next write: a gateway that goes idle must not keep settlements whose
// records retention may prune, or a crash's replay would charge them
// again.
func TestJournalRetiredWhenCommitted(t *testing.T) {
	for _, every := range []time.Duration{0, 10 * time.Millisecond} {
		t.Run(fmt.Sprint("sync=", every), func(t *testing.T) { testJournalRetired(t, every) })
	}
}

func testJournalRetired(t *testing.T, syncEvery time.Duration) {
	dir := t.TempDir()
	j, err := openJournal(dir, syncEvery, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer j.close()
	var segs []*segment
	for i := range 3 {
		g := &Generation{ID: fmt.Sprintf("gen-%d", i), AccountID: "a", Charged: 1, SettledAt: time.Now().UTC()}
		seg, err := j.append(journalPayload("", g))
		if err != nil {
			t.Fatal(err)
		}
		segs = append(segs, seg)
	}
	files, _ := journalSegments(dir)
	if len(files) != 1 {
		t.Fatalf("segments %v", files)
	}
	if _, gens, _ := readJournal(j.mirrors, files[0].path); len(gens) != 3 {
		t.Fatalf("%d settlements in the journal before the store has them, want 3", len(gens))
	}
	for _, s := range segs[:2] {
		s.committed()
	}
	if _, gens, _ := readJournal(j.mirrors, files[0].path); len(gens) != 3 {
		t.Fatalf("%d settlements in the journal with one not in the store, want 3", len(gens))
	}
	segs[2].committed()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		_, gens, err := readJournal(j.mirrors, files[0].path)
		if err == nil && len(gens) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d settlements still in the journal after the store had them all (%v)", len(gens), err)
		}
	}
	// The segment serves the next settlement from its start, in a new
	// epoch.
	if _, err := j.append(journalPayload("", &Generation{ID: "gen-next", AccountID: "a", Charged: 1})); err != nil {
		t.Fatal(err)
	}
	if _, gens, _ := readJournal(j.mirrors, files[0].path); len(gens) != 1 || gens[0].ID != "gen-next" {
		t.Fatalf("after the next settlement the journal holds %+v", gens)
	}
}

// With a sync period (settle: journal, the default), append returns once
// the frame is written — a crash of the process cannot lose it, the
// kernel has it — and the flusher fdatasyncs it within the period; a
// clean close syncs what is left. With a period longer than the test, the
// segment stays unsynced until the close.
func TestJournalSyncPeriod(t *testing.T) {
	dirty := func(j *journal) bool {
		j.mu.Lock()
		defer j.mu.Unlock()
		return j.dirty
	}
	for _, c := range []struct {
		every     time.Duration
		syncedNow bool // synced within the test's wait
	}{
		{10 * time.Millisecond, true},
		{time.Hour, false},
	} {
		t.Run(fmt.Sprint(c.every), func(t *testing.T) {
			dir := t.TempDir()
			j, err := openJournal(dir, c.every, t.Logf)
			if err != nil {
				t.Fatal(err)
			}
			g := &Generation{ID: "gen-p", AccountID: "a", Charged: 7, SettledAt: time.Now().UTC()}
			if _, err := j.append(journalPayload("", g)); err != nil {
				t.Fatal(err)
			}
			// Written: what a replay after kill -9 reads.
			files, _ := journalSegments(dir)
			if len(files) != 1 {
				t.Fatalf("segments %v", files)
			}
			if _, gens, _ := readJournal(j.mirrors, files[0].path); len(gens) != 1 || gens[0].Charged != 7 {
				t.Fatalf("journal after append: %+v", gens)
			}
			deadline := time.Now().Add(2 * time.Second)
			for dirty(j) && time.Now().Before(deadline) {
				time.Sleep(2 * time.Millisecond)
			}
			if got := !dirty(j); got != c.syncedNow {
				t.Fatalf("synced within 2 s: %v, want %v", got, c.syncedNow)
			}
			if c.syncedNow {
				// A write after the period's sync schedules the next one:
				// the flusher is woken only when no sync is pending.
				if _, err := j.append(journalPayload("", &Generation{ID: "gen-q", AccountID: "a", Charged: 1})); err != nil {
					t.Fatal(err)
				}
				deadline = time.Now().Add(2 * time.Second)
				for dirty(j) && time.Now().Before(deadline) {
					time.Sleep(2 * time.Millisecond)
				}
				if dirty(j) {
					t.Fatal("the second write was not synced within 2 s")
				}
			}
			j.close()
			if dirty(j) {
				t.Fatal("close left the segment unsynced")
			}
		})
	}
}

// Frames go into the segment through a mapping: of its mirror in shared
// memory or, without one, of its file. A mapped page that cannot be read
// in — here the mapped file was truncated under the journal, so the copy
// touches a page past its end (SIGBUS) — fails that write like a failed
// pwrite would, instead of killing the gateway: the segment is sealed and
// the next settlement gets a new one.
func TestJournalMappedWriteFault(t *testing.T) {
	for _, mirrored := range []bool{true, false} {
		t.Run(fmt.Sprintf("mirrored=%v", mirrored), func(t *testing.T) {
			dir := t.TempDir()
			j, err := openJournal(dir, 0, t.Logf)
			if err != nil {
				t.Fatal(err)
			}
			defer j.close()
			if mirrored && j.mirrors == "" {
				t.Skip("no tmpfs at /dev/shm: segments are not mirrored here")
			}
			if !mirrored {
				j.mirrors = ""
			}
			gen := func(id string) []byte {
				return journalPayload("", &Generation{ID: id, AccountID: "a", Charged: 1, SettledAt: time.Now().UTC()})
			}
			first, err := j.append(gen("gen-1"))
			if err != nil {
				t.Fatal(err)
			}
			if first.m == nil || (first.mirror != "") != mirrored {
				t.Fatalf("the segment is mapped: %v, mirrored: %q", first.m != nil, first.mirror)
			}
			if _, gens, _ := readJournal(j.mirrors, first.path); len(gens) != 1 || gens[0].ID != "gen-1" {
				t.Fatalf("the mapped frame is not what a replay reads: %+v", gens)
			}
			mapped := first.path
			if mirrored {
				mapped = first.mirror
			}
			if err := os.Truncate(mapped, 0); err != nil {
				t.Fatal(err)
			}
			if _, err := j.append(gen("gen-2")); err == nil {
				t.Fatal("a write into a truncated segment succeeded")
			}
			if !first.sealed.Load() {
				t.Fatal("the faulted segment was not sealed")
			}
			next, err := j.append(gen("gen-3"))
			if err != nil {
				t.Fatalf("the settlement after the fault: %v", err)
			}
			if next == first {
				t.Fatal("the settlement after the fault went into the faulted segment")
			}
			if _, gens, _ := readJournal(j.mirrors, next.path); len(gens) != 1 || gens[0].ID != "gen-3" {
				t.Fatalf("the new segment holds %+v", gens)
			}
			first.committed() // its settlement is in the store: the segment goes
		})
	}
}

// Under steady load the journal reuses its segments: one whose
// settlements are all in the store becomes the spare — emptied first, so
// a replay never reads its old settlements, however long it waits — and
// the next segment is ready before the current one fills, so no
// settlement waits for a file to be created. Here the store commits each
// settlement 7 settlements after it was journaled, and segments hold
// about 23 (the gateway's commit window of 100 ms is about a quarter of a
// 4 MiB segment at 15,000 settlements a second): without reuse, 500
// settlements would have made 22 segments.
func TestJournalSegmentsReused(t *testing.T) {
	dir := t.TempDir()
	j, err := openJournal(dir, 0, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer j.close()
	j.segSize = 16 << 10
	const total, lag = 500, 7
	type appended struct {
		id  string
		seg *segment
	}
	var log []appended
	maxFiles := 0
	for i := range total {
		id := fmt.Sprintf("gen-%04d", i)
		seg, err := j.append(journalPayload("", &Generation{ID: id, AccountID: "a", Charged: 1, SettledAt: time.Now().UTC()}))
		if err != nil {
			t.Fatal(err)
		}
		log = append(log, appended{id, seg})
		if i >= lag {
			log[i-lag].seg.committed()
		}
		files, _ := journalSegments(dir)
		maxFiles = max(maxFiles, len(files))
	}
	j.mu.Lock()
	made := j.segN
	j.mu.Unlock()
	if made > 4 {
		t.Errorf("%d segments made for %d settlements of ~%d per segment, want at most 4 (reused)", made, total, j.segSize/700)
	}
	if maxFiles > 4 {
		t.Errorf("%d segment files at once, want at most 4", maxFiles)
	}
	// A crash now: every settlement the store lacks is replayed, and
	// none of the reused segments' earlier epochs.
	found := map[string]bool{}
	files, _ := journalSegments(dir)
	for _, f := range files {
		_, gens, err := readJournal(j.mirrors, f.path)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range gens {
			if found[g.ID] {
				t.Fatalf("%s is in the journal twice", g.ID)
			}
			found[g.ID] = true
		}
	}
	for _, a := range log[total-lag:] {
		if !found[a.id] {
			t.Fatalf("%s, not in the store, is not in the journal", a.id)
		}
	}
	if len(found) > lag+3*int(j.segSize/700) {
		t.Fatalf("%d settlements readable in the journal, want at most the uncommitted %d and their segments'", len(found), lag)
	}
	// The spare, once made ready, holds nothing a replay would read.
	deadline := time.Now().Add(10 * time.Second)
	for {
		j.spareMu.Lock()
		spare := j.spare
		j.spareMu.Unlock()
		if spare != nil {
			if _, gens, _ := readJournal(j.mirrors, spare.path); len(gens) != 0 {
				t.Fatalf("the spare segment holds %d settlements", len(gens))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no spare segment after 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	for _, a := range log[total-lag:] {
		a.seg.committed()
	}
}

// A settlement never waits for the flusher's fdatasync (settle: journal):
// the sync runs outside the lock settlements write under, so while the
// disk works — 0.5–3 ms each period on the development machine, far more
// on a busy one — settlements keep being written and acknowledged. Here
// the sync is held until the test ends; a settlement before it and
// twenty during it return, and the frames of all are in the file a
// replay would read.
func TestJournalWritesDuringSync(t *testing.T) {
	dir := t.TempDir()
	j, err := openJournal(dir, time.Millisecond, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}, 1), make(chan struct{})
	var once sync.Once
	orig := j.flush
	j.flush = func(f *os.File, b []byte, off int64) error {
		once.Do(func() {
			entered <- struct{}{}
			<-release
		})
		return orig(f, b, off)
	}
	defer j.close()
	defer close(release)
	gen := func(i int) []byte {
		return journalPayload("", &Generation{ID: fmt.Sprintf("gen-%d", i), AccountID: "a", Charged: 1, SettledAt: time.Now().UTC()})
	}
	if _, err := j.append(gen(0)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-entered: // the flusher is inside its fdatasync, and stays
	case <-time.After(10 * time.Second):
		t.Fatal("the flusher did not sync the first settlement")
	}
	done := make(chan error, 1)
	go func() {
		for i := 1; i <= 20; i++ {
			if _, err := j.append(gen(i)); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("settlements waited for the flusher's fdatasync")
	}
	files, _ := journalSegments(dir)
	if len(files) != 1 {
		t.Fatalf("segments %v", files)
	}
	if _, gens, _ := readJournal(j.mirrors, files[0].path); len(gens) != 21 {
		t.Fatalf("%d settlements in the journal, want 21", len(gens))
	}
}

// The pages a sync covers in full leave the process's page table before
// the fdatasync (so its writeback interrupts no other CPU for them); what
// they hold stays in the file, and a segment that restarts writes them
// again. Nothing is lost either way: every frame is read back.
func TestJournalPagesDroppedAfterSync(t *testing.T) {
	dir := t.TempDir()
	j, err := openJournal(dir, time.Millisecond, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer j.close()
	j.mirrors = "" // a mirror's pages are never written back: nothing to drop
	var segs []*segment
	appendN := func(from, n int) {
		for i := from; i < from+n; i++ {
			g := &Generation{ID: fmt.Sprintf("gen-%03d", i), AccountID: "a", Charged: 1, SettledAt: time.Now().UTC(), Model: strings.Repeat("m", 400)}
			s, err := j.append(journalPayload("", g))
			if err != nil {
				t.Fatal(err)
			}
			segs = append(segs, s)
		}
	}
	synced := func() int64 {
		deadline := time.Now().Add(10 * time.Second)
		for {
			j.mu.Lock()
			dirty, dropped := j.dirty, j.seg.dropped
			j.mu.Unlock()
			if !dirty {
				return dropped
			}
			if time.Now().After(deadline) {
				t.Fatal("not synced within 10 s")
			}
			time.Sleep(time.Millisecond)
		}
	}
	read := func() []*Generation {
		files, _ := journalSegments(dir)
		if len(files) != 1 {
			t.Fatalf("segments %v", files)
		}
		_, gens, err := readJournal(j.mirrors, files[0].path)
		if err != nil {
			t.Fatal(err)
		}
		return gens
	}
	appendN(0, 30) // ~1 KB frames: several pages
	if dropped := synced(); dropped < int64(pageSize) {
		t.Fatalf("after a sync of %d settlements %d bytes of pages dropped, want at least a page", 30, dropped)
	}
	appendN(30, 10)
	synced()
	if gens := read(); len(gens) != 40 || gens[0].ID != "gen-000" || gens[39].ID != "gen-039" {
		t.Fatalf("%d settlements read back, want 40", len(gens))
	}
	// The store has them all: the segment restarts at its first page.
	for _, s := range segs {
		s.committed()
	}
	for deadline := time.Now().Add(10 * time.Second); len(read()) != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("not retired within 10 s")
		}
	}
	appendN(40, 3)
	synced()
	if gens := read(); len(gens) != 3 || gens[0].ID != "gen-040" {
		t.Fatalf("after the restart %d settlements read back, want 3", len(gens))
	}
}

// A seal whose sync failed fails the group commit waiting on it (journal-
// fsync: those settlements then wait for the store), and only that: the
// segment the sync after it syncs successfully stays the current one.
func TestJournalSealFailureFailsOnlyItsBatch(t *testing.T) {
	j, err := openJournal(t.TempDir(), 0, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer j.close()
	s, err := j.append(journalPayload("", &Generation{ID: "gen-1", AccountID: "a", Charged: 1, SettledAt: time.Now().UTC()}))
	if err != nil {
		t.Fatal(err)
	}
	// As after a rotation whose seal could not sync the sealed segment,
	// with a write to the new one since.
	sealErr := errors.New("the sealed segment's fdatasync failed")
	j.mu.Lock()
	j.sealErr, j.dirty = sealErr, true
	b := j.batch
	j.mu.Unlock()
	j.sync()
	<-b.done
	if b.err != sealErr {
		t.Fatalf("the batch's error %v, want the seal's", b.err)
	}
	j.mu.Lock()
	cur := j.seg
	j.mu.Unlock()
	if cur != s || s.broken.Load() || s.sealed.Load() {
		t.Fatalf("the segment that synced was sealed (current %p, was %p, broken %v)", cur, s, s.broken.Load())
	}
	s.committed()
}

// A journal closed with settlements the store lacks keeps its segments —
// and their mirrors in shared memory — for the next Open's replay. When
// its directory is deleted instead (a killed gateway's data_dir wiped),
// the next journal opened on the machine deletes those orphaned mirrors,
// and leaves alone the mirrors of a journal whose directory is there.
func TestJournalOrphanedMirrorsSwept(t *testing.T) {
	if mirrorRoot() == "" {
		t.Skip("no tmpfs at /dev/shm: segments are not mirrored here")
	}
	keep := func(dir string) string {
		j, err := openJournal(dir, time.Hour, t.Logf)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := j.append(journalPayload("", &Generation{ID: "gen-1", AccountID: "a", Charged: 1, SettledAt: time.Now().UTC()})); err != nil {
			t.Fatal(err)
		}
		prefix := j.mirrors
		j.close() // the settlement is not in the store: its segment is kept
		if left, _ := filepath.Glob(prefix + "*"); len(left) != 2 {
			t.Fatalf("after a close with a settlement kept: %v, want its mirror and the directory's name", left)
		}
		return prefix
	}
	gone, live := filepath.Join(t.TempDir(), "gone"), filepath.Join(t.TempDir(), "live")
	gonePrefix, livePrefix := keep(gone), keep(live)
	t.Cleanup(func() {
		removeMirrors(livePrefix)
		os.Remove(livePrefix + mirrorDirSuffix)
	})
	if err := os.RemoveAll(gone); err != nil {
		t.Fatal(err)
	}
	j, err := openJournal(t.TempDir(), time.Hour, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	j.close()
	if left, _ := filepath.Glob(gonePrefix + "*"); len(left) != 0 {
		t.Fatalf("mirrors of a deleted journal left: %v", left)
	}
	if left, _ := filepath.Glob(livePrefix + "*"); len(left) != 2 {
		t.Fatalf("mirrors of a journal still there: %v, want its mirror and the directory's name kept", left)
	}
	// Its replay reads the kept settlement from the mirror.
	segs, _ := journalSegments(live)
	if len(segs) != 1 {
		t.Fatalf("segments %v", segs)
	}
	if _, gens, err := readJournal(livePrefix, segs[0].path); err != nil || len(gens) != 1 {
		t.Fatalf("replay of the kept segment: %d settlements, %v", len(gens), err)
	}
}
