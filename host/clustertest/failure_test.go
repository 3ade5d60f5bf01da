package clustertest

import (
	"bytes"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/store"
)

// load runs clients through url until stop is closed; it counts what they
// saw by status, and the cost the successful ones were told.
type load struct {
	mu       sync.Mutex
	seen     float64
	byStatus map[int]int
	errs     atomic.Int64
	wg       sync.WaitGroup
	stop     chan struct{}
}

func startLoad(url, key string, clients int, maxPerClient int) *load {
	l := &load{byStatus: map[int]int{}, stop: make(chan struct{})}
	for i := range clients {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for j := 0; j < maxPerClient; j++ {
				select {
				case <-l.stop:
					return
				default:
				}
				st, cost, err := chat(url, key, (i+j)%2 == 0, i*100000+j)
				l.mu.Lock()
				if err != nil {
					// A stream cut by the killed gateway.
					l.errs.Add(1)
				} else {
					l.byStatus[st]++
					if st == 200 {
						l.seen += cost
					}
				}
				l.mu.Unlock()
				if st != 200 {
					time.Sleep(50 * time.Millisecond)
				}
			}
		}()
	}
	return l
}

func (l *load) finish() {
	close(l.stop)
	l.wg.Wait()
}

func (l *load) count(st int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.byStatus[st]
}

// problems are the warnings and errors the gateways logged (the last
// 4,000 bytes of them), for a failure to show.
func (c *cluster) problems() string {
	var out []byte
	for i, g := range c.gws {
		b, _ := os.ReadFile(g.Log)
		for _, l := range bytes.Split(b, []byte("\n")) {
			if bytes.Contains(l, []byte("level=ERROR")) || bytes.Contains(l, []byte("level=WARN")) {
				out = append(out, fmt.Sprintf("gateway %d: %s\n", i, l)...)
			}
		}
	}
	return string(tail(out, 4000))
}

// openHolds counts the holds on the shared store not yet settled.
func (c *cluster) openHolds(t *testing.T) int {
	t.Helper()
	db, err := store.Open(store.Config{Driver: "postgres", DSN: c.dsn}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	n := 0
	err = db.View(func(tx store.Tx) error {
		if b := tx.Bucket([]byte("billing_holds")); b != nil {
			n = b.KeyN()
			if os.Getenv("CLUSTERTEST_LOG") != "" {
				_ = b.ForEach(func(k, v []byte) error { t.Logf("open hold %s: %s", k, v); return nil })
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// kill -9 one gateway under load: the others keep serving, its holds are
// settled and its leases returned by a survivor, and the books balance.
// Then PostgreSQL stops for 10 s under load: requests that need it get
// 503 with Retry-After, the gateways recover by themselves when it is
// back, and nothing acknowledged is lost.
func TestClusterSurvivesCrashAndStoreOutage(t *testing.T) {
	c := startCluster(t, 3)
	secret, hash := newKey(t, c.lb.URL, 50)
	// Each gateway compiles its adapter on its first request; on a loaded
	// machine three compiling at once took longer than the 5 s the checks
	// below allow, and the first requests timed out with 502. What is
	// tested here is a crash under load, not a cold start: warm each one.
	// With a key of its own: the records checked below are the load's.
	warm, _ := newKey(t, c.lb.URL, 1)
	for i, g := range c.gws {
		waitFor(t, 90*time.Second, fmt.Sprintf("gateway %d to answer a chat request", i), func() bool {
			st, _, _ := chat(g.URL, warm, false, -1-i)
			return st == 200
		})
	}

	l := startLoad(c.lb.URL, secret, 40, 5000)
	loadStart := time.Now()
	time.Sleep(2 * time.Second)
	before := l.count(200)
	c.gws[0].Kill()
	time.Sleep(3 * time.Second)
	if after := l.count(200); after <= before {
		l.mu.Lock()
		t.Fatalf("no request was answered in the 3 s after one of three gateways was killed (%d before, %d after; statuses %v, %d client errors)\n%s", before, after, l.byStatus, l.errs.Load(), c.problems())
	}
	l.finish()
	elapsed := time.Since(loadStart)
	t.Logf("crash phase: %v, %d client errors (streams cut by the kill)", l.byStatus, l.errs.Load())
	// The survivors reconcile the dead gateway after its heartbeat has
	// stood still for 10 s (billing.Options.DeadAfter).
	waitFor(t, 60*time.Second, "the dead gateway's holds to be settled", func() bool { return c.openHolds(t) == 0 })
	// Settlements are acknowledged once in the gateway's local journal and
	// committed to the shared store within milliseconds (settle: journal,
	// the default). The survivors' are all written; the killed gateway's
	// last group commit — the requests it answered in the milliseconds
	// before SIGKILL — is in its journal, which only its own restart
	// replays, and this test does not restart it: under-charges, never a
	// charge nobody was told of (docs/billing.md). So: never more records
	// or dollars than the clients saw, and at most the killed gateway's
	// last commits' worth fewer: what one of three gateways answers in a
	// second. Its journal is written to the shared store in groups, each
	// waiting for PostgreSQL's commit, which on a loaded machine takes
	// hundreds of milliseconds (a bound of 1% of the phase's answers, about
	// 0.2 s of the killed gateway's, failed there at 1.8%).
	var recs recs
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if recs = c.records(t, hash); recs.n[billing.StatusSuccess] >= l.count(200) {
			break
		}
	}
	answered, got := l.count(200), recs.n[billing.StatusSuccess]
	if got > answered {
		t.Fatalf("%d success records for %d answered requests", got, answered)
	}
	if lost := answered - got; lost > 0 {
		t.Logf("%d requests the killed gateway answered in its last commit window have no success record (it died before writing them)", lost)
		if window := float64(answered) / elapsed.Seconds() / 3; float64(lost) > window {
			t.Fatalf("%d of %d answered requests have no record: more than the killed gateway answers in a second (%.0f)", lost, answered, window)
		}
	}
	if d := usd(recs.charged[billing.StatusSuccess]) - l.seen; d > 1e-6 || (got == answered && d < -1e-6) {
		t.Fatalf("clients were told $%.9f, the success records charge %s", l.seen, recs.charged[billing.StatusSuccess])
	}
	t.Logf("records: %v, charging %v", recs.n, recs.charged)
	c.audit(t)

	// PostgreSQL away for 10 s.
	l = startLoad(c.lb.URL, secret, 20, 5000)
	time.Sleep(time.Second)
	c.pg.Stop()
	time.Sleep(10 * time.Second)
	during := l.count(503)
	if err := c.pg.Start(); err != nil {
		t.Fatal(err)
	}
	okBefore := l.count(200)
	t.Cleanup(func() {
		if t.Failed() {
			l.mu.Lock()
			t.Logf("statuses: %v", l.byStatus)
			l.mu.Unlock()
			for _, g := range c.gws[1:] {
				t.Logf("log of %s:\n%s", g.Addr, g.Logs())
			}
		}
	})
	waitFor(t, 60*time.Second, "requests to succeed again after PostgreSQL came back", func() bool { return l.count(200) > okBefore+20 })
	l.finish()
	t.Logf("outage phase: %v, %d client errors", l.byStatus, l.errs.Load())
	if during == 0 {
		t.Fatal("no request was refused with 503 while PostgreSQL was down")
	}
	if n := l.count(401); n > 0 {
		t.Fatalf("%d requests with a valid key were answered 401 during the outage", n)
	}
	waitFor(t, 30*time.Second, "the holds to be settled after the outage", func() bool { return c.openHolds(t) == 0 })
	all := c.records(t, hash)
	want := recs.n[billing.StatusSuccess] + l.count(200)
	for end := time.Now().Add(15 * time.Second); all.n[billing.StatusSuccess] < want && time.Now().Before(end); {
		time.Sleep(200 * time.Millisecond)
		all = c.records(t, hash)
	}
	if all.n[billing.StatusSuccess] != want {
		t.Fatalf("%d success records after the outage, want %d: acknowledged settlements were lost", all.n[billing.StatusSuccess], want)
	}
	c.audit(t)
}
