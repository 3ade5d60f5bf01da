package datasync

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

func TestDatasync(t *testing.T) {
	s := New()
	defer s.Close()
	t.Logf("io_uring: %v", s.Async())
	if runtime.GOOS == "linux" && !s.Async() {
		// Not a failure: a sandbox may refuse io_uring. The plain path is
		// what runs then, and is tested below all the same.
		t.Log("io_uring is not available here: syncs are plain fdatasyncs")
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "seg"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i := range 20 {
		if _, err := f.WriteAt([]byte("record\n"), int64(i*7)); err != nil {
			t.Fatal(err)
		}
		if err := s.Datasync(f); err != nil {
			t.Fatalf("sync %d: %v", i, err)
		}
	}
}

// TestDatasyncConcurrent: syncs from several goroutines are taken one at a
// time, and each is told its own result.
func TestDatasyncConcurrent(t *testing.T) {
	s := New()
	defer s.Close()
	dir := t.TempDir()
	var wg sync.WaitGroup
	errs := make(chan error, 8*10)
	for g := range 8 {
		f, err := os.Create(filepath.Join(dir, "f"+string(rune('a'+g))))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				f.Write([]byte("x"))
				errs <- s.Datasync(f)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestDatasyncReportsErrors: a sync that fails says so — here of a file
// that cannot be synced (a pipe: EINVAL), through the ring and plain.
func TestDatasyncReportsErrors(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for _, s := range []*Syncer{New(), {}} {
		if err := s.Datasync(w); err == nil {
			t.Errorf("Datasync(pipe) with io_uring %v = nil, want an error", s.Async())
		}
		s.Close()
	}
	// A closed file: the error is the file's, not a hang.
	f, err := os.Create(filepath.Join(t.TempDir(), "closed"))
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	s := New()
	defer s.Close()
	if err := s.Datasync(f); err == nil {
		t.Error("Datasync(closed file) = nil, want an error")
	}
}

// TestWriteDatasync: the bytes are in the file where they were asked for,
// through the ring (write and sync linked) and plain, and a write that
// cannot be made is reported, not synced over.
func TestWriteDatasync(t *testing.T) {
	for _, s := range []*Syncer{New(), {}} {
		t.Run(fmt.Sprintf("io_uring=%v", s.Async()), func(t *testing.T) {
			defer s.Close()
			path := filepath.Join(t.TempDir(), "seg")
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := f.Truncate(1 << 20); err != nil {
				t.Fatal(err)
			}
			want := make([]byte, 1<<20)
			for i, off := range []int64{0, 4096, 100_000, 1<<20 - 700} {
				b := bytes.Repeat([]byte{byte('a' + i)}, 700)
				if err := s.WriteDatasync(f, b, off); err != nil {
					t.Fatalf("write %d at %d: %v", i, off, err)
				}
				copy(want[off:], b)
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, want) {
				t.Fatal("the file does not hold the bytes written where they were written")
			}
			ro, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer ro.Close()
			if err := s.WriteDatasync(ro, []byte("x"), 0); err == nil {
				t.Fatal("a write to a file opened read-only succeeded")
			}
		})
	}
}
