package billing

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/switchyard/switchyard/host/store"
)

// Audit recomputes every balance from the durable records, in one read
// transaction: an account's credits must equal the sum of its top-ups, its
// usage the sum of the amounts charged in its generation records (plus
// the archived totals of the records pruned for their age), and its
// balance credits minus usage; a key's total usage must equal the sum
// charged in its generation records (likewise plus its archived total). It returns one line per discrepancy
// (none when the ledger is consistent). Open holds are not part of any
// balance and are not checked.
func (l *Ledger) Audit() ([]string, error) {
	a := &audit{credits: map[string]Nanos{}, charged: map[string]Nanos{}, byKey: map[string]Nanos{}}
	err := l.db.View(func(tx store.Tx) error {
		for _, step := range []func(store.Tx) error{a.archived, a.topUps, a.generations, a.accounts, a.leases, a.keys} {
			if err := step(tx); err != nil {
				return err
			}
		}
		return nil
	})
	sort.Strings(a.problems)
	return a.problems, err
}

// audit is one Audit's sums and findings; each step reads one bucket
// within the one read transaction.
type audit struct {
	credits  map[string]Nanos // top-ups by account
	charged  map[string]Nanos // generations' charges by account
	byKey    map[string]Nanos // generations' charges by key hash
	problems []string
}

func (a *audit) problem(format string, args ...any) {
	a.problems = append(a.problems, fmt.Sprintf(format, args...))
}

// archived counts pruned records (prune.go) through their archived totals.
func (a *audit) archived(tx store.Tx) error {
	archA, archK, err := archivedIn(tx)
	if err != nil {
		return err
	}
	for id, r := range archA {
		a.charged[id] += r.Charged
		if r.Charged < 0 || r.Records < 0 {
			a.problem("account %s: archived totals are negative (%s in %d records)", id, r.Charged, r.Records)
		}
	}
	for hash, r := range archK {
		a.byKey[hash] += r.Charged
		if r.Charged < 0 || r.Records < 0 {
			a.problem("key %s: archived totals are negative (%s in %d records)", hash, r.Charged, r.Records)
		}
	}
	return nil
}

func (a *audit) topUps(tx store.Tx) error {
	return tx.Bucket(bucketCredits).ForEach(func(_, v []byte) error {
		var c creditRec
		if err := json.Unmarshal(v, &c); err != nil {
			return err
		}
		a.credits[c.Account] += c.Amount
		return nil
	})
}

// generations sums the charges and checks each record's own arithmetic.
func (a *audit) generations(tx store.Tx) error {
	return tx.Bucket(bucketGenerations).ForEach(func(_, v []byte) error {
		var g Generation
		if err := json.Unmarshal(v, &g); err != nil {
			return err
		}
		a.charged[g.AccountID] += g.Charged
		a.byKey[g.KeyHash] += g.Charged
		if g.Charged < 0 || g.Uncollected < 0 || g.Insured < 0 || g.Charged+g.Uncollected+g.Insured != g.Cost.Total+g.FailedCost+g.FeesCost {
			a.problem("generation %s: charged %s + uncollected %s + insured %s != cost %s + failed %s + tool fees %s",
				g.ID, g.Charged, g.Uncollected, g.Insured, g.Cost.Total, g.FailedCost, g.FeesCost)
		}
		return nil
	})
}

// accounts checks each account's totals against the sums, and that no
// charge belongs to an account without a record.
func (a *audit) accounts(tx store.Tx) error {
	seen := map[string]bool{}
	err := tx.Bucket(bucketAccounts).ForEach(func(k, v []byte) error {
		var r accountRec
		if err := json.Unmarshal(v, &r); err != nil {
			return err
		}
		id := string(k)
		seen[id] = true
		if r.Credits != a.credits[id] {
			a.problem("account %s: credits %s, top-ups sum to %s", id, r.Credits, a.credits[id])
		}
		if r.Usage != a.charged[id] {
			a.problem("account %s: usage %s, generations charge %s", id, r.Usage, a.charged[id])
		}
		if r.Balance != r.Credits-r.Usage {
			a.problem("account %s: balance %s != credits %s - usage %s", id, r.Balance, r.Credits, r.Usage)
		}
		if r.Balance < 0 {
			a.problem("account %s: balance %s is negative", id, r.Balance)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for id, n := range a.charged {
		if !seen[id] && n != 0 {
			a.problem("account %s: no account record but generations charge %s", id, n)
		}
	}
	return nil
}

// leases checks cluster mode's leases: none is negative and an account's
// never exceed its balance (what makes N instances unable to overspend).
func (a *audit) leases(tx store.Tx) error {
	lb := tx.Bucket(bucketLeases)
	if lb == nil {
		return nil
	}
	leased := map[string]Nanos{}
	err := lb.ForEach(func(k, v []byte) error {
		n := readNanos(v)
		if n < 0 {
			a.problem("lease %s is negative (%s)", k, n)
		}
		if s := string(k); strings.HasPrefix(s, "a/") {
			if i := strings.LastIndexByte(s, '/'); i > 2 {
				leased[s[2:i]] += n
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	ab := tx.Bucket(bucketAccounts)
	for id, n := range leased {
		var r accountRec
		if v := ab.Get([]byte(id)); v != nil {
			if err := json.Unmarshal(v, &r); err != nil {
				return err
			}
		}
		if n > r.Balance {
			a.problem("account %s: leases total %s, more than its balance %s", id, n, r.Balance)
		}
	}
	return nil
}

// keys checks each key's usage against the generations charged to it.
func (a *audit) keys(tx store.Tx) error {
	kb := tx.Bucket(bucketKeys)
	for hash, n := range a.byKey {
		var u keyUsage
		if v := kb.Get([]byte(hash)); v != nil {
			if err := json.Unmarshal(v, &u); err != nil {
				return err
			}
		}
		if u.Total != n {
			a.problem("key %s: usage %s, generations charge %s", hash, u.Total, n)
		}
	}
	return nil
}

// OpenHolds returns the number of reservations not yet settled.
func (l *Ledger) OpenHolds() int {
	n := 0
	l.eachAccount(func(a *account) { n += len(a.open) })
	return n
}

// Anomalies lists the generations whose reported usage cost more than the
// hold the request authorised (Generation.Anomaly): the excess was not
// charged; and those whose upstream reported zero usage (charged the
// gateway's count). They are not ledger errors — the books still balance — but each
// names an upstream that reported more than the request could produce, or
// a hold that was too small, which an operator should look at.
func (l *Ledger) Anomalies() ([]string, error) {
	var out []string
	err := l.db.View(func(tx store.Tx) error {
		return tx.Bucket(bucketGenerations).ForEach(func(_, v []byte) error {
			var g Generation
			if err := json.Unmarshal(v, &g); err != nil {
				return err
			}
			switch {
			case g.Anomaly != "" && g.Uncollected == 0:
				out = append(out, fmt.Sprintf("generation %s (account %s, model %s): %s", g.ID, g.AccountID, g.Model, g.Anomaly))
			case g.Anomaly != "":
				out = append(out, fmt.Sprintf("generation %s (account %s, model %s): %s; %s not charged",
					g.ID, g.AccountID, g.Model, g.Anomaly, g.Uncollected))
			}
			return nil
		})
	})
	sort.Strings(out)
	return out, err
}
