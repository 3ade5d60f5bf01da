// Package route is the routing engine: given a request's models and provider
// preferences it plans which endpoints (model × provider) to try and in which
// order, keeps live health statistics per endpoint from the outcomes the
// caller reports, and pins sessions to endpoints (sticky routing).
//
// A Router is safe for concurrent use, and its catalog can be swapped while
// it routes (Swap: the live configuration reload). The hot path (Plan) takes
// no global lock: the catalog's table is one atomic load, health is read
// with atomic loads, sticky sessions live in sharded maps, and scratch space
// is pooled.
//
// The algorithm is documented for users in docs/routing.md.
package route

import (
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/catalog"
)

// Options tune a Router. The zero value gives the documented defaults.
type Options struct {
	// Adapters answers which adapters take file parts natively (Window);
	// nil: none does.
	Adapters Adapters
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Rand is the source of randomness for load balancing; nil means the
	// runtime's concurrent-safe generator. A given source is used under a
	// mutex, so a seeded one (rand.NewPCG) makes plans deterministic.
	Rand rand.Source

	// SessionTTL is how long a sticky session lives after it was last
	// pinned or used; default 1h.
	SessionTTL time.Duration
	// MaxSessions bounds the sticky-session map; the least recently used
	// session is evicted beyond it. Default 100,000.
	MaxSessions int

	// Window is the span of the live statistics (at most the last 128
	// outcomes per endpoint are kept); default 5m.
	Window time.Duration
	// OutageFailures consecutive failures put an endpoint in an outage;
	// default 3.
	OutageFailures int
	// OutageErrorRate: an error rate strictly above it over the window, with
	// at least OutageMinSamples outcomes, also puts an endpoint in an
	// outage. Defaults 0.5 and 10.
	OutageErrorRate  float64
	OutageMinSamples int
	// CoolDown is how long an endpoint in an outage is skipped before it is
	// tried again; it doubles (up to 16×) each time the endpoint fails again
	// right after a cool-down. Default 30s.
	CoolDown time.Duration

	// Shared keeps sticky sessions where every instance using it sees
	// them (shared.Sessions, in Redis); nil: in this process only.
	Shared SessionStore

	// Inherit carries live health and sticky sessions over from the router
	// of a previous catalog (hot reload). Endpoints are matched by model id
	// and provider slug. Health state is shared, so reports of requests
	// still in flight on the old router keep counting; sessions are copied
	// once.
	Inherit *Router
}

// SessionStore is where sticky sessions are shared between instances
// (host/route/shared, in Redis): an interface, so that the router and what
// imports it for its vocabulary do not link a Redis client. A session's
// value is the endpoint's stable key (model id and provider slug).
type SessionStore interface {
	// Get returns the endpoint key id is pinned to ("" when none) and
	// renews its TTL; an error means the store could not be read.
	Get(id string, ttl time.Duration) (string, error)
	// Put pins id to key for ttl.
	Put(id, key string, ttl time.Duration)
}

func (o *Options) defaults() {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.SessionTTL <= 0 {
		o.SessionTTL = time.Hour
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = 100_000
	}
	if o.Window <= 0 {
		o.Window = 5 * time.Minute
	}
	if o.OutageFailures <= 0 {
		o.OutageFailures = 3
	}
	if o.OutageErrorRate <= 0 || o.OutageErrorRate >= 1 {
		o.OutageErrorRate = 0.5
	}
	if o.OutageMinSamples <= 0 {
		o.OutageMinSamples = 10
	}
	if o.CoolDown <= 0 {
		o.CoolDown = 30 * time.Second
	}
}

// Router plans routes over a catalog. The catalog can be replaced while
// requests are routed (Swap, the live configuration reload): everything a
// plan needs is read from one table loaded once per call, so a request is
// planned entirely over the catalog it started with.
type Router struct {
	opts Options
	tab  atomic.Pointer[table]
	// swapMu orders Swaps, so each new table inherits from the last one.
	swapMu sync.Mutex

	randMu sync.Mutex // guards opts.Rand
	pool   sync.Pool  // *scratch
}

// table is one catalog with the router's live state over it. It is never
// changed after it is published; a Swap publishes a new one.
type table struct {
	cat    *catalog.Catalog
	models map[string]*modelState
	health map[*catalog.Endpoint]*health
	// byKey is the health by model id and provider slug, and retired maps
	// the endpoints of the catalog swapped out last to those keys: a
	// request planned before a Swap reports its outcome after it, and that
	// still counts (a request outliving two swaps reports into the void).
	// An endpoint of a catalog this router never planned over is unknown.
	byKey    map[string]*health
	retired  map[*catalog.Endpoint]string
	sessions *sessions
}

// modelState is a model with the health of its endpoints, index for index.
type modelState struct {
	m      *catalog.Model
	health []*health
}

func endpointKey(ep *catalog.Endpoint) string {
	if ep == nil || ep.Model == nil || ep.Provider == nil {
		return ""
	}
	return ep.Model.ID + "\x00" + ep.Provider.Slug
}

// New builds a router for c. c must not change afterwards.
func New(c *catalog.Catalog, opts Options) *Router {
	opts.defaults()
	old := opts.Inherit
	opts.Inherit = nil
	r := &Router{opts: opts}
	r.pool.New = func() any { return &scratch{cands: make([]cand, 0, 32), order: make([]*cand, 0, 32)} }
	var prev *table
	if old != nil {
		prev = old.tab.Load()
	}
	r.tab.Store(r.build(c, prev))
	return r
}

// Swap makes c the catalog of plans made from now on. Plans made before
// keep the endpoints (and so the prices) of the catalog they were made
// over. Live health and sticky sessions carry over to the endpoints of c
// with the same model id and provider slug, as with Options.Inherit. c
// must not change afterwards.
func (r *Router) Swap(c *catalog.Catalog) {
	r.swapMu.Lock()
	defer r.swapMu.Unlock()
	r.tab.Store(r.build(c, r.tab.Load()))
}

// build makes the table of c, sharing health with old's endpoints of the
// same key and copying old's sessions (old may be nil).
func (r *Router) build(c *catalog.Catalog, old *table) *table {
	t := &table{
		cat:      c,
		models:   make(map[string]*modelState, len(c.Models)),
		health:   make(map[*catalog.Endpoint]*health),
		byKey:    make(map[string]*health),
		sessions: newSessions(int64(r.opts.SessionTTL), r.opts.MaxSessions),
	}
	byKey := make(map[string]*catalog.Endpoint)
	for id, m := range c.Models {
		if m == nil {
			continue
		}
		st := &modelState{m: m, health: make([]*health, len(m.Endpoints))}
		for i, ep := range m.Endpoints {
			h := &health{}
			if ep != nil && ep.Provider != nil {
				k := id + "\x00" + ep.Provider.Slug
				byKey[k] = ep
				if old != nil {
					if oh := old.byKey[k]; oh != nil {
						h = oh
					}
				}
				t.byKey[k] = h
			}
			st.health[i] = h
			if ep != nil {
				t.health[ep] = h
			}
		}
		t.models[id] = st
	}
	if old != nil {
		t.retired = make(map[*catalog.Endpoint]string, len(old.health))
		for ep := range old.health {
			if k := endpointKey(ep); k != "" {
				t.retired[ep] = k
			}
		}
		old.sessions.each(func(id string, ep *catalog.Endpoint, last int64) {
			if nep := byKey[endpointKey(ep)]; nep != nil {
				t.sessions.put(id, nep, last)
			}
		})
	}
	return t
}

// healthOf finds ep's health in the current table, by pointer or, for an
// endpoint of a catalog swapped out since, by model and provider.
func (r *Router) healthOf(ep *catalog.Endpoint) (*table, *health) {
	t := r.tab.Load()
	if h := t.health[ep]; h != nil {
		return t, h
	}
	if k, ok := t.retired[ep]; ok {
		return t, t.byKey[k]
	}
	return t, nil
}

// Catalog returns the catalog the router plans over now.
func (r *Router) Catalog() *catalog.Catalog { return r.tab.Load().cat }

// Request is what Plan needs to know about one request.
type Request struct {
	// Kind is the operation; "" means chat.
	Kind catalog.Kind
	// Compression is the plugin that fits a long prompt into a smaller
	// context (manifest.RoleCompression) for the request's account, ""
	// when none is installed: a prompt too long for every endpoint is
	// told to add it.
	Compression string
	// Models: the primary model first, then the fallbacks of `models`.
	// Duplicates are ignored.
	Models []string
	Prefs  Preferences
	// AccountOnly and AccountIgnore are the account-wide provider lists.
	// Both are merged with the request's lists by union, as spec 2.4 says:
	// a provider is allowed when either only list names it (when either is
	// given), and skipped when either ignore list names it.
	AccountOnly, AccountIgnore []string
	// Params are the optional request parameters present in the body (spec
	// field names, e.g. "tools", "top_k").
	Params []string
	// SessionID is the sticky routing key; "" for none.
	SessionID string
	// PromptTokens and MaxOutputTokens are estimates (0 = unknown) used for
	// the context-length check. A MaxOutputTokens above an endpoint's
	// maximum output is clamped to it for that endpoint (see ClampedOutput),
	// except with provider.require_parameters, where such an endpoint is
	// not eligible.
	PromptTokens, MaxOutputTokens int
	// ContextTokens, when set, is what one context must hold instead of
	// PromptTokens: an embeddings batch's longest input, since a provider
	// embeds each input in a context of its own.
	ContextTokens int

	// vModels and variants: the requested models that carried a variant
	// suffix (openai/gpt-4o:nitro) and theirs, set while planning.
	vModels  []*catalog.Model
	variants []Variant
}

// contextTokens is the prompt that one context must hold.
func (r *Request) contextTokens() int {
	if r.ContextTokens > 0 {
		return r.ContextTokens
	}
	return r.PromptTokens
}

// Plan is the outcome of routing one request.
type Plan struct {
	// Attempts are the endpoints to try, in order. With
	// allow_fallbacks=false it holds only the first.
	Attempts []*catalog.Endpoint
	// Strategy names how the first attempt was chosen: "order",
	// "sort:price", "sort:throughput", "sort:latency", "load-balance" or
	// "sticky".
	Strategy string
	// Available lists every endpoint of the requested models, eligible or
	// not, for metadata. It may share memory with the catalog: read only.
	Available []*catalog.Endpoint
	// Dropped lists, per attempt, the request parameters the endpoint does
	// not support; the caller removes them from that upstream body. Nil
	// when nothing is dropped (always with require_parameters).
	Dropped map[*catalog.Endpoint][]string

	models []*catalog.Model // the requested models, deduplicated
	inline [1]*catalog.Model
	buf    [16]*catalog.Endpoint // backs Attempts when they fit
}

// cand is one eligible endpoint while a plan is being ordered.
type cand struct {
	ep      *catalog.Endpoint
	h       *health
	model   int32 // index in the plan's models
	group   int32 // ranking partition: the model index, or 0 with partition none
	down    bool  // in an outage cool-down: tried last
	miss    bool  // misses a preferred latency/throughput threshold
	unknown bool  // no live data for the sort key
	rank    int64 // down, group, miss and unknown packed for compare
	key     float64
	tie     float64
	w       float64 // load-balancing weight
}

type scratch struct {
	cands []cand
	order []*cand // sorted view of cands; pointers keep swaps cheap
}

// Plan routes a request. Errors: 400 without a model, 404 for an unknown
// model, a model of the wrong kind, or when no endpoint satisfies the
// preferences (the message names the preferences that eliminated them).
func (r *Router) Plan(req Request) (*Plan, *apierr.Error) {
	if len(req.Models) == 0 {
		return nil, apierr.BadRequest("model", "is required")
	}
	plan := &Plan{}
	var states [4]*modelState
	t := r.tab.Load()
	sts, err := plan.resolve(t, &req, states[:0])
	if err != nil {
		return nil, err
	}
	plan.available()

	now := r.opts.Now().UnixNano()
	sc := r.pool.Get().(*scratch)
	defer r.putScratch(sc)
	p := &req.Prefs

	var rejected [nConstraints]int
	cands := sc.eligible(sts, &req, now, &rejected)
	if len(cands) == 0 {
		return nil, noEndpoint(plan.models, &req, &rejected)
	}
	plan.Strategy = r.keys(cands, now, &req)
	order := sc.ranked()
	if req.SessionID != "" && plan.Strategy == "load-balance" && r.stick(t, req.SessionID, order, now) {
		plan.Strategy = "sticky"
	}
	plan.attempts(order, p.NoFallbacks)
	plan.dropped(&req)
	return plan, nil
}

// resolve looks up the requested models in t, in order and without
// duplicates, into plan.models and their states (appended to sts, whose
// backing array the caller keeps on its stack). Every model must exist and
// be of the request's kind.
func (p *Plan) resolve(t *table, req *Request, sts []*modelState) ([]*modelState, *apierr.Error) {
	kind := req.Kind
	if kind == "" {
		kind = catalog.KindChat
	}
	ms := p.inline[:0]
	if len(req.Models) > len(p.inline) {
		ms = make([]*catalog.Model, 0, len(req.Models))
	}
	for _, id := range req.Models {
		st, v := t.lookup(id)
		if st == nil {
			return nil, unknownModel(t.cat, id)
		}
		req.noteVariant(st.m, v)
		if st.m.Kind != kind {
			what := "a chat"
			if kind == catalog.KindEmbedding {
				what = "an embedding"
			}
			return nil, apierr.New(http.StatusNotFound, "%s is not %s model", id, what)
		}
		if !slices.Contains(sts, st) {
			sts = append(sts, st)
			ms = append(ms, st.m)
		}
	}
	p.models = ms
	return sts, nil
}

// available fills p.Available with every endpoint of the plan's models.
// One model's list is shared with the catalog rather than copied: the
// common case costs no allocation.
func (p *Plan) available() {
	ms := p.models
	if len(ms) == 1 {
		p.Available = ms[0].Endpoints
		return
	}
	n := 0
	for _, m := range ms {
		n += len(m.Endpoints)
	}
	p.Available = make([]*catalog.Endpoint, 0, n)
	for _, m := range ms {
		p.Available = append(p.Available, m.Endpoints...)
	}
}

// eligible collects into sc.cands the endpoints of sts that pass every
// constraint of req, counting in rejected, per constraint, the endpoints it
// eliminated (for the error when none is left).
func (sc *scratch) eligible(sts []*modelState, req *Request, now int64, rejected *[nConstraints]int) []cand {
	p := &req.Prefs
	none := p.partitionNone()
	for mi, st := range sts {
		for ei, ep := range st.m.Endpoints {
			if ep == nil || ep.Provider == nil {
				continue
			}
			if bits := check(st.m, ep, req); bits != 0 {
				for ; bits != 0; bits &= bits - 1 {
					rejected[trailingZeros(bits)]++
				}
				continue
			}
			c := cand{ep: ep, h: st.health[ei], model: int32(mi)}
			if !none {
				c.group = int32(mi)
			}
			// With fallbacks off and an order, the caller chose the one
			// provider to try: a cool-down must not swap in another, or the
			// same request flips between two providers' answers.
			c.down = c.h.down(now) && !(p.NoFallbacks && len(p.Order) > 0)
			sc.cands = append(sc.cands, c)
		}
	}
	return sc.cands
}

// keys sets each candidate's sort key (and tie-breaker, threshold miss and
// unknown flags) for the strategy the preferences ask for, or the
// load-balancing weights, and returns the strategy's name.
func (r *Router) keys(cands []cand, now int64, req *Request) string {
	p := &req.Prefs
	thresholds := !p.PreferredMaxLatency.IsZero() || !p.PreferredMinThroughput.IsZero()
	switch {
	case len(p.Order) > 0:
		for i := range cands {
			cands[i].key = float64(orderIndex(cands[i].ep.Provider, p.Order))
		}
		return "order"
	case p.Sort != SortNone:
		for i := range cands {
			r.sortKey(&cands[i], now, p.Sort, p, thresholds)
		}
		return sortStrategy[p.Sort]
	default:
		// Each partition is load-balanced, unless a model of it was
		// requested with a ranking variant (:nitro, :floor, :exacto): an
		// explicit provider.sort or order above wins over a variant.
		strategy := ""
		for lo := 0; lo < len(cands); {
			hi := lo + 1
			for hi < len(cands) && cands[hi].group == cands[lo].group {
				hi++
			}
			s := "load-balance"
			if by := r.groupSort(cands[lo:hi], req); by != SortNone {
				for i := lo; i < hi; i++ {
					r.sortKey(&cands[i], now, by, p, thresholds)
				}
				s = sortStrategy[by]
			} else {
				r.balance(cands[lo:hi], now, thresholds, p)
			}
			if lo == 0 {
				strategy = s // the first partition's: how the first attempt was chosen
			}
			lo = hi
		}
		return strategy
	}
}

// groupSort is the ranking a partition's variants ask for: that of the
// first of its models (in the request's order) whose variant ranks.
func (r *Router) groupSort(cs []cand, req *Request) SortBy {
	if len(req.vModels) == 0 {
		return SortNone
	}
	for i := range cs {
		if i > 0 && cs[i].model == cs[i-1].model {
			continue
		}
		if by := variantSort[req.variant(cs[i].ep.Model)]; by != SortNone {
			return by
		}
	}
	return SortNone
}

// sortKey keys c for provider.sort: by blended price (request price breaks
// ties), or by live throughput or latency (blended price breaks ties). Live
// statistics are read only when the key or the thresholds need them.
func (r *Router) sortKey(c *cand, now int64, by SortBy, p *Preferences, thresholds bool) {
	price := blended(c.ep)
	if by == SortPrice {
		c.key, c.tie = price, c.ep.Price.Request
	} else {
		c.tie = price
	}
	if by == SortPrice && !thresholds {
		return
	}
	st := c.h.stats(now, &r.opts)
	c.miss = thresholds && misses(&st.Stats, p)
	switch by {
	case SortThroughput:
		c.key, c.unknown = -st.Throughput.P50, st.Throughput.P50 == 0
	case SortLatency:
		c.key, c.unknown = st.Latency.P50, st.Latency.P50 == 0
	case SortExacto:
		c.key, c.unknown = -st.ToolCallRate, st.ToolCalls == 0
	}
}

// ranked packs each candidate's rank and returns sc.order, the candidates
// sorted by compare.
func (sc *scratch) ranked() []*cand {
	cands := sc.cands
	order := sc.order[:0]
	for i := range cands {
		c := &cands[i]
		c.rank = int64(c.group) << 3
		if c.down {
			c.rank |= 1 << 40
		}
		if c.miss {
			c.rank |= 2
		}
		if c.unknown {
			c.rank |= 1
		}
		order = append(order, c)
	}
	sc.order = order
	slices.SortStableFunc(order, compare)
	return order
}

// stick moves the endpoint the session is pinned to, when it is among the
// candidates, to the front of its group and renews the pin; it reports
// whether that endpoint now leads the whole order.
func (r *Router) stick(t *table, sessionID string, order []*cand, now int64) bool {
	ep, shared := r.session(t, sessionID, now)
	if ep == nil || !promote(order, ep) {
		return false
	}
	if shared {
		t.sessions.put(sessionID, ep, now) // the local copy, for when Redis is away
	} else {
		t.sessions.touch(sessionID, ep, now)
	}
	return order[0].ep == ep
}

// attempts fills p.Attempts from the sorted candidates: all of them, or
// only the first without fallbacks. They live in p.buf when they fit.
func (p *Plan) attempts(order []*cand, noFallbacks bool) {
	n := len(order)
	if noFallbacks {
		n = 1
	}
	if n <= len(p.buf) {
		p.Attempts = p.buf[:n]
	} else {
		p.Attempts = make([]*catalog.Endpoint, n)
	}
	for i := range n {
		p.Attempts[i] = order[i].ep
	}
}

// dropped records, per attempt, the request parameters its endpoint does
// not support; with require_parameters such an endpoint was not eligible.
func (p *Plan) dropped(req *Request) {
	if req.Prefs.RequireParameters || len(req.Params) == 0 {
		return
	}
	for _, ep := range p.Attempts {
		if miss := unsupported(ep, req.Params); miss != nil {
			if p.Dropped == nil {
				p.Dropped = make(map[*catalog.Endpoint][]string)
			}
			p.Dropped[ep] = miss
		}
	}
}

func (r *Router) putScratch(sc *scratch) {
	if cap(sc.cands) > 4096 {
		return // do not keep huge buffers around
	}
	clear(sc.cands)
	clear(sc.order)
	sc.cands, sc.order = sc.cands[:0], sc.order[:0]
	r.pool.Put(sc)
}

var sortStrategy = map[SortBy]string{SortPrice: "sort:price", SortThroughput: "sort:throughput", SortLatency: "sort:latency", SortExacto: "sort:exacto"}

// compare orders candidates by rank (healthy before down, then partition,
// then those meeting the preferred thresholds, then those with live data for
// the sort key), then key and tie-breaker. The sort is stable, so the catalog
// order decides last.
func compare(a, b *cand) int {
	switch {
	case a.rank != b.rank:
		if a.rank < b.rank {
			return -1
		}
		return 1
	case a.key != b.key:
		if a.key < b.key {
			return -1
		}
		return 1
	case a.tie != b.tie:
		if a.tie < b.tie {
			return -1
		}
		return 1
	}
	return 0
}

// balance assigns load-balancing keys to one partition: weights ∝ 1/price²
// (blended price; free endpoints get the largest weight of the partition),
// one endpoint drawn at random by weight among the best tier (healthy and
// meeting the thresholds, else healthy), the others after it by weight.
func (r *Router) balance(cs []cand, now int64, thresholds bool, p *Preferences) {
	maxW := 0.0
	for i := range cs {
		c := &cs[i]
		if thresholds && !c.down {
			c.miss = misses(&c.h.stats(now, &r.opts).Stats, p)
		}
		c.w = Weight(c.ep)
		maxW = max(maxW, c.w)
	}
	if maxW == 0 || math.IsInf(maxW, 1) {
		maxW = 1
	}
	var sums [2]float64 // tier 0: healthy and meeting thresholds; tier 1: healthy
	for i := range cs {
		c := &cs[i]
		if c.w == 0 || math.IsInf(c.w, 1) {
			c.w = maxW
		}
		c.key = -c.w
		if !c.down {
			sums[1] += c.w
			if !c.miss {
				sums[0] += c.w
			}
		}
	}
	tier := 0
	if sums[0] == 0 {
		tier = 1
	}
	if sums[tier] == 0 {
		return // everything is down: weight order only
	}
	u := r.float() * sums[tier]
	pick := -1
	for i := range cs {
		c := &cs[i]
		if c.down || (tier == 0 && c.miss) {
			continue
		}
		pick = i
		if u < c.w {
			break
		}
		u -= c.w
	}
	cs[pick].key = math.Inf(-1)
}

// promote moves the pinned endpoint to the head of its partition if it is
// an eligible, healthy candidate.
func promote(cs []*cand, ep *catalog.Endpoint) bool {
	for i := range cs {
		if cs[i].ep != ep {
			continue
		}
		if cs[i].down {
			return false
		}
		j := i
		for j > 0 && cs[j-1].group == cs[i].group && !cs[j-1].down {
			j--
		}
		c := cs[i]
		copy(cs[j+1:i+1], cs[j:i])
		cs[j] = c
		return true
	}
	return false
}

func (r *Router) float() float64 {
	if r.opts.Rand == nil {
		return rand.Float64()
	}
	r.randMu.Lock()
	x := r.opts.Rand.Uint64()
	r.randMu.Unlock()
	return float64(x>>11) / (1 << 53)
}

// Blended is the price used to compare endpoints: (3·prompt + completion)/4
// USD per million tokens, i.e. the cost of a million tokens at a 3:1
// input:output mix, typical of chat traffic. For embeddings (no completion
// price) it is proportional to the prompt price.
func Blended(ep *catalog.Endpoint) float64 { return blended(ep) }

func blended(ep *catalog.Endpoint) float64 {
	return (3*max(ep.Price.Prompt, 0) + max(ep.Price.Completion, 0)) / 4
}

// Weight is the load-balancing weight of an endpoint before normalisation:
// 1/Blended². It is 0 for a free endpoint, which the balancer raises to the
// largest weight among the endpoints it is compared with.
func Weight(ep *catalog.Endpoint) float64 {
	b := blended(ep)
	if !(b > 0) || math.IsInf(b, 1) { // free, or a NaN/Inf price in the configuration
		return 0
	}
	return 1 / (b * b)
}

// misses reports whether live statistics miss a preferred threshold. Missing
// data never misses.
func misses(s *Stats, p *Preferences) bool {
	l, t := &p.PreferredMaxLatency, &p.PreferredMinThroughput
	over := func(stat, th float64) bool { return th > 0 && stat > 0 && stat > th }
	under := func(stat, th float64) bool { return th > 0 && stat > 0 && stat < th }
	return over(s.Latency.P50, l.P50) || over(s.Latency.P75, l.P75) ||
		over(s.Latency.P90, l.P90) || over(s.Latency.P99, l.P99) ||
		under(s.Throughput.P50, t.P50) || under(s.Throughput.P75, t.P75) ||
		under(s.Throughput.P90, t.P90) || under(s.Throughput.P99, t.P99)
}

// Report records the outcome of one attempt on ep. Endpoints not in the
// router's catalog are ignored.
func (r *Router) Report(ep *catalog.Endpoint, o Outcome) {
	if _, h := r.healthOf(ep); h != nil {
		h.report(r.opts.Now().UnixNano(), o, &r.opts)
	}
}

// Stats returns the live statistics of ep (zero for an unknown endpoint).
func (r *Router) Stats(ep *catalog.Endpoint) Stats {
	_, h := r.healthOf(ep)
	if h == nil {
		return Stats{}
	}
	return h.stats(r.opts.Now().UnixNano(), &r.opts).Stats
}

// Stick pins sessionID to ep, typically after a successful attempt. Later
// load-balanced plans of the session try ep first while it stays eligible
// and healthy.
func (r *Router) Stick(sessionID string, ep *catalog.Endpoint) {
	if sessionID == "" {
		return
	}
	t, h := r.healthOf(ep)
	if h == nil {
		return
	}
	if t.health[ep] == nil {
		// Planned over a swapped-out catalog: pin its successor.
		ep = t.endpoint(t.retired[ep])
		if ep == nil {
			return
		}
	}
	t.sessions.put(sessionID, ep, r.opts.Now().UnixNano())
	if r.opts.Shared != nil {
		r.opts.Shared.Put(sessionID, endpointKey(ep), r.opts.SessionTTL)
	}
}

// session finds the endpoint sessionID is pinned to: in the shared store
// when there is one and it has the session (shared true), else in this
// process's map. An endpoint this catalog lacks is no pin.
func (r *Router) session(t *table, sessionID string, now int64) (ep *catalog.Endpoint, shared bool) {
	if r.opts.Shared != nil {
		if key, err := r.opts.Shared.Get(sessionID, r.opts.SessionTTL); err == nil && key != "" {
			return t.endpoint(key), true
		}
	}
	return t.sessions.get(sessionID, now), false
}

// Constraints that can eliminate an endpoint, in the order error messages
// name them.
const (
	cOnly = iota
	cIgnore
	cAccountIgnore
	cOrder
	cZDR
	cDataCollection
	cDistillable
	cQuantizations
	cRequireParameters
	cPricePrompt
	cPriceCompletion
	cPriceRequest
	cPriceImage
	cPriceAudio
	cContext
	cMaxOutput
	cFree
	nConstraints
)

func trailingZeros(x uint32) int {
	n := 0
	for x&1 == 0 {
		x >>= 1
		n++
	}
	return n
}

// check returns the set of constraints ep fails.
func check(m *catalog.Model, ep *catalog.Endpoint, req *Request) uint32 {
	p := &req.Prefs
	pv := ep.Provider
	var bits uint32
	if (len(p.Only) > 0 || len(req.AccountOnly) > 0) && !inList(pv, p.Only) && !inList(pv, req.AccountOnly) {
		bits |= 1 << cOnly
	}
	if inList(pv, p.Ignore) {
		bits |= 1 << cIgnore
	}
	if inList(pv, req.AccountIgnore) {
		bits |= 1 << cAccountIgnore
	}
	if len(p.Order) > 0 && !inList(pv, p.Order) {
		bits |= 1 << cOrder
	}
	if p.ZDR && !pv.ZDR {
		bits |= 1 << cZDR
	}
	if p.DenyDataCollection() && pv.DataCollection != "deny" {
		bits |= 1 << cDataCollection
	}
	if p.EnforceDistillableText && !m.Distillable {
		bits |= 1 << cDistillable
	}
	if len(p.Quantizations) > 0 {
		q := ep.Quantization
		if q == "" {
			q = "unknown"
		}
		if !slices.ContainsFunc(p.Quantizations, func(s string) bool { return strings.EqualFold(s, q) }) {
			bits |= 1 << cQuantizations
		}
	}
	if p.RequireParameters {
		for _, k := range req.Params {
			if !ep.Supported[k] {
				bits |= 1 << cRequireParameters
				break
			}
		}
	}
	mp := &p.MaxPrice
	if mp.Prompt != nil && ep.Price.Prompt > *mp.Prompt {
		bits |= 1 << cPricePrompt
	}
	if mp.Completion != nil && ep.Price.Completion > *mp.Completion {
		bits |= 1 << cPriceCompletion
	}
	if mp.Request != nil && ep.Price.Request > *mp.Request {
		bits |= 1 << cPriceRequest
	}
	if mp.Image != nil && ep.Price.Image > *mp.Image {
		bits |= 1 << cPriceImage
	}
	if mp.Audio != nil && ep.Price.Audio > *mp.Audio {
		bits |= 1 << cPriceAudio
	}
	if len(req.vModels) > 0 && req.variant(m) == Free && !isFree(ep) {
		bits |= 1 << cFree
	}
	ctx := ep.ContextLength
	if ctx <= 0 {
		ctx = m.ContextLength
	}
	out := max(req.MaxOutputTokens, 0)
	if clamped, ok := ClampedOutput(ep, out); ok {
		if p.RequireParameters {
			bits |= 1 << cMaxOutput
		}
		out = clamped
	}
	if need := max(req.contextTokens(), 0) + out; need > 0 && ctx > 0 && need > ctx {
		bits |= 1 << cContext
	}
	return bits
}

// inList reports whether the provider's slug or display name is in list
// (case-insensitive).
func inList(pv *catalog.Provider, list []string) bool {
	return orderIndex(pv, list) >= 0
}

func orderIndex(pv *catalog.Provider, list []string) int {
	for i, s := range list {
		if strings.EqualFold(s, pv.Slug) || (pv.Name != "" && strings.EqualFold(s, pv.Name)) {
			return i
		}
	}
	return -1
}

// unsupported lists the params ep does not support, or nil.
func unsupported(ep *catalog.Endpoint, params []string) []string {
	var out []string
	for _, k := range params {
		if !ep.Supported[k] && !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// noEndpoint builds the 404 naming the preferences that eliminated every
// endpoint of the requested models.
func noEndpoint(ms []*catalog.Model, req *Request, rejected *[nConstraints]int) *apierr.Error {
	ids := make([]string, len(ms))
	for i, m := range ms {
		ids[i] = m.ID
	}
	if e := outputTooLarge(ms, req, rejected, ids); e != nil {
		return e
	}
	if rejected[cContext] > 0 {
		if e := contextTooLong(ms, req, ids); e != nil {
			return e
		}
	}
	var why []string
	by := map[string]any{}
	for c := range nConstraints {
		if rejected[c] == 0 {
			continue
		}
		name, desc := describe(c, req)
		why = append(why, desc)
		by[name] = rejected[c]
	}
	var msg string
	if len(why) == 0 {
		msg = "no endpoint is available for " + strings.Join(ids, ", ")
	} else {
		msg = "no endpoint for " + strings.Join(ids, ", ") + " satisfies " + joinAnd(why)
	}
	e := apierr.New(http.StatusNotFound, "%s", msg)
	e.Metadata = map[string]any{"models": ids, "rejected_by": by}
	return e
}

func joinAnd(xs []string) string {
	if len(xs) == 1 {
		return xs[0]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}

func list(xs []string) string { return "[" + strings.Join(xs, ", ") + "]" }

func num(f *float64) string { return strconv.FormatFloat(*f, 'f', -1, 64) }

// describe names a constraint (metadata key) and renders it with the value
// the request gave.
func describe(c int, req *Request) (name, desc string) {
	p := &req.Prefs
	switch c {
	case cOnly:
		switch {
		case len(req.AccountOnly) == 0:
			return "provider.only", "provider.only=" + list(p.Only)
		case len(p.Only) == 0:
			return "account.only", "the account's allowed providers " + list(req.AccountOnly)
		}
		return "provider.only", "provider.only=" + list(p.Only) + " merged with the account's allowed providers " + list(req.AccountOnly)
	case cIgnore:
		return "provider.ignore", "provider.ignore=" + list(p.Ignore)
	case cAccountIgnore:
		return "account.ignore", "the account's ignored providers " + list(req.AccountIgnore)
	case cOrder:
		return "provider.order", "provider.order=" + list(p.Order)
	case cZDR:
		return "provider.zdr", "provider.zdr=true"
	case cDataCollection:
		return "provider.data_collection", "provider.data_collection=deny"
	case cDistillable:
		return "provider.enforce_distillable_text", "provider.enforce_distillable_text=true"
	case cQuantizations:
		return "provider.quantizations", "provider.quantizations=" + list(p.Quantizations)
	case cRequireParameters:
		return "provider.require_parameters", "provider.require_parameters=true with " + list(req.Params)
	case cPricePrompt:
		return "provider.max_price.prompt", "provider.max_price.prompt=" + num(p.MaxPrice.Prompt)
	case cPriceCompletion:
		return "provider.max_price.completion", "provider.max_price.completion=" + num(p.MaxPrice.Completion)
	case cPriceRequest:
		return "provider.max_price.request", "provider.max_price.request=" + num(p.MaxPrice.Request)
	case cPriceImage:
		return "provider.max_price.image", "provider.max_price.image=" + num(p.MaxPrice.Image)
	case cPriceAudio:
		return "provider.max_price.audio", "provider.max_price.audio=" + num(p.MaxPrice.Audio)
	case cContext:
		return "context_length", "a context length of " + strconv.Itoa(req.contextTokens()+req.MaxOutputTokens) +
			" tokens (" + strconv.Itoa(req.contextTokens()) + " prompt + " + strconv.Itoa(req.MaxOutputTokens) + " max output)"
	case cMaxOutput:
		return "max_output_tokens", "provider.require_parameters=true with max output tokens " + strconv.Itoa(req.MaxOutputTokens)
	case cFree:
		return "variant.free", "the :free variant (only endpoints that charge nothing)"
	}
	return "unknown", "unknown"
}

// ClampedOutput reports whether a requested maximum output (max_tokens or
// max_completion_tokens) is above ep's maximum output, and the value to send
// it instead. Clamping instead of refusing keeps SDKs from reporting a
// too-large max_tokens as "model not found" (docs/interface-choices.md).
func ClampedOutput(ep *catalog.Endpoint, requested int) (int, bool) {
	if requested > 0 && ep.MaxOutput > 0 && requested > ep.MaxOutput {
		return ep.MaxOutput, true
	}
	return requested, false
}

// outputTooLarge is the 400 for a request with require_parameters whose
// maximum output every endpoint's limit is below: the caller's number is
// wrong, not the model, so it is named with the largest limit available.
func outputTooLarge(ms []*catalog.Model, req *Request, rejected *[nConstraints]int, ids []string) *apierr.Error {
	if rejected[cMaxOutput] == 0 {
		return nil
	}
	total, limit := 0, 0
	for _, m := range ms {
		for _, ep := range m.Endpoints {
			if ep != nil && ep.Provider != nil {
				total++
				limit = max(limit, ep.MaxOutput)
			}
		}
	}
	if rejected[cMaxOutput] < total {
		return nil // some endpoint fit the output and failed another preference
	}
	e := apierr.BadRequest("max_tokens", "%d output tokens exceeds the maximum of %d that %s allows; ask for at most %d, or drop provider.require_parameters to have it clamped",
		req.MaxOutputTokens, limit, strings.Join(ids, ", "), limit)
	e.Metadata = map[string]any{"models": ids, "max_output_tokens": limit}
	return e
}

// unknownModel is the error for a model the catalog does not know: 400 for
// a name without a vendor (the caller used a short name no alias covers),
// 404 for a model id; both list the closest catalog ids.
func unknownModel(cat *catalog.Catalog, id string) *apierr.Error {
	hint := ""
	near := cat.Suggest(id, 3)
	if len(near) > 0 {
		hint = "; did you mean " + strings.Join(near, ", ") + "?"
	}
	if !strings.Contains(id, "/") {
		e := apierr.BadRequest("model", "%q is not a model id of the form <vendor>/<model_name> nor an alias%s (GET /api/v1/models lists the models)", clip(id), hint)
		e.Metadata = map[string]any{"suggestions": near}
		return e
	}
	e := apierr.New(http.StatusNotFound, "model %s does not exist%s", clip(id), hint)
	if len(near) > 0 {
		e.Metadata = map[string]any{"suggestions": near}
	}
	return e
}

// Resolve maps a request's model name to a catalog id: the id itself, or
// an alias's target. A name without a vendor that is neither is a 400
// listing close matches, so the caller learns it before anything runs; an
// unknown <vendor>/<model> id is returned unchanged for Plan to answer 404.
func (r *Router) Resolve(id string) (string, *apierr.Error) {
	cat := r.Catalog()
	if to := cat.Resolve(id); to != "" {
		return to, nil
	}
	if base, v := SplitVariant(id); v != NoVariant {
		// An alias keeps its variant: gpt-4o:nitro is openai/gpt-4o:nitro.
		if to := cat.Resolve(base); to != "" {
			return to + ":" + v.String(), nil
		}
	}
	if !strings.Contains(id, "/") {
		return "", unknownModel(cat, id)
	}
	return id, nil
}

// Unrouted is a plan made for metadata only: the endpoints of the requested
// models (aliases resolved, unknown models left out), none attempted, for a
// request stopped before routing, such as a guardrail block.
func (r *Router) Unrouted(models []string, strategy string) *Plan {
	p := &Plan{Strategy: strategy}
	t := r.tab.Load()
	for _, id := range models {
		st, _ := t.lookup(id)
		if st == nil || slices.Contains(p.models, st.m) {
			continue
		}
		p.models = append(p.models, st.m)
		p.Available = append(p.Available, st.m.Endpoints...)
	}
	return p
}

// endpoint finds the endpoint of key (model id and provider slug) in t.
func (t *table) endpoint(key string) *catalog.Endpoint {
	id, slug, _ := strings.Cut(key, "\x00")
	if st := t.models[id]; st != nil {
		for _, ep := range st.m.Endpoints {
			if ep != nil && ep.Provider != nil && ep.Provider.Slug == slug {
				return ep
			}
		}
	}
	return nil
}
