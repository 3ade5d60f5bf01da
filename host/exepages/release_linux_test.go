package exepages

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// rssFileKB is the process's file-backed resident memory (RssFile, kB).
func rssFileKB(t *testing.T) int {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "RssFile:"); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no RssFile in /proc/self/status")
	return 0
}

func TestReleaseUnmapsAndCodeStillRuns(t *testing.T) {
	// Touch a good part of the test binary first (exec's and strconv's
	// code, the runtime's tables) so there is something to release.
	if out, err := exec.Command("/bin/true").CombinedOutput(); err != nil {
		t.Skipf("no /bin/true: %v %s", err, out)
	}
	before := rssFileKB(t)
	n, err := Release()
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("Release found no read-only mapping of the executable")
	}
	after := rssFileKB(t)
	t.Logf("RssFile %d kB → %d kB (released %d bytes of address space)", before, after, n)
	if after >= before {
		t.Fatalf("RssFile did not fall: %d kB before Release, %d kB after", before, after)
	}
	// The released code and data fault back in: the same work runs and
	// computes the same.
	if out, err := exec.Command("/bin/echo", "again").Output(); err != nil || string(out) != "again\n" {
		t.Fatalf("after Release: %q, %v", out, err)
	}
	if s := strconv.Quote("a\x00é"); s != `"a\x00é"` {
		t.Fatalf("after Release: strconv.Quote = %s", s)
	}
}
