// Package pricing computes each endpoint's traffic-weighted effective input
// price from the generation records: what prompt tokens actually cost at
// that endpoint over a trailing window (cache reads at their discounted
// rate included), weighted by the tokens each request sent. The
// pareto-router's price_source "weighted_avg" ranks by it (spec 2.3); an
// endpoint with no traffic in the window has none, and the router falls
// back to its list price.
package pricing

import (
	"sync"
	"time"

	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/store"
)

// smallRead records are read on every refresh; past it a refresh waits
// readCost per record read (a record is decoded from JSON: about a
// microsecond).
const (
	smallRead = 1000
	readCost  = 20 * time.Microsecond
)

// Key names an endpoint: model id and provider slug.
type Key struct{ Model, Provider string }

// sum is some traffic of one endpoint.
type sum struct {
	tokens int64         // prompt tokens (cached ones included)
	cost   billing.Nanos // what they cost: prompt + cache read
}

// Price is an endpoint's effective input price over the window, in USD per
// million tokens (the unit of list prices), and the prompt tokens it is
// the average of (to weight endpoints against each other).
type Price struct {
	USDPerM float64
	Tokens  int64
}

// Weighted reads the records by id, which is the time a request started.
// A record is written when the request ends, so a record's id can be older
// than records already written: the records of the last Settle (longer
// than any request may last) are read afresh on every refresh (the open
// tail), and only older ones are added, once, to per-hour sums (the closed
// part). A request that outlives Settle and ends after its id left the
// tail is not counted.
type Weighted struct {
	db     store.DB
	window time.Duration
	every  time.Duration
	// Settle is how long after its start a request's record may still be
	// written (the request timeout and a margin).
	Settle time.Duration
	now    func() time.Time

	mu     sync.Mutex   // held by the refresh
	snap   sync.RWMutex // guards current for readers that skip a refresh
	closed string       // the closed part covers the ids before it
	hours  map[int64]map[Key]sum
	at     time.Time     // of the last refresh
	next   time.Duration // wait after the last refresh before the next
	// current is the last refresh's prices.
	current map[Key]Price
}

// New reads db's records over the trailing window. It refreshes at most
// once per every, and after a refresh that read more than smallRead
// records it waits readCost for each (about twenty times what reading one
// costs, so refreshing takes at most about 5% of a core however busy the
// store is; counted in records, not timed, so a test sees the same
// behaviour on a slow machine). A request in between gets the last
// refresh's prices, and so does one that finds a refresh running.
func New(db store.DB, window, every time.Duration) *Weighted {
	return &Weighted{db: db, window: window, every: every, Settle: 15 * time.Minute, now: time.Now, hours: map[int64]map[Key]sum{}}
}

// Prices returns the effective input price of every endpoint with traffic
// in the window. The map is shared: read it, never change it.
func (w *Weighted) Prices() (map[Key]Price, error) {
	if w == nil || w.db == nil {
		return nil, nil
	}
	if !w.mu.TryLock() {
		w.snap.RLock()
		defer w.snap.RUnlock()
		return w.current, nil
	}
	defer w.mu.Unlock()
	now := w.now()
	if w.current != nil && now.Sub(w.at) < max(w.every, w.next) {
		return w.current, nil
	}
	read := 0
	from := now.Add(-w.window)
	boundary := billing.IDAt(now.Add(-w.Settle))
	if first := billing.IDAt(from); w.closed < first {
		// Nothing read yet, or the last read is older than the window:
		// start at the window's first record (a seek, not a full scan;
		// no id is as short as IDAt's, so none equals it).
		w.closed = first
	}
	tail := map[Key]sum{}
	add := func(m map[Key]sum, g *billing.Generation) {
		read++
		if g.Usage.PromptTokens <= 0 || g.Provider == "" {
			return
		}
		k := Key{g.Model, g.Provider}
		s := m[k]
		s.tokens += g.Usage.PromptTokens
		s.cost += g.Cost.Prompt + g.Cost.CacheRead
		m[k] = s
	}
	err := w.db.View(func(tx store.Tx) error {
		// The closed part: ids from the last boundary to this one.
		if w.closed < boundary {
			if _, err := billing.ForEachGenerationIn(tx, w.closed, func(g *billing.Generation) bool {
				if g.ID >= boundary {
					return false
				}
				h := g.CreatedAt.Unix() / 3600
				if w.hours[h] == nil {
					w.hours[h] = map[Key]sum{}
				}
				add(w.hours[h], g)
				return true
			}); err != nil {
				return err
			}
			w.closed = boundary
		}
		// The open tail, read afresh.
		_, err := billing.ForEachGenerationIn(tx, max(boundary, w.closed), func(g *billing.Generation) bool {
			add(tail, g)
			return true
		})
		return err
	})
	if err != nil {
		return w.current, err
	}
	oldest := from.Unix() / 3600
	total := tail
	for h, m := range w.hours {
		if h < oldest {
			delete(w.hours, h)
			continue
		}
		for k, s := range m {
			t := total[k]
			t.tokens += s.tokens
			t.cost += s.cost
			total[k] = t
		}
	}
	out := make(map[Key]Price, len(total))
	for k, s := range total {
		if s.tokens > 0 {
			// nano-dollars per token × 1e6 tokens / 1e9 = USD per million.
			out[k] = Price{USDPerM: float64(s.cost) / float64(s.tokens) / 1000, Tokens: s.tokens}
		}
	}
	w.snap.Lock()
	w.current, w.at, w.next = out, now, 0
	if read > smallRead {
		w.next = time.Duration(read) * readCost
	}
	w.snap.Unlock()
	return out, nil
}
