package exepages

import (
	"reflect"
	"strings"
	"testing"
)

func TestReadOnlyOf(t *testing.T) {
	const exe = "/usr/local/bin/switch yard"
	maps := strings.Join([]string{
		"00400000-01832000 r-xp 00000000 fe:00 10011330                           /usr/local/bin/switch yard",
		"01832000-033aa000 r--p 01432000 fe:00 10011330                           /usr/local/bin/switch yard",
		"033aa000-03534000 rw-p 02faa000 fe:00 10011330                           /usr/local/bin/switch yard",
		"03534000-0558a000 rw-p 00000000 00:00 0 ",
		"7f89318c8000-7f8931900000 r--s 00000000 fe:00 10011330                   /usr/local/bin/switch yard",
		"7f897b70a000-7f897b730000 r--p 00000000 fe:00 326269                     /usr/lib/x86_64-linux-gnu/libc.so.6",
		"7f897b730000-7f897b886000 r-xp 00026000 fe:00 326269                     /usr/local/bin/switch yard.old",
		"7ffd5a9e1000-7ffd5aa02000 rw-p 00000000 00:00 0                          [stack]",
		"7ffd5aa02000-7ffd5aa06000 r--p 00000000 00:00 0                          [vvar]",
	}, "\n")
	got, err := readOnlyOf(strings.NewReader(maps), exe)
	if err != nil {
		t.Fatal(err)
	}
	// Only the private, read-only mappings of the executable itself: not
	// its writable data (MADV_DONTNEED would drop its changes), not a
	// shared mapping, not another file whose name starts the same.
	want := []mapping{{0x400000, 0x1832000}, {0x1832000, 0x33aa000}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("mappings = %#v, want %#v", got, want)
	}
}

func TestReadOnlyOfBadRange(t *testing.T) {
	for _, line := range []string{
		"00400000 r-xp 00000000 fe:00 1 /x",
		"zz-01 r-xp 00000000 fe:00 1 /x",
		"02-01 r-xp 00000000 fe:00 1 /x",
	} {
		if _, err := readOnlyOf(strings.NewReader(line), "/x"); err == nil {
			t.Errorf("%q: no error", line)
		}
	}
}
