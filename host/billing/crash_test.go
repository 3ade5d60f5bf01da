package billing

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/keys"
	"github.com/switchyard/switchyard/host/store"
)

// The crash tests re-execute the test binary as a child that uses the
// ledger and is killed with SIGKILL; the parent then reopens the file.
const (
	envChild = "SWITCHYARD_BILLING_CRASH_CHILD" // mode: "hold" or "churn"
	envDB    = "SWITCHYARD_BILLING_CRASH_DB"
	envKey   = "SWITCHYARD_BILLING_CRASH_KEY"
	// envJournal, when set, is the settlement journal's directory: the
	// child settles as the gateway does by default (AsyncSettle with a
	// journal) instead of waiting for each commit.
	envJournal = "SWITCHYARD_BILLING_CRASH_JOURNAL"
	// envSegment, with envJournal, is the journal's segment size: small,
	// with a commit window of 5 ms, so that the child fills segments and
	// reuses them (journal.recycle) many times before the kill.
	envSegment = "SWITCHYARD_BILLING_CRASH_SEGMENT"
	// envSync, with envJournal, is the journal's sync period (default
	// zero: each settlement waits for its sync).
	envSync = "SWITCHYARD_BILLING_CRASH_SYNC"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(envChild); mode != "" {
		crashChild(mode, os.Getenv(envDB), os.Getenv(envKey))
		os.Exit(3) // the child is meant to be killed, not to return
	}
	os.Exit(m.Run())
}

func crashChild(mode, path, keyHash string) {
	fail := func(err error) { fmt.Println("ERROR", err); os.Exit(4) }
	db, err := store.OpenBolt(path)
	if err != nil {
		fail(err)
	}
	ks, err := keys.Open(db)
	if err != nil {
		fail(err)
	}
	opts := Options{}
	segment, _ := strconv.ParseInt(os.Getenv(envSegment), 10, 64)
	if dir := os.Getenv(envJournal); dir != "" {
		opts = Options{AsyncSettle: true, Journal: dir}
		opts.JournalSync, _ = time.ParseDuration(os.Getenv(envSync))
		if segment > 0 {
			opts.CommitWindow = 5 * time.Millisecond
		}
	}
	l, err := Open(db, opts)
	if err != nil {
		fail(err)
	}
	if segment > 0 && l.j != nil {
		l.j.segSize = segment // before the first settlement
	}
	k, err := ks.Get(keyHash)
	if err != nil {
		fail(err)
	}
	out := bufio.NewWriter(os.Stdout)
	var outMu sync.Mutex
	say := func(format string, args ...any) {
		outMu.Lock()
		fmt.Fprintf(out, format+"\n", args...)
		out.Flush()
		outMu.Unlock()
	}
	full := Usage{PromptTokens: 1000, CompletionTokens: 500, Requests: 1}
	switch mode {
	case "hold":
		for i := range 2 {
			r, aerr := l.Reserve(k, testReq(fmt.Sprintf("gen-done-%d", i)))
			if aerr != nil {
				fail(aerr)
			}
			g, err := r.Settle(Outcome{Usage: full})
			if err != nil {
				fail(err)
			}
			say("ack %s %d", g.ID, g.Charged)
		}
		if _, aerr := l.Reserve(k, testReq("gen-open")); aerr != nil {
			fail(aerr)
		}
		r2, aerr := l.Reserve(k, testReq("gen-open-checkpointed"))
		if aerr != nil {
			fail(aerr)
		}
		r2.Checkpoint(Usage{PromptTokens: 1000, CompletionTokens: 200, Requests: 1})
		if err := l.Sync(); err != nil { // the holds are durable now
			fail(err)
		}
		say("READY")
	case "churn":
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					r, aerr := l.Reserve(k, testReq(fmt.Sprintf("gen-%d-%d-%d", os.Getpid(), w, i)))
					if aerr != nil {
						time.Sleep(time.Millisecond)
						continue
					}
					u := full
					if i%3 == 0 {
						r.Checkpoint(Usage{PromptTokens: 1000, CompletionTokens: int64(i % 500)})
						u.CompletionTokens = int64(i % 500)
					}
					g, err := r.Settle(Outcome{Usage: u})
					if err != nil {
						fail(err)
					}
					say("ack %s %d", g.ID, g.Charged)
				}
			}()
		}
		say("READY")
		wg.Wait()
	}
	select {} // wait for SIGKILL
}

// runAndKill runs the child, kills it with SIGKILL `after` it is ready and
// returns the settlements it acknowledged (Settle returned) before that.
func runAndKill(t *testing.T, mode, path, keyHash, journal string, after time.Duration) map[string]Nanos {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"="+mode, envDB+"="+path, envKey+"="+keyHash, envJournal+"="+journal)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acks := map[string]Nanos{}
	ready := make(chan struct{})
	done := make(chan error, 1)
	var mu sync.Mutex
	go func() {
		sc := bufio.NewScanner(stdout)
		r := false
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			switch {
			case len(f) == 1 && f[0] == "READY" && !r:
				r = true
				close(ready)
			case len(f) == 3 && f[0] == "ack":
				n, _ := strconv.ParseInt(f[2], 10, 64)
				mu.Lock()
				acks[f[1]] = Nanos(n)
				mu.Unlock()
			default:
				done <- fmt.Errorf("child: %s", sc.Text())
				return
			}
		}
		done <- nil
	}()
	select {
	case <-ready:
	case err := <-done:
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("child ended before READY: %v", err)
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatal("child not ready after 30s")
	}
	time.Sleep(after)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	return acks
}

// crashEnv makes a store with a funded account and a key, closed, for a child.
func crashEnv(t *testing.T, credits Nanos) (path, acct string, k *keys.Key) {
	e, k := newEnv(t, credits, nil, "", Options{})
	path, acct = e.path, e.acct
	e.close()
	return path, acct, k
}

// checkRecovered reopens the file after a crash with a request deadline
// already passed, so recovery settles every hold, and checks that every
// acknowledged settlement is there exactly as acknowledged and that the
// balances add up.
func checkRecovered(t *testing.T, path, acct string, k *keys.Key, credits Nanos, journal string, acks map[string]Nanos) *env {
	t.Helper()
	opts := Options{RequestDeadline: time.Nanosecond}
	if journal != "" {
		opts.AsyncSettle, opts.Journal = true, journal
	}
	e := openEnv(t, path, opts)
	if n := e.l.OpenHolds(); n != 0 {
		t.Fatalf("%d holds still open after recovery", n)
	}
	for id, charged := range acks {
		g, err := e.l.Generation(id)
		if err != nil || g.Charged != charged {
			t.Fatalf("acknowledged settlement %s (%d) lost or changed: %+v %v", id, charged, g, err)
		}
	}
	// Recovery's settlements of the dead child's holds are queued for the
	// next commit when settling is asynchronous (the journal variant).
	if err := e.l.Sync(); err != nil {
		t.Fatal(err)
	}
	var sum Nanos
	n := 0
	if err := e.l.Generations(acct, func(g *Generation) bool { sum += g.Charged; n++; return true }); err != nil {
		t.Fatal(err)
	}
	b := e.l.Balance(acct)
	if b.Usage != sum || b.Balance != credits-sum || b.Held != 0 || b.Balance < 0 {
		t.Fatalf("balance %+v, generations (%d) charge %s", b, n, sum)
	}
	if u := e.l.KeyUsage(k); u.Total != sum {
		t.Fatalf("key usage %s, generations charge %s", u.Total, sum)
	}
	mustAudit(t, e.l)
	return e
}

// A child reserves and is killed before settling: on restart the holds are
// settled (at their checkpoint) or released, never charged twice.
func TestCrashBeforeSettle(t *testing.T) {
	credits := 10 * NanosPerUSD
	path, acct, k := crashEnv(t, credits)
	acks := runAndKill(t, "hold", path, k.Hash, "", 0)
	if len(acks) != 2 {
		t.Fatalf("acks %v", acks)
	}
	e := checkRecovered(t, path, acct, k, credits, "", acks)
	for _, tc := range []struct {
		id      string
		charged Nanos
	}{
		{"gen-open", 0}, // no checkpoint: released
		{"gen-open-checkpointed", RatesOf(testPrice).Compute(Usage{PromptTokens: 1000, CompletionTokens: 200, Requests: 1}).Total},
	} {
		g, err := e.l.Generation(tc.id)
		if err != nil || g.Status != StatusInterrupted || g.Charged != tc.charged {
			t.Errorf("%s: %+v %v", tc.id, g, err)
		}
	}
	if b := e.l.Balance(acct); b.Usage != 2*testHold+2_400_000 {
		t.Errorf("usage %s", b.Usage)
	}
	// A second recovery finds nothing to do and changes nothing.
	before := e.l.Balance(acct)
	e.close()
	e2 := checkRecovered(t, path, acct, k, credits, "", acks)
	if after := e2.l.Balance(acct); after != before {
		t.Fatalf("second recovery changed balances: %+v → %+v", before, after)
	}
}

// Kill -9 at random moments while 8 workers reserve, checkpoint and settle:
// with each settlement committed before it is acknowledged (durable), and
// as the gateway settles by default — acknowledged once in the journal,
// committed to the store a commit window (100 ms) later, so at every kill
// hundreds of acknowledged settlements exist only in the journal. Without
// the journal (AsyncSettle alone) those are lost; with it, none is.
func TestCrashAtRandomMoments(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	for _, tc := range []struct {
		name    string
		journal bool
		segment int    // bytes; 0: the journal's own size
		sync    string // the journal's sync period; empty: each settlement's
	}{
		{"durable", false, 0, ""},
		{"journal", true, 0, ""},
		{"journal reusing 256 KiB segments", true, 256 << 10, ""},
		// Never synced before the kill: an acknowledged settlement is only
		// in the process's copy into the segment (its mirror in shared
		// memory, or the file's page cache without one), which a kill -9
		// does not take.
		{"journal synced hourly", true, 0, "1h"},
		{"journal synced hourly, reusing 256 KiB segments", true, 256 << 10, "1h"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.segment > 0 {
				t.Setenv(envSegment, strconv.Itoa(tc.segment))
			}
			t.Setenv(envSync, tc.sync)
			credits := 1000 * NanosPerUSD
			path, acct, k := crashEnv(t, credits)
			journal := ""
			if tc.journal {
				journal = filepath.Join(t.TempDir(), "journal")
			}
			all := map[string]Nanos{}
			for round := range 3 {
				acks := runAndKill(t, "churn", path, k.Hash, journal, time.Duration(50+rand.IntN(250))*time.Millisecond)
				for id, c := range acks {
					all[id] = c
				}
				t.Logf("round %d: %d settlements acknowledged before the kill", round, len(acks))
				if segs, _ := journalSegments(journal); tc.segment > 0 && len(segs) > 0 {
					// Reuse is asserted by TestJournalSegmentsReused; here
					// the count says the kills met reused segments.
					t.Logf("journal at the kill: %d segment files, the last numbered %d", len(segs), segs[len(segs)-1].n)
				}
				e := checkRecovered(t, path, acct, k, credits, journal, all)
				e.close()
			}
			if len(all) == 0 {
				t.Fatal("the child settled nothing")
			}
			if tc.journal {
				if segs, err := journalSegments(journal); err != nil || len(segs) != 0 {
					t.Fatalf("journal segments left after a clean close: %v %v", segs, err)
				}
				if prefix := mirrorPrefix(mirrorRoot(), journal); prefix != "" {
					if left, _ := filepath.Glob(prefix + "*"); len(left) != 0 {
						t.Fatalf("segment mirrors left in shared memory after a clean close: %v", left)
					}
				}
			}
		})
	}
}
