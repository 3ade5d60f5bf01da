package gateway

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/config"
	"github.com/switchyard/switchyard/host/content"
	"github.com/switchyard/switchyard/host/responses/stored"
	"github.com/switchyard/switchyard/host/retention"
)

// weightedWindow is how far back the weighted routers read generation
// records (host/server/routers.go): a shorter retention leaves them less.
const weightedWindow = 7 * 24 * time.Hour

// startPruner starts the pruner of generation records when the
// configuration sets retention.generations (docs/cluster.md, "Generation
// records"); it stops before the ledger closes.
func (g *Gateway) startPruner(now func() time.Time) {
	keep := time.Duration(g.Config.Retention.Generations)
	if keep <= 0 {
		return
	}
	if keep < weightedWindow {
		g.log.Warn("retention.generations is shorter than the 7 days of records the weighted routers average prices over; they will average over the records kept",
			"retention", config.FormatDuration(keep))
	}
	g.Pruner = retention.New(g.Ledger, retention.Options{
		Retention: keep,
		Now:       now,
		Logf:      func(f string, a ...any) { g.log.Info(fmt.Sprintf(f, a...)) },
	})
	g.Pruner.Start()
	g.closers = append(g.closers, g.Pruner.Stop)
	g.log.Info("generation records are pruned after the retention period", "retention", config.FormatDuration(keep),
		"every", config.FormatDuration(retention.DefaultInterval))
}

// pruneMetrics counts the records this instance pruned on reg.
func (g *Gateway) pruneMetrics(reg *prometheus.Registry) {
	p := g.Pruner
	if p == nil {
		return
	}
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "switchyard_generations_pruned_total",
		Help: "Generation records this instance deleted because they were older than retention.generations."},
		func() float64 { return float64(p.Pruned()) }))
}

// recordPruner deletes one kind of record (host/records) older than keep.
type recordPruner struct {
	what  string
	keep  time.Duration
	prune func(before time.Time) (int, error)
}

// startRecordPruners deletes the stored Responses API responses older than
// retention.responses and the stored generation content (host/content)
// older than retention.content (30 days each unless set; 0 keeps them),
// in one background loop: a round at start (a gateway that was down
// catches up), then one every retention.DefaultInterval, until the gateway
// stops, before the store closes. Deleting is idempotent: on a cluster
// every instance may run it. now is the gateway's clock.
func (g *Gateway) startRecordPruners(now func() time.Time) {
	if now == nil {
		now = time.Now
	}
	g.now = now
	db := g.Ledger.DB()
	responses, content := stored.Store{DB: db}, content.Store{DB: db}
	g.recordPruners = nil
	for _, p := range []recordPruner{
		{"stored responses", g.Config.Retention.ResponsesKeep(), func(before time.Time) (int, error) { return responses.Prune(before, billing.PruneBatch) }},
		{"generation content", g.Config.Retention.ContentKeep(), func(before time.Time) (int, error) { return content.Prune(before, billing.PruneBatch) }},
	} {
		if p.keep > 0 {
			g.recordPruners = append(g.recordPruners, p)
		}
	}
	if len(g.recordPruners) == 0 {
		return
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		if g.Config.Retention.ResponsesKeep() > 0 {
			// Records from before the time index are indexed once, so the
			// prune finds them too.
			if n, err := responses.Backfill(now(), billing.PruneBatch); err != nil {
				g.log.Warn("retention: indexing stored responses by time", "err", err)
			} else if n > 0 {
				g.log.Info("retention: indexed stored responses by time", "responses", n)
			}
		}
		t := time.NewTicker(retention.DefaultInterval)
		defer t.Stop()
		for {
			g.PruneRecords()
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	g.closers = append(g.closers, func() { close(stop); <-done })
}

// PruneRecords runs one round of the record pruners now (they also run on
// their own every retention.DefaultInterval), logging what each deleted
// or why it failed, and returns how many records each deleted by what it
// prunes ("stored responses", "generation content").
func (g *Gateway) PruneRecords() map[string]int {
	pruned := make(map[string]int, len(g.recordPruners))
	for _, p := range g.recordPruners {
		n, err := p.prune(g.now().Add(-p.keep))
		pruned[p.what] = n
		switch {
		case err != nil:
			g.log.Warn("retention: pruning "+p.what, "retention", config.FormatDuration(p.keep), "err", err)
		case n > 0:
			g.log.Info("retention: pruned "+p.what, "records", n, "retention", config.FormatDuration(p.keep))
		}
	}
	return pruned
}
