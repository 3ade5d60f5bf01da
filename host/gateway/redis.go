package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	neturl "net/url"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/switchyard/switchyard/host/ratelimit"
	"github.com/switchyard/switchyard/host/route/shared"
)

// openRedis connects to the configuration's Redis (redis.url), where rate
// limits (ratelimit.Redis) and sticky sessions (shared.Sessions) are
// shared by the instances (docs/cluster.md). Without redis.url nothing is
// opened and both stay in the process. A Redis that does not answer at
// start is logged, not fatal: both fall back per instance until it answers.
func (g *Gateway) openRedis() error {
	if g.Config.Redis.URL == "" {
		return nil
	}
	url, err := g.Config.Redis.ResolvedURL(os.Getenv)
	if err != nil {
		return err
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		// A *url.Error quotes the whole URL, password included.
		var ue *neturl.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("config: redis.url: %w (want redis://[user:password@]host:port/db)", err)
	}
	// Every call on the request path has its own deadline; a dead Redis
	// must cost a refused connection or a short timeout, not the client's
	// defaults (5 s to dial, 3 s to read).
	opt.ContextTimeoutEnabled = true
	opt.DialerRetries = 1 // not five dials 100 ms apart: the fallback is there
	opt.DialTimeout = min(opt.DialTimeout, time.Second)
	if opt.DialTimeout <= 0 {
		opt.DialTimeout = time.Second
	}
	redisLogOnce.Do(func() { redis.SetLogger(debugLog{}) })
	c := redis.NewClient(opt)
	g.closers = append(g.closers, func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		g.log.Warn("redis: not answering at start; rate limits and sticky sessions are per instance until it does", "addr", opt.Addr, "err", err)
	} else {
		g.log.Info("redis: rate limits and sticky sessions are shared", "addr", opt.Addr)
	}
	g.redisLimiter = ratelimit.NewRedis(c, ratelimit.RedisOptions{
		// No request outlives timeouts.request: a slot held longer
		// belongs to an instance that died.
		Lease:   time.Duration(g.Config.Timeouts.Request) + time.Minute,
		Timeout: time.Duration(g.Config.Redis.Timeout),
		Log:     g.log,
	})
	g.redisSessions = shared.New(c, shared.Options{Timeout: time.Duration(g.Config.Redis.Timeout), Log: g.log})
	return nil
}

// redisLogOnce routes the client's own log lines (one per failed dial
// while Redis is down) to the process's slog at debug level: the limiter
// and the session store log the outage once each way themselves. The
// client's logger is global, hence once per process.
var redisLogOnce sync.Once

type debugLog struct{}

func (debugLog) Printf(ctx context.Context, format string, v ...any) {
	slog.Default().DebugContext(ctx, "redis client: "+fmt.Sprintf(format, v...))
}

// limiter is the rate limiter for server.Deps: nil (the server's in-memory
// default) without Redis.
func (g *Gateway) limiter() ratelimit.Limiter {
	if g.redisLimiter == nil {
		return nil
	}
	return g.redisLimiter
}

// redisMetrics counts the fallbacks to per-instance state on reg.
func (g *Gateway) redisMetrics(reg *prometheus.Registry) {
	if g.redisLimiter == nil {
		return
	}
	l, s := g.redisLimiter, g.redisSessions
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "switchyard_ratelimit_fallback_total",
		Help: "Admissions decided by the instance's own limiter because Redis was unreachable (limits then hold per instance)."},
		func() float64 { return float64(l.Fallbacks()) }))
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "switchyard_sticky_session_redis_errors_total",
		Help: "Sticky-session lookups and pins that failed to reach Redis (the instance's own sessions were used)."},
		func() float64 { return float64(s.Failures()) }))
}
