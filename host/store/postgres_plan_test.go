package store

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/host/store/pgtest"
)

// TestPostgresPagePlans: a cursor page and a Get are index scans of the
// primary key in key order — no sort, no bitmap scan that would read the
// rest of the bucket — on a fresh table (no statistics) and after
// ANALYZE, with the custom plans of a prepared statement's first
// executions and the generic plan it ends up using.
func TestPostgresPagePlans(t *testing.T) {
	dsn := pgtest.Start(t)
	ctx := context.Background()
	db, err := OpenPostgres(ctx, dsn, PostgresOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx Tx) error {
		for _, name := range []string{"small", "generations"} {
			b, err := tx.CreateBucketIfNotExists([]byte(name))
			if err != nil {
				return err
			}
			n := 10
			if name == "generations" {
				n = 3000
			}
			for i := 0; i < n; i++ {
				if err := b.Put(fmt.Appendf(nil, "gen-%010d", i), make([]byte, 100)); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	cases := []struct{ name, sql, args string }{
		{"first", sqlFirst, "2, 'gen-0000001000', 128"},
		{"after", sqlAfter, "2, 'gen-0000001000', 128"},
		{"last", sqlLast, "2, 128"},
		{"before", sqlBefore, "2, 'gen-0000001000', 128"},
		{"get", sqlGet, "2, 'gen-0000001000'"},
	}
	for _, stats := range []string{"no statistics", "analyzed"} {
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			if _, err := conn.Exec(ctx, "SET plan_cache_mode = "+mode); err != nil {
				t.Fatal(err)
			}
			if stats == "analyzed" && mode == "force_custom_plan" {
				if _, err := conn.Exec(ctx, "ANALYZE sy_pairs"); err != nil {
					t.Fatal(err)
				}
			}
			for i, c := range cases {
				name := fmt.Sprintf("p%d_%d_%d", i, len(stats), len(mode))
				if _, err := conn.Exec(ctx, "PREPARE "+name+" AS "+c.sql); err != nil {
					t.Fatal(err)
				}
				rows, err := conn.Query(ctx, "EXPLAIN EXECUTE "+name+"("+c.args+")")
				if err != nil {
					t.Fatal(err)
				}
				var plan []string
				for rows.Next() {
					var line string
					if err := rows.Scan(&line); err != nil {
						t.Fatal(err)
					}
					plan = append(plan, line)
				}
				rows.Close()
				p := strings.Join(plan, "\n")
				if !strings.Contains(p, "Index Scan") || strings.Contains(p, "Sort") || strings.Contains(p, "Bitmap") || strings.Contains(p, "Seq Scan") {
					t.Errorf("%s, %s, %s: not an ordered primary-key index scan:\n%s", c.name, stats, mode, p)
				}
			}
		}
	}
}
