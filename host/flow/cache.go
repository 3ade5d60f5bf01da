package flow

import (
	"net/http"

	"github.com/switchyard/switchyard/abi/manifest"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/telemetry"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// A response cache (a plugin declaring manifest.RoleCache: the first party's
// is plugins/response-cache, docs/response-cache.md) answers a repeated request with a stored result (pre_request respond) and
// says so in its stage summary: {"type":"cache","data":{"status":"hit",
// "mode","similarity","age_seconds","original_generation"}}, or status
// "miss" / "bypass". The host reads that stage for what only it can do:
// the X-Cache header, service_metadata.cache, and the hit's generation
// record and charge.

// cachePlugin is the name of the request's response cache stage, "" when
// none runs.
func (r *Request) cachePlugin() string { return r.pl.Role(manifest.RoleCache) }

// cacheStage is the response cache's pre_request stage of the request, or
// nil when it did not run. The first call after the pre_request hooks
// finished takes it (markPre); later calls return that.
func (r *Request) cacheStage() map[string]any {
	if r.cacheSeen || r.pl == nil {
		return r.cacheSt
	}
	name := r.cachePlugin()
	if name == "" {
		return nil
	}
	for _, st := range r.pl.Stages {
		if st["name"] == name && st["hook"] == "pre_request" && st["type"] == "cache" {
			return st
		}
	}
	return nil
}

// markPre takes the cache's stage once the pre_request hooks are done,
// before anything runs that may add stages concurrently (a stream's
// post_chunk hooks).
func (r *Request) markPre() {
	r.cacheSt = r.cacheStage()
	r.cacheSeen = true
}

// cacheData is the cache stage's data (status, mode, similarity, age,
// original generation): service_metadata.cache.
func (r *Request) cacheData() map[string]any {
	st := r.cacheStage()
	if st == nil {
		return nil
	}
	d, _ := st["data"].(map[string]any)
	return d
}

// cacheHeader is X-Cache: HIT when the cache answered, MISS when it ran and
// did not (a bypass too: the answer is not from the cache), "" when it did
// not run.
func (r *Request) cacheHeader() string {
	switch st := r.cacheStage(); {
	case st == nil:
		return ""
	case st["action"] == "respond":
		return "HIT"
	}
	return "MISS"
}

// cacheHit reports whether the response cache answered the request.
func (r *Request) cacheHit() bool {
	st := r.cacheStage()
	return st != nil && st["action"] == "respond"
}

// observeCache counts what the response cache did for the request on
// /metrics: hit, miss or bypass, and the bytes it stored (a JSON answer's
// post_response; a stream's answer is not stored).
func (r *Request) observeCache(streamed bool) {
	d := r.cacheData()
	if d == nil {
		return
	}
	status, _ := d["status"].(string)
	stored := 0
	if streamed {
		// Nothing stored; and its chunk hooks may be adding stages.
		telemetry.From(r.ctx).Cache(status, 0)
		return
	}
	name := r.cachePlugin()
	for _, st := range r.pl.Stages {
		if st["name"] == name && st["hook"] == "post_response" {
			if sd, ok := st["data"].(map[string]any); ok && sd["stored"] == true {
				n, _ := sd["bytes"].(float64)
				stored = int(n)
			}
		}
	}
	telemetry.From(r.ctx).Cache(status, stored)
}

// hitFeeFraction is module_settings.<cache>.hit_fee of the response cache
// plugin named cache: the share of the original generation's charge a hit
// costs (0 to 1; 0 when unset).
func (s *Core) hitFeeFraction(cache string) float64 {
	m, _ := s.Config.ModuleSettings[cache].(map[string]any)
	var f float64
	switch v := m["hit_fee"].(type) {
	case float64:
		f = v
	case int:
		f = float64(v)
	}
	return min(max(f, 0), 1)
}

// chargeHit records and charges a cache hit's answer (result, the stored
// chat result): a generation of its own, on no provider, whose usage is the
// original generation's token counts and whose charge is the operator's
// hit fee, a fraction of what the original cost; the record names the
// original (cache_hit_of). The result's usage.cost becomes that charge.
// Key limits and credits count it like any generation. The original is
// looked up in the caller's account only: the plugin's word names it, so
// a generation of another account is never read (the kv store the
// entries come from is partitioned by account anyway).
func (r *Request) chargeHit(result []byte) ([]byte, *apierr.Error) {
	d := r.cacheData()
	orig, _ := d["original_generation"].(string)
	u := billing.Usage{
		PromptTokens:     gjson.GetBytes(result, "usage.prompt_tokens").Int(),
		CompletionTokens: gjson.GetBytes(result, "usage.completion_tokens").Int(),
	}
	var basis billing.Nanos
	if l := r.core.Ledger; l != nil && orig != "" {
		if g, err := l.Generation(orig); err == nil && g.AccountID == r.Key.AccountID {
			basis, u = g.Charged, g.Usage
			u.Estimated, u.ZeroReported = false, false
		}
	}
	if r.core.Ledger == nil {
		return result, nil
	}
	cache := r.cachePlugin()
	fee := billing.Nanos(float64(basis) * r.core.hitFeeFraction(cache))
	res, aerr := r.core.Ledger.Reserve(r.Key, billing.Request{
		ID: r.ID, Model: r.Model(), Provider: cache, Fees: fee, Streamed: r.Stream,
		Attribution: r.Attribution, Envelope: r.group.hold(),
	})
	if aerr != nil {
		return nil, aerr
	}
	if fee > 0 {
		res.AddFees(billing.Fee{Tool: "cache_hit", Calls: 1, Cost: fee})
	}
	finish := gjson.GetBytes(result, "choices.0.finish_reason").Str
	g, err := res.Settle(billing.Outcome{Usage: u, FinishReason: finish, Provider: cache, CacheHitOf: orig, PluginTime: r.pl.Time()})
	if err != nil {
		return nil, apierr.New(http.StatusInternalServerError, "recording the cache hit: %v", err)
	}
	result, _ = sjson.SetBytes(result, "usage.prompt_tokens", u.PromptTokens)
	result, _ = sjson.SetBytes(result, "usage.completion_tokens", u.CompletionTokens)
	result, _ = sjson.SetBytes(result, "usage.total_tokens", u.TotalTokens())
	result, _ = sjson.SetRawBytes(result, "usage.cost", []byte(g.Charged.USD()))
	result, _ = sjson.SetRawBytes(result, "usage.cost_details.cache_hit_fee", []byte(g.Charged.USD()))
	return result, nil
}
