// Package retention is the gateway's pruner: every few minutes it deletes
// the generation records older than the configured retention
// (config retention.generations) with billing.Ledger.Prune, in bounded
// batches with a pause between them, until the gateway stops.
//
// Every instance of a cluster runs one. Deleting is idempotent, so two
// rounds at once are harmless; to avoid the duplicate work, a round first
// reads the shared prune record and is skipped when another instance
// completed one less than half an interval ago.
package retention

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/config"
)

// DefaultInterval is how often a round runs: records are at most this
// much past the retention when they go, and an idle round costs one read.
const DefaultInterval = 5 * time.Minute

// Options configure a Pruner.
type Options struct {
	// Retention is how long records are kept (> 0).
	Retention time.Duration
	// Interval is the time between rounds (default DefaultInterval).
	Interval time.Duration
	// Batch is the most records one transaction deletes (default
	// billing.PruneBatch).
	Batch int
	// Now is the clock the skip decision reads (default time.Now); tests
	// give it the ledger's.
	Now func() time.Time
	// Logf reports rounds that pruned something and failures; nil
	// discards them.
	Logf func(format string, args ...any)
}

// Pruner runs rounds until Stop.
type Pruner struct {
	l       *billing.Ledger
	o       Options
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
	running atomic.Bool
	pruned  atomic.Int64
}

// New returns a pruner of l; Start runs it in the background, Round runs
// one round now.
func New(l *billing.Ledger, o Options) *Pruner {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	return &Pruner{l: l, o: o, stop: make(chan struct{}), done: make(chan struct{})}
}

// Start runs a round at once (a gateway that was down catches up), then
// one every Interval, until Stop.
func (p *Pruner) Start() {
	if p.running.Swap(true) {
		return
	}
	go func() {
		defer close(p.done)
		t := time.NewTicker(p.o.Interval)
		defer t.Stop()
		for {
			if _, _, err := p.Round(); err != nil {
				p.o.Logf("retention: pruning generation records older than %s: %v (next round in %s)",
					config.FormatDuration(p.o.Retention), err, config.FormatDuration(p.o.Interval))
			}
			select {
			case <-p.stop:
				return
			case <-t.C:
			}
		}
	}()
}

// Stop ends the pruner, after the batch in flight, and waits for it. Call
// it before closing the ledger. It is safe to call more than once, and
// without Start.
func (p *Pruner) Stop() {
	p.once.Do(func() { close(p.stop) })
	if p.running.Load() {
		<-p.done
	}
}

// Pruned counts the records this pruner deleted (the metric
// switchyard_generations_pruned_total).
func (p *Pruner) Pruned() int64 { return p.pruned.Load() }

// Round prunes the records older than the retention, unless another
// instance completed a round less than half an interval ago (skipped). A
// round that has many records to delete pauses after each batch as long
// as the batch took (so pruning takes at most half the write lock's time)
// and stops early when the pruner stops.
func (p *Pruner) Round() (res billing.PruneResult, skipped bool, err error) {
	if p.o.Retention <= 0 {
		return res, false, errors.New("retention: no retention period: records are kept forever")
	}
	now := p.o.Now()
	st, err := p.l.PruneState()
	if err != nil {
		return res, false, err
	}
	// Skewed clocks count as recent either way; a clock stepped far back
	// does not.
	if since := now.Sub(st.At); !st.At.IsZero() && since < p.o.Interval/2 && since > -p.o.Interval/2 &&
		!st.Before.Before(now.Add(-p.o.Retention-p.o.Interval)) {
		return res, true, nil
	}
	res, err = p.l.Prune(p.o.Retention, billing.PruneOptions{Batch: p.o.Batch, Between: p.pause})
	p.pruned.Add(int64(res.Pruned))
	if res.Pruned > 0 {
		p.o.Logf("retention: pruned %d generation records older than %s in %d transactions",
			res.Pruned, config.FormatDuration(p.o.Retention), res.Batches)
	}
	return res, false, err
}

// pause waits as long as the last batch took, or until Stop.
func (p *Pruner) pause(took time.Duration) bool {
	t := time.NewTimer(took)
	defer t.Stop()
	select {
	case <-p.stop:
		return false
	case <-t.C:
		return true
	}
}
