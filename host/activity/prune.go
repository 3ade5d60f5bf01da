package activity

import (
	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/store"
)

// Unindex removes g's entries from the time, key and model indexes
// (billing.Options.Unindex), in the transaction that prunes g, so no entry
// names a record that is gone. The daily totals keep g: they are what
// GET /activity reads, a few rows per account and day, and stay after
// the records are pruned.
func Unindex(tx store.Tx, g *billing.Generation) error {
	for _, e := range indexKeys(g).entries() {
		if b := tx.Bucket(e.bucket); b != nil {
			if err := b.Delete(e.key); err != nil {
				return err
			}
		}
	}
	return nil
}

// Indexing returns o with the ledger's index hooks set to this package's
// (Index, Reads, Unindex): the one way a ledger is wired to the activity
// indexes, in the gateway, syctl and tests.
func Indexing(o billing.Options) billing.Options {
	o.Index, o.IndexReads, o.Unindex = Index, Reads, Unindex
	return o
}
