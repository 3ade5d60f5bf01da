package memsnap

import (
	"bytes"
	"errors"
	"os"
	"runtime"
	"testing"
)

// Through the package's API, as host/wasm uses it: a memory from
// Allocator, taken, written by "calls" (the same pages, new ones, pages
// past the snapshot's size), is put back by every Reset; where the
// platform has no memory files, Take says so and leaves the memory alone.
func TestTakeAndReset(t *testing.T) {
	page := os.Getpagesize()
	const pages, size = 64, 40 // mapping and snapshot, in OS pages
	if Allocator == nil {
		t.Skip("no mappings on this platform")
	}
	m, ok := Allocator.Allocate(uint64(pages*page), uint64(pages*page)).(*Memory)
	if !ok {
		t.Skip("memory could not be mapped")
	}
	defer m.Free()
	mem := m.Bytes()
	for i := 0; i < size*page; i += 101 {
		mem[i] = byte(i)
	}
	want := bytes.Clone(mem)
	runtime.LockOSThread() // the call and its reset on one thread, as callTenant
	defer runtime.UnlockOSThread()
	img, err := Take(m, size*page)
	if runtime.GOOS != "linux" {
		if !errors.Is(err, errors.ErrUnsupported) || !bytes.Equal(mem, want) {
			t.Fatalf("Take: %v; want ErrUnsupported and the memory unchanged", err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, call := range []struct {
		name  string
		pages []int
	}{
		{"pages of the snapshot", []int{0, 3, 39}},
		{"the same pages", []int{0, 3, 39}},
		{"pages past the snapshot's size", []int{40, 63}},
		{"nothing", nil},
	} {
		img.BeforeCall()
		for _, p := range call.pages {
			mem[p*page+7] ^= 0xff
		}
		if _, err := img.Reset(mem); err != nil {
			t.Fatalf("%s: %v", call.name, err)
		}
		if !bytes.Equal(mem, want) {
			t.Fatalf("%s: not put back", call.name)
		}
	}
	if _, err := img.Reset(append(mem, 0)); err == nil {
		t.Fatal("Reset of more than the mapping: no error")
	}
}
