package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Postgres is the shared store: any number of gateways on one PostgreSQL
// database (docs/cluster.md).
//
// Round trips are its cost, so a transaction spends as few as it can:
// BEGIN (and, for an Update, the advisory lock) travels in the same
// pipeline as the transaction's first statement; Put and Delete are
// buffered and travel with the next statement that reads something they
// could change, or with the COMMIT; a Get of a key written earlier in the
// transaction is answered from the buffer; cursors read pages of rows; a
// caller that knows what it will read fetches it all in one round trip
// (Prefetch: billing's writer, for a whole group of settlements); runs of
// buffered puts or deletes travel as one statement each.
// An Update that reads one key and writes one is two round trips; a View
// that reads one key is two (the second is its COMMIT).
type Postgres struct {
	pool *pgxpool.Pool
	opts PostgresOptions
	subs
	lis    *listener
	bcache bucketCache
	trips  atomic.Int64
}

var _ DB = (*Postgres)(nil)

// RoundTrips counts the pipelines sent to the server since the store
// opened (transactions' statements; not the listener's), for tests and
// benchmarks that check a change spends fewer.
func (p *Postgres) RoundTrips() int64 { return p.trips.Load() }

// PostgresOptions tunes OpenPostgres; the zero value is the default.
type PostgresOptions struct {
	// MaxConns bounds the connection pool (default 16). An Update holds
	// its connection while it waits for the write lock.
	MaxConns int32
	// Timeout bounds each round trip, the wait for the write lock and for
	// a pooled connection included (default 10 s). Past it the
	// transaction fails with ErrUnavailable.
	Timeout time.Duration
}

// updateLockKey is the advisory lock that serialises Update transactions
// across every process on the database, as bbolt's single writer does in
// one process: callers do read-modify-write and their functions cannot be
// re-run, so serialization failures (and retries) are not an option.
const updateLockKey = 0x5359_5550_4454 // "SYUPDT"

// A cursor's first page is pageSize rows (most cursors read a few keys);
// each further page of the same cursor doubles, up to maxPageSize (a scan
// of a big bucket spends fewer round trips).
const (
	pageSize    = 128
	maxPageSize = 2048
)

// maxCachedBuckets bounds the bucket-id cache.
const maxCachedBuckets = 100000

// maxPending bounds the writes a transaction buffers before it sends them.
const maxPending = 1000

// OpenPostgres connects to the database at dsn, migrates its schema
// (Migrate) and starts the listener that delivers notifications.
func OpenPostgres(ctx context.Context, dsn string, opts PostgresOptions) (*Postgres, error) {
	if opts.MaxConns <= 0 {
		opts.MaxConns = 16
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("store: postgres dsn: %w", err)
	}
	cfg.MaxConns = opts.MaxConns
	// Every statement of this store is a primary-key lookup or a range
	// scan of the primary key in key order. Without statistics (a fresh
	// or fast-growing table) the planner prefers a bitmap scan and a sort,
	// which reads the whole rest of a bucket to return a 128-row page:
	// a disaster on a million generation records. Steer it to the index.
	cfg.ConnConfig.RuntimeParams["enable_bitmapscan"] = "off"
	cfg.ConnConfig.RuntimeParams["enable_sort"] = "off"
	// A pooled connection idle for a while may have lost its server (a
	// restart): ping it before handing it out rather than fail a
	// transaction on it.
	cfg.ShouldPing = func(_ context.Context, p pgxpool.ShouldPingParams) bool { return p.IdleDuration > time.Second }
	cfg.PingTimeout = opts.Timeout
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store: postgres: %w", err)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		pool.Close()
		return nil, classify(fmt.Errorf("store: connect to postgres: %w", err))
	}
	_, err = migrate(ctx, conn.Conn())
	conn.Release()
	if err != nil {
		pool.Close()
		return nil, err
	}
	p := &Postgres{pool: pool, opts: opts}
	lcfg := cfg.ConnConfig.Copy()
	// The listener only reads: a connection that died silently (a
	// partition, not a shutdown) shows only through keepalive. Probe
	// after 10 s of silence, give up after 3 unanswered probes 5 s apart.
	lcfg.DialFunc = (&net.Dialer{
		Timeout:         opts.Timeout,
		KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: 10 * time.Second, Interval: 5 * time.Second, Count: 3},
	}).DialContext
	p.lis = startListener(lcfg, &p.subs, opts.Timeout)
	return p, nil
}

// Kind implements DB.
func (p *Postgres) Kind() string { return "postgres" }

// Shared implements DB.
func (p *Postgres) Shared() bool { return true }

// Close implements DB.
func (p *Postgres) Close() error {
	p.lis.stop()
	p.pool.Close()
	return nil
}

// Pool returns the connection pool, for tools (syctl) and tests.
func (p *Postgres) Pool() *pgxpool.Pool { return p.pool }

// Subscribe implements DB: the listener LISTENs on the topic's channel
// before Subscribe returns (unless it is reconnecting, in which case it
// delivers Resync once it is back).
func (p *Postgres) Subscribe(topic string, fn func(string)) func() {
	cancel := p.subs.Subscribe(topic, fn)
	p.lis.listen(topic)
	return cancel
}

// View implements DB: a REPEATABLE READ READ ONLY transaction, one
// snapshot for all its reads.
func (p *Postgres) View(fn func(Tx) error) error { return p.run(false, fn) }

// Update implements DB.
func (p *Postgres) Update(fn func(Tx) error) error { return p.run(true, fn) }

func (p *Postgres) run(writable bool, fn func(Tx) error) error {
	t := p.newTx(writable)
	ended := false
	defer func() {
		if !ended && t.conn != nil {
			// fn panicked: the connection is still inside the
			// transaction, so the pool destroys it (the server rolls
			// back) rather than hand it out again.
			t.conn.Release()
		}
	}()
	err := fn(t)
	ended = true
	return t.end(err)
}

func (p *Postgres) newTx(writable bool) *pgTx {
	return &pgTx{db: p, writable: writable, overlay: map[string][]byte{}, buckets: map[bkey]int64{}}
}

// bkey names a bucket by its parent's id and its name.
type bkey struct {
	parent int64
	name   string
}

// bucketCache keeps bucket ids across transactions, valid for one value
// of sy_meta.epoch (which every bucket deletion bumps). A transaction that
// used a cached id before it had read the epoch checks the ids again if
// the epoch moved.
type bucketCache struct {
	mu    sync.Mutex
	epoch int64
	ids   map[bkey]int64
}

func (c *bucketCache) get(k bkey) (id int64, epoch int64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id, ok = c.ids[k]
	return id, c.epoch, ok
}

// merge records what a transaction that saw epoch learned.
func (c *bucketCache) merge(epoch int64, ids map[bkey]int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case epoch < c.epoch:
		return
	case epoch > c.epoch || c.ids == nil:
		c.epoch, c.ids = epoch, map[bkey]int64{}
	}
	// Bounded: accounts' nested buckets could make it grow without end;
	// starting over costs one lookup per bucket.
	if len(c.ids)+len(ids) > maxCachedBuckets {
		c.ids = map[bkey]int64{}
	}
	for k, id := range ids {
		c.ids[k] = id
	}
}

func (c *bucketCache) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ids = nil
}

// pgTx is one transaction: a pooled connection, taken at its first
// statement.
type pgTx struct {
	db       *Postgres
	writable bool
	conn     *pgxpool.Conn
	begun    bool
	// err is the first failure; every later read returns nil and every
	// write returns it.
	err error
	// ops are the buffered writes, in order.
	ops []op
	// overlay holds the buffered value (nil: deleted) of every key the
	// transaction wrote, by bucket id and key, so Get reads its writes
	// without a round trip.
	overlay map[string][]byte
	// fetched holds values read ahead by Prefetch (nil: absent), by the
	// same key as overlay; overlay wins.
	fetched map[string][]byte
	// gen counts writes; a cursor whose page predates a write refetches.
	gen uint64
	// buckets are the ids this transaction found or created.
	buckets map[bkey]int64
	// unverified are ids taken from the cache before epoch was read, with
	// the epoch the cache had then.
	unverified  []int64
	cachedEpoch int64
	epoch       int64
	// deleted: the transaction deleted a bucket; the cache is not used.
	deleted bool
}

type op struct {
	sql  string
	args []any
}

const (
	sqlBeginView   = `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`
	sqlBeginUpdate = `BEGIN ISOLATION LEVEL READ COMMITTED`
	sqlLock        = `SELECT pg_advisory_xact_lock($1)`
	sqlEpoch       = `SELECT epoch FROM sy_meta`
	sqlGet         = `SELECT value FROM sy_pairs WHERE bucket = $1 AND key = $2`
	sqlGetMany     = `SELECT p.bucket, p.key, p.value FROM unnest($1::bigint[], $2::bytea[]) AS r (bucket, key)
		JOIN sy_pairs p ON p.bucket = r.bucket AND p.key = r.key`
	sqlPut = `INSERT INTO sy_pairs (bucket, key, value) VALUES ($1, $2, $3)
		ON CONFLICT (bucket, key) DO UPDATE SET value = CASE WHEN sy_pairs.value IS NULL THEN sy_incompatible() ELSE EXCLUDED.value END`
	sqlDelete       = `DELETE FROM sy_pairs WHERE bucket = $1 AND key = $2 AND value IS NOT NULL`
	sqlBucket       = `SELECT id FROM sy_buckets WHERE parent = $1 AND name = $2`
	sqlBucketsExist = `SELECT count(*) FROM sy_buckets WHERE id = ANY($1)`
	sqlIsValue      = `SELECT EXISTS (SELECT 1 FROM sy_pairs WHERE bucket = $1 AND key = $2 AND value IS NOT NULL)`
	sqlCreate       = `WITH b AS (INSERT INTO sy_buckets (parent, name) VALUES ($1, $2) RETURNING id),
		m AS (INSERT INTO sy_pairs (bucket, key, value) VALUES ($1, $2, NULL))
		SELECT id FROM b`
	sqlDropBucket = `DELETE FROM sy_buckets WHERE id = $1`
	sqlDropMarker = `DELETE FROM sy_pairs WHERE bucket = $1 AND key = $2 AND value IS NULL`
	sqlBumpEpoch  = `UPDATE sy_meta SET epoch = epoch + 1`
	sqlNotify     = `SELECT pg_notify($1, $2)`
	sqlFirst      = `SELECT key, value FROM sy_pairs WHERE bucket = $1 AND key >= $2 ORDER BY key LIMIT $3`
	sqlAfter      = `SELECT key, value FROM sy_pairs WHERE bucket = $1 AND key > $2 ORDER BY key LIMIT $3`
	sqlLast       = `SELECT key, value FROM sy_pairs WHERE bucket = $1 ORDER BY key DESC LIMIT $2`
	sqlBefore     = `SELECT key, value FROM sy_pairs WHERE bucket = $1 AND key < $2 ORDER BY key DESC LIMIT $3`
	sqlKeyN       = `WITH RECURSIVE d (id) AS (
			SELECT $1::bigint
			UNION ALL SELECT b.id FROM sy_buckets b JOIN d ON b.parent = d.id WHERE b.id <> b.parent)
		SELECT count(*) FROM sy_pairs WHERE bucket IN (SELECT id FROM d)`
)

// sqlDeleteMany is a run of sqlDelete in one statement.
const sqlDeleteMany = `DELETE FROM sy_pairs p USING unnest($1::bigint[], $2::bytea[]) AS r (bucket, key)
	WHERE p.bucket = r.bucket AND p.key = r.key AND p.value IS NOT NULL`

// minDeleteRun is the shortest run of deletes sent as one statement: a
// lone delete (a settlement's hold) keeps its own simple plan.
const minDeleteRun = 8

// sqlPutMany is a run of sqlPut in one statement; its keys are distinct
// (ON CONFLICT cannot update a row twice in one statement).
const sqlPutMany = `INSERT INTO sy_pairs (bucket, key, value)
	SELECT * FROM unnest($1::bigint[], $2::bytea[], $3::bytea[])
	ON CONFLICT (bucket, key) DO UPDATE SET value = CASE WHEN sy_pairs.value IS NULL THEN sy_incompatible() ELSE EXCLUDED.value END`

// queueOps queues the buffered writes: each run of at least minDeleteRun
// deletes as one statement, and each run of two or more puts as one —
// after dropping a put that a later put in the run overwrites — since
// writes to distinct keys commute. A bulk delete (pruning old records,
// host/billing/prune.go) then costs the server one statement instead of
// one per key (a batch of 4000 deleted keys: about 45 ms → 10 ms), and a
// group of settlements (billing's writer: account, key, leases, record,
// activity rows, each) a few statements instead of ten per settlement.
func queueOps(b *pgx.Batch, ops []op) {
	for i := 0; i < len(ops); {
		// ops[i:j] is a run of one kind of statement.
		j := i + 1
		for j < len(ops) && ops[j].sql == ops[i].sql {
			j++
		}
		switch run := ops[i:j]; {
		case run[0].sql == sqlPut && len(run) >= 2:
			queuePuts(b, run)
		case run[0].sql == sqlDelete && len(run) >= minDeleteRun:
			queueDeletes(b, run)
		default:
			for _, o := range run {
				b.Queue(o.sql, o.args...)
			}
		}
		i = j
	}
}

// queueDeletes queues a run of deletes as one statement.
func queueDeletes(b *pgx.Batch, run []op) {
	ids := make([]int64, 0, len(run))
	keys := make([][]byte, 0, len(run))
	for _, o := range run {
		ids = append(ids, o.args[0].(int64))
		keys = append(keys, o.args[1].([]byte))
	}
	b.Queue(sqlDeleteMany, ids, keys)
}

// queuePuts queues a run of puts as one statement, the last put of each
// key only.
func queuePuts(b *pgx.Batch, run []op) {
	ids := make([]int64, 0, len(run))
	keys := make([][]byte, 0, len(run))
	vals := make([][]byte, 0, len(run))
	overwritten := overwrittenPuts(run)
	for i, o := range run {
		if overwritten != nil && overwritten[i] {
			continue
		}
		ids = append(ids, o.args[0].(int64))
		keys = append(keys, o.args[1].([]byte))
		vals = append(vals, o.args[2].([]byte)) // never nil: Put stores nil as empty
	}
	b.Queue(sqlPutMany, ids, keys, vals)
}

// overwrittenPuts marks the puts of run that a later put of the same key
// overwrites (nil: none). Runs are short (a settlement writes about ten
// keys), so a scan without allocations beats a map until they are not.
func overwrittenPuts(run []op) []bool {
	var out []bool
	same := func(a, b op) bool {
		return a.args[0].(int64) == b.args[0].(int64) && bytes.Equal(a.args[1].([]byte), b.args[1].([]byte))
	}
	if len(run) <= 64 {
		for i := range run {
			for j := i + 1; j < len(run); j++ {
				if same(run[i], run[j]) {
					if out == nil {
						out = make([]bool, len(run))
					}
					out[i] = true
					break
				}
			}
		}
		return out
	}
	last := make(map[string]int, len(run))
	for i, o := range run {
		last[overlayKey(o.args[0].(int64), o.args[1].([]byte))] = i
	}
	if len(last) == len(run) {
		return nil
	}
	out = make([]bool, len(run))
	for i, o := range run {
		out[i] = last[overlayKey(o.args[0].(int64), o.args[1].([]byte))] != i
	}
	return out
}

// errIncompatible is PostgreSQL's refusal to Put a value on a key that
// names a nested bucket (sy_incompatible, SQLSTATE SY001).
var errIncompatible = errors.New("store: the key names a nested bucket, not a value")

// classify wraps err in ErrUnavailable when the store could not be
// reached or did not answer; a statement the server refused is a bug or a
// conflict, not an outage, and stays as it is.
func classify(err error) error {
	if err == nil || errors.Is(err, ErrUnavailable) {
		return err
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code == "SY001":
			return fmt.Errorf("%w: %w", errIncompatible, err)
		case len(pgErr.Code) >= 2 && (pgErr.Code[:2] == "08" || // connection exception
			pgErr.Code[:2] == "53" || // insufficient resources (too many connections)
			pgErr.Code[:2] == "57" || // operator intervention: shutdown, query cancelled
			pgErr.Code[:2] == "58"): // system error (I/O)
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		return err
	}
	// Anything else happened on the way: a refused or lost connection, a
	// timeout, a pool that could not connect.
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}

// fail records the transaction's first failure.
func (t *pgTx) fail(err error) error {
	if t.err == nil {
		t.err = classify(err)
		if errors.Is(t.err, ErrUnavailable) {
			// The server went away or stopped answering: the pool's
			// idle connections are likely dead too; drop them all
			// rather than fail one transaction on each.
			t.db.pool.Reset()
		}
	}
	return t.err
}

// send runs one round trip: BEGIN (and the lock) if the transaction has
// not begun, the buffered writes, then whatever add queues.
func (t *pgTx) send(add func(b *pgx.Batch)) error {
	if t.err != nil {
		return t.err
	}
	ctx, cancel := context.WithTimeout(context.Background(), t.db.opts.Timeout)
	defer cancel()
	if t.conn == nil {
		c, err := t.db.pool.Acquire(ctx)
		if err != nil {
			return t.fail(fmt.Errorf("store: postgres connection: %w", err))
		}
		t.conn = c
	}
	b := &pgx.Batch{}
	first := !t.begun
	if first {
		if t.writable {
			b.Queue(sqlBeginUpdate)
			b.Queue(sqlLock, int64(updateLockKey))
		} else {
			b.Queue(sqlBeginView)
		}
		b.Queue(sqlEpoch).QueryRow(func(r pgx.Row) error { return r.Scan(&t.epoch) })
		t.begun = true
	}
	queueOps(b, t.ops)
	t.ops = t.ops[:0]
	if add != nil {
		add(b)
	}
	t.db.trips.Add(1)
	if err := t.conn.SendBatch(ctx, b).Close(); err != nil {
		return t.fail(fmt.Errorf("store: postgres: %w", err))
	}
	if first && len(t.unverified) > 0 && t.epoch != t.cachedEpoch {
		// A bucket was deleted somewhere since the cache was filled: the
		// ids handed out must still exist.
		ids := t.unverified
		t.unverified = nil
		var n int
		t.db.trips.Add(1)
		if err := t.conn.QueryRow(ctx, sqlBucketsExist, ids).Scan(&n); err != nil {
			return t.fail(fmt.Errorf("store: postgres: %w", err))
		}
		if n != len(ids) {
			// A bucket this transaction holds was deleted (by another
			// instance) before it began. A View read it as the empty
			// bucket it now is; an Update must not write into it (the
			// foreign key would refuse anyway) and fails.
			t.db.bcache.reset()
			t.deleted = true
			if t.writable {
				return t.fail(fmt.Errorf("%w: deleted by another instance as the transaction began; try again", ErrBucketNotFound))
			}
		}
	}
	return nil
}

// end commits (Update, fn succeeded) or ends the transaction and returns
// its connection.
func (t *pgTx) end(fnErr error) (err error) {
	defer func() {
		if t.conn != nil {
			// A connection left inside a transaction (a failed COMMIT
			// or ROLLBACK) is destroyed by the pool, never reused.
			t.conn.Release()
			t.conn = nil
		}
	}()
	commit := t.writable && fnErr == nil && t.err == nil
	switch {
	case commit && (t.begun || len(t.ops) > 0):
		var tag pgconn.CommandTag
		if err := t.send(func(b *pgx.Batch) {
			b.Queue("COMMIT").Exec(func(ct pgconn.CommandTag) error { tag = ct; return nil })
		}); err != nil {
			t.rollback()
			return err
		}
		if tag.String() != "COMMIT" {
			return t.fail(fmt.Errorf("store: postgres: commit answered %q", tag.String()))
		}
	case commit || !t.begun:
	case t.err == nil && !t.writable:
		// A read-only transaction that went well: COMMIT and ROLLBACK
		// cost the same.
		t.rollback()
	default:
		t.rollback()
	}
	if t.err != nil {
		return t.err
	}
	if fnErr != nil {
		return fnErr
	}
	if t.begun {
		if t.deleted {
			t.db.bcache.reset()
		} else {
			t.db.bcache.merge(t.epoch, t.buckets)
		}
	}
	return nil
}

func (t *pgTx) rollback() {
	if t.conn == nil || !t.begun {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), t.db.opts.Timeout)
	defer cancel()
	t.db.trips.Add(1)
	if _, err := t.conn.Exec(ctx, "ROLLBACK"); err != nil {
		t.fail(fmt.Errorf("store: postgres: rollback: %w", err))
	}
}

// write buffers a write, sending the buffer when it is full.
func (t *pgTx) write(sql string, args ...any) error {
	if t.err != nil {
		return t.err
	}
	if !t.writable {
		return ErrTxNotWritable
	}
	t.ops = append(t.ops, op{sql, args})
	t.gen++
	if len(t.ops) >= maxPending {
		return t.send(nil)
	}
	return nil
}

// Prefetch reads refs in one round trip (with BEGIN and the lock when it
// is the transaction's first statement); see store.Prefetcher.
func (t *pgTx) Prefetch(refs []Ref) {
	if t.err != nil {
		return
	}
	ids := make([]int64, 0, len(refs))
	keys := make([][]byte, 0, len(refs))
	var want []string
	for _, r := range refs {
		id, ok := t.lookup(0, r.Bucket)
		if !ok {
			continue
		}
		k := overlayKey(id, r.Key)
		if _, hit := t.overlay[k]; hit {
			continue
		}
		if _, hit := t.fetched[k]; hit {
			continue
		}
		ids = append(ids, id)
		keys = append(keys, r.Key)
		want = append(want, k)
	}
	if len(ids) == 0 {
		return
	}
	got := make(map[string][]byte, len(ids))
	err := t.send(func(b *pgx.Batch) {
		b.Queue(sqlGetMany, ids, keys).Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var id int64
				var k, v []byte
				if err := rows.Scan(&id, &k, &v); err != nil {
					return err
				}
				got[overlayKey(id, k)] = v
			}
			return rows.Err()
		})
	})
	if err != nil {
		return
	}
	if t.fetched == nil {
		t.fetched = make(map[string][]byte, len(want))
	}
	for _, k := range want {
		t.fetched[k] = got[k] // nil when absent
	}
}

func overlayKey(bucket int64, k []byte) string {
	b := make([]byte, 8, 8+len(k))
	binary.BigEndian.PutUint64(b, uint64(bucket))
	return string(append(b, k...))
}

// lookup finds the nested bucket name of parent.
func (t *pgTx) lookup(parent int64, name []byte) (int64, bool) {
	if t.err != nil {
		return 0, false
	}
	k := bkey{parent, string(name)}
	if id, ok := t.buckets[k]; ok {
		return id, true
	}
	if !t.deleted {
		if id, epoch, ok := t.db.bcache.get(k); ok {
			if !t.begun {
				if len(t.unverified) == 0 {
					t.cachedEpoch = epoch
				}
				if epoch == t.cachedEpoch {
					t.unverified = append(t.unverified, id)
					t.buckets[k] = id
					return id, true
				}
			} else if epoch == t.epoch {
				t.buckets[k] = id
				return id, true
			}
		}
	}
	var id int64
	found := false
	err := t.send(func(b *pgx.Batch) {
		b.Queue(sqlBucket, parent, name).Query(func(rows pgx.Rows) error {
			for rows.Next() {
				found = true
				if err := rows.Scan(&id); err != nil {
					return err
				}
			}
			return rows.Err()
		})
	})
	if err != nil || !found {
		return 0, false
	}
	t.buckets[k] = id
	return id, true
}

func (t *pgTx) create(parent int64, name []byte) (Bucket, error) {
	if t.err != nil {
		return nil, t.err
	}
	if !t.writable {
		return nil, ErrTxNotWritable
	}
	if len(name) == 0 {
		return nil, ErrKeyRequired
	}
	if len(name) > MaxKeySize {
		return nil, ErrKeyTooLarge
	}
	if id, ok := t.lookup(parent, name); ok {
		return &pgBucket{t, id}, nil
	}
	if t.err != nil {
		return nil, t.err
	}
	var isValue bool
	var id int64
	name = clone(name)
	err := t.send(func(b *pgx.Batch) {
		b.Queue(sqlIsValue, parent, name).QueryRow(func(r pgx.Row) error { return r.Scan(&isValue) })
	})
	if err != nil {
		return nil, err
	}
	if isValue {
		return nil, fmt.Errorf("store: create bucket %q: %w", name, errIncompatible)
	}
	if err := t.send(func(b *pgx.Batch) {
		b.Queue(sqlCreate, parent, name).QueryRow(func(r pgx.Row) error { return r.Scan(&id) })
	}); err != nil {
		return nil, err
	}
	t.gen++
	t.buckets[bkey{parent, string(name)}] = id
	return &pgBucket{t, id}, nil
}

func (t *pgTx) drop(parent int64, name []byte) error {
	if t.err != nil {
		return t.err
	}
	if !t.writable {
		return ErrTxNotWritable
	}
	id, ok := t.lookup(parent, name)
	if !ok {
		if t.err != nil {
			return t.err
		}
		return ErrBucketNotFound
	}
	// Buckets and pairs below it go by cascade; the epoch tells every
	// instance's cache.
	if err := t.write(sqlDropBucket, id); err != nil {
		return err
	}
	if err := t.write(sqlDropMarker, parent, clone(name)); err != nil {
		return err
	}
	if err := t.write(sqlBumpEpoch); err != nil {
		return err
	}
	t.deleted = true
	t.buckets = map[bkey]int64{}
	return nil
}

func clone(b []byte) []byte { return append(make([]byte, 0, len(b)), b...) }

// Tx methods: the root bucket (id 0) holds the top-level buckets.

func (t *pgTx) Bucket(name []byte) Bucket { return (&pgBucket{t, 0}).Bucket(name) }
func (t *pgTx) CreateBucketIfNotExists(name []byte) (Bucket, error) {
	return t.create(0, name)
}
func (t *pgTx) DeleteBucket(name []byte) error { return t.drop(0, name) }
func (t *pgTx) Writable() bool                 { return t.writable }

func (t *pgTx) Notify(topic, payload string) error {
	if !t.writable {
		return ErrTxNotWritable
	}
	if len(payload) > MaxNotifyPayload {
		return fmt.Errorf("store: notification payload of %d bytes (at most %d)", len(payload), MaxNotifyPayload)
	}
	if err := t.write(sqlNotify, channelOf(topic), payload); err != nil {
		return err
	}
	// A notification changes no key: cursors' pages stay valid.
	t.gen--
	return nil
}

type pgBucket struct {
	t  *pgTx
	id int64
}

func (b *pgBucket) Get(k []byte) []byte {
	t := b.t
	if t.err != nil {
		return nil
	}
	ok := overlayKey(b.id, k)
	if v, hit := t.overlay[ok]; hit {
		return v
	}
	if v, hit := t.fetched[ok]; hit {
		return v
	}
	var v []byte
	_ = t.send(func(bt *pgx.Batch) {
		bt.Queue(sqlGet, b.id, k).Query(func(rows pgx.Rows) error {
			for rows.Next() {
				if err := rows.Scan(&v); err != nil {
					return err
				}
			}
			return rows.Err()
		})
	})
	if t.err != nil {
		return nil
	}
	return v
}

func checkKey(k []byte) error {
	switch {
	case len(k) == 0:
		return ErrKeyRequired
	case len(k) > MaxKeySize:
		return ErrKeyTooLarge
	}
	return nil
}

func (b *pgBucket) Put(k, v []byte) error {
	if err := checkKey(k); err != nil {
		return err
	}
	k, v = clone(k), clone(v)
	if err := b.t.write(sqlPut, b.id, k, v); err != nil {
		return err
	}
	b.t.overlay[overlayKey(b.id, k)] = v
	return nil
}

func (b *pgBucket) Delete(k []byte) error {
	if err := checkKey(k); err != nil {
		return err
	}
	k = clone(k)
	if err := b.t.write(sqlDelete, b.id, k); err != nil {
		return err
	}
	b.t.overlay[overlayKey(b.id, k)] = nil
	return nil
}

func (b *pgBucket) Cursor() Cursor { return &pgCursor{b: b} }

func (b *pgBucket) ForEach(fn func(k, v []byte) error) error {
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if err := fn(k, v); err != nil {
			return err
		}
	}
	return b.t.err
}

func (b *pgBucket) Bucket(name []byte) Bucket {
	if id, ok := b.t.lookup(b.id, name); ok {
		return &pgBucket{b.t, id}
	}
	if b.t.err != nil {
		// The transaction failed: the bucket may well exist. Callers rely
		// on their buckets existing (created at start), so answer with one
		// whose reads are nil and whose writes fail with the transaction's
		// error, never with a nil that would be dereferenced.
		return &pgBucket{b.t, -1}
	}
	return nil
}

func (b *pgBucket) CreateBucketIfNotExists(name []byte) (Bucket, error) {
	return b.t.create(b.id, name)
}

func (b *pgBucket) DeleteBucket(name []byte) error { return b.t.drop(b.id, name) }

func (b *pgBucket) KeyN() int {
	var n int
	_ = b.t.send(func(bt *pgx.Batch) {
		bt.Queue(sqlKeyN, b.id).QueryRow(func(r pgx.Row) error { return r.Scan(&n) })
	})
	return n
}

func (b *pgBucket) SetFillPercent(float64) {}

// pgCursor walks a bucket a page at a time. Its page is a run of rows in
// one direction (ascending for First, Seek and Next, descending for Last
// and Prev) and i its position in it; a page fetched before a write of the
// transaction is refetched from the cursor's key.
type pgCursor struct {
	b    *pgBucket
	rows []pair
	i    int
	desc bool
	// end: nothing lies beyond the page in its direction.
	end bool
	gen uint64
	// size is the next page's size.
	size int
	// off: the last move went past an end (+1: past the last key, -1:
	// before the first). As in bbolt, Prev past the end lands on the
	// last key (the "Seek beyond, then Prev" idiom of newest-first
	// listings), and Next before the start on the first.
	off int
}

type pair struct{ k, v []byte }

func (c *pgCursor) fetch(sql string, args []any, desc bool) (k, v []byte) {
	t := c.b.t
	if c.size == 0 {
		c.size = pageSize
	}
	size := c.size
	c.size = min(2*c.size, maxPageSize)
	args = append(args, size)
	c.rows, c.i, c.desc, c.end, c.gen = c.rows[:0], 0, desc, false, t.gen
	_ = t.send(func(b *pgx.Batch) {
		b.Queue(sql, args...).Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var p pair
				if err := rows.Scan(&p.k, &p.v); err != nil {
					return err
				}
				c.rows = append(c.rows, p)
			}
			return rows.Err()
		})
	})
	if t.err != nil {
		c.rows = nil
		return nil, nil
	}
	c.end = len(c.rows) < size
	c.off = 0
	if len(c.rows) == 0 {
		c.off = 1
		if desc {
			c.off = -1
		}
	}
	return c.at()
}

func (c *pgCursor) at() (k, v []byte) {
	if c.i < 0 || c.i >= len(c.rows) {
		return nil, nil
	}
	p := c.rows[c.i]
	return p.k, p.v
}

func (c *pgCursor) First() ([]byte, []byte) {
	c.size = pageSize
	return c.fetch(sqlFirst, []any{c.b.id, []byte{}}, false)
}

func (c *pgCursor) Last() ([]byte, []byte) {
	c.size = pageSize
	return c.fetch(sqlLast, []any{c.b.id}, true)
}

func (c *pgCursor) Seek(k []byte) ([]byte, []byte) {
	c.size = pageSize
	return c.fetch(sqlFirst, []any{c.b.id, clone(k)}, false)
}

// step moves one key forward (fwd) or back.
func (c *pgCursor) step(fwd bool) ([]byte, []byte) {
	cur, _ := c.at()
	if cur == nil {
		switch {
		case c.off == 1 && !fwd:
			return c.Last()
		case c.off == -1 && fwd:
			return c.First()
		}
		return nil, nil
	}
	if c.gen == c.b.t.gen {
		// Within the page: forward is +1 on an ascending page.
		d := 1
		if fwd == c.desc {
			d = -1
		}
		if j := c.i + d; j >= 0 && j < len(c.rows) {
			c.i = j
			return c.at()
		}
		if d == 1 && c.end {
			c.i = len(c.rows)
			c.off = 1
			if c.desc {
				c.off = -1
			}
			return nil, nil
		}
	}
	if fwd {
		return c.fetch(sqlAfter, []any{c.b.id, cur}, false)
	}
	return c.fetch(sqlBefore, []any{c.b.id, cur}, true)
}

func (c *pgCursor) Next() ([]byte, []byte) { return c.step(true) }
func (c *pgCursor) Prev() ([]byte, []byte) { return c.step(false) }

func (c *pgCursor) Delete() error {
	k, v := c.at()
	if k == nil {
		return nil
	}
	if v == nil {
		return fmt.Errorf("store: cursor delete %q: %w", k, errIncompatible)
	}
	fresh := c.gen == c.b.t.gen
	if err := c.b.Delete(k); err != nil {
		return err
	}
	if fresh {
		// Deleting the key the cursor is on leaves the rest of its page
		// as it was.
		c.gen = c.b.t.gen
	}
	return nil
}
