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

// startResponsesPruner deletes the stored Responses API responses older
// than retention.responses (30 days unless set; 0 keeps them).
func (g *Gateway) startResponsesPruner() {
	st := stored.Store{DB: g.Ledger.DB()}
	g.pruneEvery("stored responses", g.Config.Retention.ResponsesKeep(), func() {
		// Records from before the time index are indexed once, so the
		// prune finds them too.
		if n, err := st.Backfill(time.Now(), billing.PruneBatch); err != nil {
			g.log.Warn("retention: indexing stored responses by time", "err", err)
		} else if n > 0 {
			g.log.Info("retention: indexed stored responses by time", "responses", n)
		}
	}, func(before time.Time) (int, error) { return st.Prune(before, billing.PruneBatch) })
}

// startContentPruner deletes the stored generation content (host/content)
// older than retention.content (30 days unless set; 0 keeps it).
func (g *Gateway) startContentPruner() {
	st := content.Store{DB: g.Ledger.DB()}
	g.pruneEvery("generation content", g.Config.Retention.ContentKeep(), nil,
		func(before time.Time) (int, error) { return st.Prune(before, billing.PruneBatch) })
}

// pruneEvery runs prune on what is older than keep (first, when not nil,
// once before) every retention.DefaultInterval, until the gateway stops,
// before the store closes. keep 0 prunes nothing. Deleting is idempotent:
// on a cluster every instance may run it.
func (g *Gateway) pruneEvery(what string, keep time.Duration, first func(), prune func(before time.Time) (int, error)) {
	if keep <= 0 {
		return
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		if first != nil {
			first()
		}
		t := time.NewTicker(retention.DefaultInterval)
		defer t.Stop()
		for {
			n, err := prune(time.Now().Add(-keep))
			switch {
			case err != nil:
				g.log.Warn("retention: pruning "+what, "retention", config.FormatDuration(keep), "err", err)
			case n > 0:
				g.log.Info("retention: pruned "+what, "records", n, "retention", config.FormatDuration(keep))
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	g.closers = append(g.closers, func() { close(stop); <-done })
}
