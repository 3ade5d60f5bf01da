package store

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/host/store/pgtest"
)

// TestPostgresPagePlans: a cursor page, a Get and a run of deletes are
// index scans of the primary key in key order — no sort, no bitmap scan that would read the
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
		{"delete many", sqlDeleteMany, "ARRAY[2, 2]::bigint[], ARRAY['gen-0000001000', 'gen-0000001001']::bytea[]"},
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

// BenchmarkPostgresPageMillion: a View that seeks into a bucket of a
// million time-ordered keys (generation records) and reads 50 — a page
// of GET /generations — and one that reads the newest 50 backwards.
func BenchmarkPostgresPageMillion(b *testing.B) {
	if pgtest.Skip() {
		b.Skip("SWITCHYARD_SKIP_PG=1")
	}
	dsn := pgtest.Start(b)
	ctx := context.Background()
	db, err := OpenPostgres(ctx, dsn, PostgresOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx Tx) error {
		_, err := tx.CreateBucketIfNotExists([]byte("generations"))
		return err
	}); err != nil {
		b.Fatal(err)
	}
	const n = 1_000_000
	// Seeded in SQL: a million Puts through the store would take minutes.
	if _, err := db.pool.Exec(ctx, `INSERT INTO sy_pairs (bucket, key, value)
		SELECT 1, convert_to('gen-' || lpad(i::text, 12, '0'), 'UTF8'), repeat('x', 300)::bytea
		FROM generate_series(1, $1) AS i`, n); err != nil {
		b.Fatal(err)
	}
	if _, err := db.pool.Exec(ctx, "ANALYZE sy_pairs"); err != nil {
		b.Fatal(err)
	}
	read := func(b *testing.B, fn func(c Cursor) int) {
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			got := 0
			if err := db.View(func(tx Tx) error {
				got = fn(tx.Bucket([]byte("generations")).Cursor())
				return nil
			}); err != nil || got != 50 {
				b.Fatal(got, err)
			}
		}
	}
	b.Run("seek+50", func(b *testing.B) {
		i := 0
		read(b, func(c Cursor) int {
			i = (i + 7919) % (n - 100)
			got := 0
			for k, _ := c.Seek(fmt.Appendf(nil, "gen-%012d", i+1)); k != nil && got < 50; k, _ = c.Next() {
				got++
			}
			return got
		})
	})
	b.Run("newest50", func(b *testing.B) {
		read(b, func(c Cursor) int {
			got := 0
			for k, _ := c.Last(); k != nil && got < 50; k, _ = c.Prev() {
				got++
			}
			return got
		})
	})
}
