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
	bolt "go.etcd.io/bbolt"
)

// Key names an endpoint: model id and provider slug.
type Key struct{ Model, Provider string }

// sum is one hour's traffic of one endpoint.
type sum struct {
	tokens int64         // prompt tokens (cached ones included)
	cost   billing.Nanos // what they cost: prompt + cache read
}

// Weighted keeps per-hour sums of the records it has read and reads only
// the records written since its last refresh, so a refresh costs what was
// settled since the last one, not the whole window.
type Weighted struct {
	db     *bolt.DB
	window time.Duration
	every  time.Duration
	now    func() time.Time

	mu      sync.Mutex   // held by the refresh
	snap    sync.RWMutex // guards current for readers that skip a refresh
	last    string       // id of the last record read
	hours   map[int64]map[Key]sum
	at      time.Time // of the last refresh
	current map[Key]Price
}

// New reads db's records over the trailing window, refreshing at most once
// per every (a request in between gets the prices of the last refresh; 0
// refreshes on every call, which reads only the records settled since the
// last one). A call that finds a refresh running does not wait for it.
func New(db *bolt.DB, window, every time.Duration) *Weighted {
	return &Weighted{db: db, window: window, every: every, now: time.Now, hours: map[int64]map[Key]sum{}}
}

// Price is an endpoint's effective input price over the window, in USD per
// million tokens (the unit of list prices), and the prompt tokens it is
// the average of (to weight endpoints against each other).
type Price struct {
	USDPerM float64
	Tokens  int64
}

// Prices returns the effective input price of every endpoint with traffic
// in the window. The map is shared: read it, never change it.
func (w *Weighted) Prices() (map[Key]Price, error) {
	if w == nil || w.db == nil {
		return nil, nil
	}
	if !w.mu.TryLock() {
		// Another request is refreshing: this one takes the prices of the
		// last refresh rather than wait.
		w.snap.RLock()
		defer w.snap.RUnlock()
		return w.current, nil
	}
	defer w.mu.Unlock()
	now := w.now()
	if w.current != nil && now.Sub(w.at) < w.every {
		return w.current, nil
	}
	from := now.Add(-w.window)
	after := w.last
	if first := billing.IDAt(from); after < first {
		// Nothing read yet, or the last read is older than the window:
		// start at the window's first record (a Seek, not a full scan).
		after = first // no id is that short: the seek lands on the first record at or after from
	}
	err := w.db.View(func(tx *bolt.Tx) error {
		last, err := billing.ForEachGenerationIn(tx, after, func(g *billing.Generation) bool {
			if g.Usage.PromptTokens <= 0 || g.Provider == "" {
				return true
			}
			h := g.CreatedAt.Unix() / 3600
			m := w.hours[h]
			if m == nil {
				m = map[Key]sum{}
				w.hours[h] = m
			}
			k := Key{g.Model, g.Provider}
			s := m[k]
			s.tokens += g.Usage.PromptTokens
			s.cost += g.Cost.Prompt + g.Cost.CacheRead
			m[k] = s
			return true
		})
		if last != "" {
			w.last = last
		}
		return err
	})
	if err != nil {
		return w.current, err
	}
	oldest := from.Unix() / 3600
	total := map[Key]sum{}
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
	w.current, w.at = out, now
	w.snap.Unlock()
	return out, nil
}
