package ratelimit

import (
	"context"
	"errors"
	"github.com/switchyard/switchyard/host/backoff"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is the Limiter shared by every gateway instance that uses one Redis
// (docs/cluster.md, "Rate limits and sticky sessions across instances").
//
// The algorithm is Memory's, with the state in Redis and one Lua script per
// operation, so that each Admit and each Settle is atomic across instances
// (Redis runs a script to its end before any other command):
//
//   - Requests and tokens per minute: GCRA as in Memory. Each subject (a
//     key, an account) is a hash with the theoretical arrival times of its
//     two allowances, in microseconds of Redis's clock, field "r" and "t".
//   - "Now" is Redis TIME read inside the script, never an instance's own
//     clock: instances whose clocks disagree by minutes still share one
//     timeline, and a wall-clock step on an instance changes nothing.
//   - Concurrent requests: a sorted set per subject of the ids of admitted
//     requests scored by a lease expiry (now + Lease). Admission first drops
//     expired members, then counts. Settle removes the request's id. An
//     instance that crashes with requests in flight never settles them: its
//     members age out after Lease instead of blocking the subject forever.
//   - Admission is all-or-nothing over the key and the account, as in
//     Memory: the script checks all six limits and writes only when all pass.
//   - Every key has a TTL: a subject's hash lives until its allowances are
//     whole again plus Lease and a minute (so a Settle still finds it), its
//     set Lease plus a second after its last admission. Idle subjects vanish.
//
// # Tolerance
//
// Across instances the limits are exact: the instances together admit what
// one Memory limiter would (the two-instance tests assert it). The
// differences from Memory are the lease, which frees the slot of a request
// that runs longer than Lease (the gateway sets Lease to timeouts.request
// plus a minute, past which no request runs), and rounding: TATs are whole
// microseconds, rounded up after each charge, so a limit above 60 million per
// minute loses at most a microsecond per request.
//
// # Redis unreachable
//
// When a script fails (Redis down, a timeout), the limiter falls back to its
// own Memory limiter for RetryEvery (default a second) before trying Redis
// again: limits then hold per instance, so N instances admit up to N times
// the limits, never unlimited. The switch is logged once each way and
// counted (Fallbacks, the metric switchyard_ratelimit_fallback_total). A
// request admitted by the fallback is settled there. A script that timed out
// may still have run: such a request's concurrency entry is removed when it
// settles if Redis is back by then, and otherwise ages out with its lease.
type Redis struct {
	c       redis.UniversalClient
	prefix  string
	lease   time.Duration
	timeout time.Duration
	local   *Memory

	// callerClock makes the scripts use the time passed to Admit and
	// Settle instead of Redis TIME: the shared behaviour tests step time.
	callerClock bool

	// backoff: while paused, Admit goes to local without trying Redis.
	backoff   *backoff.Switch
	fallbacks atomic.Uint64
	localIDs  sync.Map // Request.ID → struct{}: admitted by the fallback
}

// RedisOptions tune a Redis limiter; the zero value gives the defaults.
type RedisOptions struct {
	// Prefix starts every key the limiter writes; default "switchyard:rl:".
	Prefix string
	// Lease is how long a request's concurrent slot is held at most
	// (crashed instances); default 11 minutes.
	Lease time.Duration
	// Timeout bounds one script call; default 250ms.
	Timeout time.Duration
	// RetryEvery is how long the limiter stays on its local fallback after
	// a failure before trying Redis again; default 1s.
	RetryEvery time.Duration
	Log        *slog.Logger // default slog.Default()
}

// NewRedis returns a limiter keeping its state in c.
func NewRedis(c redis.UniversalClient, o RedisOptions) *Redis {
	if o.Prefix == "" {
		o.Prefix = "switchyard:rl:"
	}
	if o.Lease <= 0 {
		o.Lease = 11 * time.Minute
	}
	if o.Timeout <= 0 {
		o.Timeout = 250 * time.Millisecond
	}
	if o.RetryEvery <= 0 {
		o.RetryEvery = time.Second
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	return &Redis{c: c, prefix: o.Prefix, lease: o.Lease, timeout: o.Timeout, local: NewMemory(),
		backoff: backoff.New(o.RetryEvery, o.Log,
			"rate limits: Redis unreachable, limiting per instance until it is back",
			"rate limits: Redis reachable again, limits are shared across instances")}
}

var _ Limiter = (*Redis)(nil)

// Fallbacks counts the admissions made by the local fallback.
func (l *Redis) Fallbacks() uint64 { return l.fallbacks.Load() }

// admitScript checks and charges a key and its account.
// KEYS: key hash, account hash, key in-flight set, account in-flight set.
// ARGV: now µs (negative: Redis TIME), key rpm, account rpm, key tpm,
// account tpm, key concurrent, account concurrent, token estimate, request
// id, lease µs.
// Returns {allowed, reason index (1-6, 0 when allowed), wait µs, key
// requests TAT, account requests TAT, now}: the TATs after the charge when
// allowed, as they are otherwise.
var admitScript = redis.NewScript(`
local now = tonumber(ARGV[1])
if now < 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local W = 60000000
local lease = tonumber(ARGV[10])
local tokens = tonumber(ARGV[8])
local lim = {tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])}
local kst = redis.call('HMGET', KEYS[1], 'r', 't')
local ast = redis.call('HMGET', KEYS[2], 'r', 't')
local tat = {tonumber(kst[1]) or 0, tonumber(ast[1]) or 0, tonumber(kst[2]) or 0, tonumber(ast[2]) or 0}
local new = {tat[1], tat[2], tat[3], tat[4]}
local allowed, reason, wait = 1, 0, 0
local function refuse(i, w)
  if allowed == 1 or w > wait then allowed, reason, wait = 0, i, w end
end
for i = 1, 4 do
  local limit = lim[i]
  if limit > 0 then
    local cost = 1
    if i > 2 then cost = tokens end
    if cost > limit then cost = limit end
    local base = tat[i]
    if base < now then base = now end
    new[i] = math.ceil(base + cost * W / limit)
    local over = new[i] - now - W
    if over > 0 then refuse(i, over) end
  end
end
local conc = {tonumber(ARGV[6]), tonumber(ARGV[7])}
for j = 1, 2 do
  if conc[j] > 0 then
    local z = KEYS[j + 2]
    redis.call('ZREMRANGEBYSCORE', z, '-inf', '(' .. string.format('%.0f', now))
    if redis.call('ZCARD', z) >= conc[j] then refuse(j + 4, 1000000) end
  end
end
if allowed == 1 then
  for j = 1, 2 do
    if lim[j] > 0 or lim[j + 2] > 0 then
      local last = math.max(new[j], new[j + 2])
      redis.call('HSET', KEYS[j], 'r', string.format('%.0f', new[j]), 't', string.format('%.0f', new[j + 2]))
      redis.call('PEXPIRE', KEYS[j], math.ceil((math.max(last - now, 0) + lease + W) / 1000))
    end
    if conc[j] > 0 then
      redis.call('ZADD', KEYS[j + 2], string.format('%.0f', now + lease), ARGV[9])
      redis.call('PEXPIRE', KEYS[j + 2], math.ceil(lease / 1000) + 1000)
    end
  end
  return {1, 0, 0, new[1], new[2], now}
end
return {0, reason, wait, tat[1], tat[2], now}
`)

// settleScript ends a request: removes its in-flight entries and moves the
// token TATs from the estimate to the actual count.
// KEYS as admitScript. ARGV: now µs (negative: Redis TIME), key tpm,
// account tpm, estimate, actual, request id, lease µs.
var settleScript = redis.NewScript(`
local now = tonumber(ARGV[1])
if now < 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local W = 60000000
local lease = tonumber(ARGV[7])
local estimate, actual = tonumber(ARGV[4]), tonumber(ARGV[5])
for j = 1, 2 do
  redis.call('ZREM', KEYS[j + 2], ARGV[6])
  local limit = tonumber(ARGV[j + 1])
  if limit > 0 then
    local delta = actual - math.min(estimate, limit)
    if delta ~= 0 then
      local st = redis.call('HMGET', KEYS[j], 'r', 't')
      -- A hash that expired had its allowance whole a minute before now
      -- at least: now - W is the latest its TAT can have been.
      local r = tonumber(st[1]) or 0
      local t = tonumber(st[2]) or (now - W)
      local nt
      if delta > 0 then nt = math.ceil(t + delta * W / limit) else nt = math.max(math.floor(t + delta * W / limit), now) end
      redis.call('HSET', KEYS[j], 't', string.format('%.0f', nt))
      redis.call('PEXPIRE', KEYS[j], math.ceil((math.max(math.max(r, nt) - now, 0) + lease + W) / 1000))
    end
  end
end
return 1
`)

var reasons = [...]Reason{1: KeyRequests, 2: AccountRequests, 3: KeyTokens, 4: AccountTokens, 5: KeyConcurrent, 6: AccountConcurrent}

func (l *Redis) keys(r Request) []string {
	k, a := l.prefix+"k:"+r.Key, l.prefix+"a:"+r.Account
	return []string{k, a, k + ":c", a + ":c"}
}

func (l *Redis) now(at time.Time) int64 {
	if l.callerClock {
		return at.UnixMicro()
	}
	return -1
}

// Admit implements Limiter. r.ID must be unique among the requests in
// flight (the server gives each admission a random id); Settle removes the
// in-flight entry of that id.
func (l *Redis) Admit(at time.Time, r Request) Decision {
	if l.backoff.Paused() {
		return l.admitLocal(at, r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
	defer cancel()
	kl, al := r.KeyLimits, r.AccountLimits
	res, err := admitScript.Run(ctx, l.c, l.keys(r), l.now(at),
		kl.RequestsPerMinute, al.RequestsPerMinute, kl.TokensPerMinute, al.TokensPerMinute,
		kl.Concurrent, al.Concurrent, max(r.TokensEstimate, 0), r.ID, l.lease.Microseconds()).Int64Slice()
	if err == nil && len(res) != 6 {
		err = errors.New("admit script: unexpected reply")
	}
	if err != nil {
		l.backoff.Failed(err)
		return l.admitLocal(at, r)
	}
	l.backoff.OK()
	d := Decision{Allowed: res[0] == 1}
	if !d.Allowed {
		if i := res[1]; i > 0 && i < int64(len(reasons)) {
			d.Reason = reasons[i]
		}
		d.RetryAfter = time.Duration(res[2]) * time.Microsecond
	}
	now := res[5] * 1000
	d.Limit, d.Remaining, d.Reset = report(d, now, res[3]*1000, res[4]*1000, r)
	return d
}

func (l *Redis) admitLocal(at time.Time, r Request) Decision {
	l.fallbacks.Add(1)
	d := l.local.Admit(at, r)
	if d.Allowed {
		l.localIDs.Store(r.ID, struct{}{})
	}
	return d
}

// Settle implements Limiter.
func (l *Redis) Settle(at time.Time, r Request, actualTokens int64) {
	if _, ok := l.localIDs.LoadAndDelete(r.ID); ok {
		l.local.Settle(at, r, actualTokens)
		if l.backoff.Paused() {
			return
		}
		// The admission that failed over may have reached Redis: drop its
		// in-flight entries there, correcting no tokens.
		actualTokens, r.KeyLimits.TokensPerMinute, r.AccountLimits.TokensPerMinute = 0, 0, 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
	defer cancel()
	err := settleScript.Run(ctx, l.c, l.keys(r), l.now(at), r.KeyLimits.TokensPerMinute, r.AccountLimits.TokensPerMinute,
		max(r.TokensEstimate, 0), max(actualTokens, 0), r.ID, l.lease.Microseconds()).Err()
	if err != nil {
		// The slot ages out with its lease; the token correction is lost.
		l.backoff.Failed(err)
	}
}

// report picks the requests-per-minute allowance for the headers: the one
// that refused, else the one with fewer requests left. TATs and now are in
// nanoseconds of the limiter's timeline.
func report(d Decision, now, kTAT, aTAT int64, r Request) (limit, left int64, reset time.Duration) {
	kl, al := r.KeyLimits.RequestsPerMinute, r.AccountLimits.RequestsPerMinute
	var kLeft, aLeft int64
	var kReset, aReset time.Duration
	if kl > 0 {
		kLeft, kReset = remaining(kTAT, now, kl)
	}
	if al > 0 {
		aLeft, aReset = remaining(aTAT, now, al)
	}
	switch {
	case d.Reason == KeyRequests || (kl > 0 && d.Reason != AccountRequests && (al <= 0 || kLeft <= aLeft)):
		return kl, kLeft, kReset
	case al > 0:
		return al, aLeft, aReset
	}
	return 0, 0, 0
}
