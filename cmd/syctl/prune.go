package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/config"
)

// prune deletes the generation records older than -older-than once, as
// the gateway's pruner does every few minutes with retention.generations
// (docs/cluster.md, "Generation records"): their activity index entries go
// with them, what they charged goes to the archived totals, daily totals
// and balances stay.
func (c *cli) prune(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("syctl prune", flag.ContinueOnError)
	fs.SetOutput(stderr)
	olderThan := fs.String("older-than", "", "delete the records older than this: 90d, 2160h (at least 1h)")
	batch := fs.Int("batch", billing.PruneBatch, "most records deleted per transaction")
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	if *olderThan == "" {
		return errors.New("prune: -older-than is required (e.g. -older-than 90d)")
	}
	keep, err := config.ParseDuration(*olderThan)
	if err == nil {
		err = config.CheckRetention(keep)
	}
	if err == nil && keep == 0 {
		err = errors.New("0 would delete every record: give how long to keep them (e.g. 90d)")
	}
	if err != nil {
		return fmt.Errorf("prune: -older-than: %w", err)
	}
	if *batch < 1 || *batch > billing.PruneBatch {
		return fmt.Errorf("prune: -batch must be from 1 to %d", billing.PruneBatch)
	}
	before := time.Now().UTC().Add(-keep)
	res, err := c.l.Prune(keep, billing.PruneOptions{Batch: *batch})
	if err != nil {
		return fmt.Errorf("prune: %w (%d records pruned before the failure)", err, res.Pruned)
	}
	return c.print(map[string]any{"pruned": res.Pruned, "transactions": res.Batches, "held": res.Held, "before": before.Format(time.RFC3339)},
		func(w io.Writer) {
			fmt.Fprintf(w, "pruned %d generation records created before %s (older than %s) in %d transactions\n",
				res.Pruned, before.Format(time.RFC3339), config.FormatDuration(keep), res.Batches)
			if res.Held > 0 {
				fmt.Fprintf(w, "kept %d older records whose requests are still open\n", res.Held)
			}
		})
}
