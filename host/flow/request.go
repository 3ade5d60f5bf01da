package flow

import (
	"bufio"
	"context"
	"io"
	"sync/atomic"

	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/dispatch"
	"github.com/switchyard/switchyard/host/keys"
	"github.com/switchyard/switchyard/host/pipeline"
	"github.com/switchyard/switchyard/host/tools"
	"github.com/switchyard/switchyard/host/usage"
	"github.com/switchyard/switchyard/host/validate"
	"github.com/switchyard/switchyard/host/wasm"
	"github.com/switchyard/switchyard/host/wire"
)

// Request is one chat request on its way through the gateway: the typed
// request (replaced when a plugin edits it), who sends it, and everything
// its life holds. Close releases all of it, once: the entry point that
// made the Request defers Close, and a stream that outlives the entry
// point takes a reference of its own (Keep) and closes it when it ends.
type Request struct {
	*validate.ChatRequest
	Key *keys.Key
	// ID is the generation id (X-Generation-Id); a sub-request's is
	// <parent id>-sub<n>.
	ID string
	// Meta: service_metadata was asked for (X-Service-Metadata: enabled);
	// OpenRouterMeta: with OpenRouter's header, so it is answered under
	// its name, openrouter_metadata.
	Meta, OpenRouterMeta bool
	// Unsupported are the plugin options accepted and not implemented
	// ("web.mode"), for service_metadata.unsupported (openrouter.go).
	Unsupported []string
	// Attribution is the client's app from its attribution headers
	// (HTTP-Referer, X-OpenRouter-Title/X-Title, X-OpenRouter-Categories),
	// recorded on each of its generations.
	Attribution usage.Attribution
	// Native is the request as a front door's client sent it, for
	// providers that speak that API themselves (dispatch.Native): set by
	// the front door before Run. It is used only while nothing edits the
	// request (nativeJob); NativeError frames a failure as an event of
	// that API's stream.
	Native      *dispatch.Native
	NativeError func(out []byte, e *apierr.Error) []byte

	core   *Core
	ctx    context.Context
	cancel context.CancelFunc
	adm    *Admission
	// spend sums the charges of its runs (server-tool turns, sub-requests).
	spend *spend
	// group is shared with the chat sub-requests its modules make: their
	// reserved hold and the signal that they started (subgroup.go).
	group *subGroup
	// parent is the request whose module made this sub-request; nil for a
	// client's. A sub-request shares its parent's group and adds its
	// charge to the parent's spend.
	parent *Request
	// subsInFlight counts its sub-requests running now: one beside
	// another takes a concurrent slot of its own (Admission.also).
	subsInFlight atomic.Int32
	// routed is what its router plugin decided (routers.go); nil when
	// none ran. routerPlugin is that plugin's id; answerPlugin the
	// answering router its model names (fusion for switchyard/fusion),
	// which joins its pipeline.
	routed       *routed
	routerPlugin string
	answerPlugin string
	// pl is its plugin pipeline, the router's stage folded in; set is the
	// server tools its tools name. Both are released by Close.
	pl  *pipeline.Pipeline
	set *tools.Set
	// fees is what its plugins may charge, held before they run, and how
	// much of what they reported was charged (pluginfees.go).
	fees pluginFees
	// cacheSt is the response cache's pre_request stage, taken when the
	// pre_request hooks are done (cache.go): read later without walking
	// the stages a stream's chunk hooks may still be adding to.
	cacheSt   map[string]any
	cacheSeen bool
	// closers are released by Close after everything else, last added
	// first (a transport's place among the requests in flight).
	closers []io.Closer
	refs    atomic.Int32
}

// NewRequest makes the Request of a client's validated chat request (see
// ParseChat). ctx bounds its work (the request deadline, the client's
// hang-up) and cancel ends it; adm is its rate-limit admission (nil when
// none applies). The caller defers Close.
func (s *Core) NewRequest(ctx context.Context, cancel context.CancelFunc, vr *validate.ChatRequest, key *keys.Key, adm *Admission) *Request {
	// Host functions called by this request's modules (chat sub-requests
	// among them) act for it: the same key, counted in its usage. One
	// allocation for what most requests never use.
	env := &requestEnv{}
	// Generation ids are time-ordered (billing.NewID): the ledger's commits
	// stay small when ids are appended in order.
	r := &Request{ChatRequest: vr, Key: key, ID: billing.NewID(), core: s, cancel: cancel, adm: adm,
		spend: &env.spend, group: &env.group}
	env.call = wasm.CallEnv{Account: key.AccountID, KeyID: key.Hash, RequestID: r.ID,
		Chat: r.subChat(&env.subs), Embed: r.subEmbed(&env.subs), Reserve: s.reserveFor(r)}
	r.ctx = wasm.WithCallEnv(ctx, &env.call)
	r.refs.Store(1)
	return r
}

// Keep takes a reference for what outlives the entry point (a stream):
// the Request is released when every reference is closed.
func (r *Request) Keep() { r.refs.Add(1) }

// AddCloser has c closed by Close, after what the Request holds itself.
// Not safe for concurrent use: call it before Run hands the Request on.
func (r *Request) AddCloser(c io.Closer) { r.closers = append(r.closers, c) }

// Close releases what the Request holds once its last reference is
// closed: its server tools, its pipelines (module versions pinned), its
// context, what is left of its sub-requests' reservation, its admission
// (the rate limits' concurrent slot and token count), then the closers.
// Every way a request ends passes here.
func (r *Request) Close() {
	if r.refs.Add(-1) != 0 {
		return
	}
	r.set.Release()
	r.pl.Release()
	if r.cancel != nil {
		r.cancel()
	}
	if r.parent == nil {
		r.group.release() // a sub-request draws on its parent's
	}
	r.fees.env.Release() // normally released once its dispatch reserved
	r.fees.release()
	r.adm.End()
	for i := len(r.closers) - 1; i >= 0; i-- {
		_ = r.closers[i].Close()
	}
}

// Outcome is what Run produced: a JSON answer (Body), an event stream
// (Stream, or Events when it is complete already), or an error with the
// service_metadata to send beside it.
type Outcome struct {
	Body   []byte
	Events []byte // a complete SSE body (a plugin's answer to a streaming request)
	Stream Stream
	Err    *apierr.Error
	Meta   *wire.Metadata // with Err
	// Charged: the answer names the generation (X-Generation-Id): it was
	// served, or it failed after its plugins' sub-requests were charged
	// (their records are <id>-sub<n>).
	Charged bool
	// Native: Body, or the Stream's events, are the provider's answer in
	// the API of Request.Native, not chat's.
	Native bool
	// Cache is the X-Cache header: HIT or MISS when the response cache
	// ran (cache.go), "" when it did not.
	Cache string
}

// Stream is an SSE response that outlives Run: a *Pump, which the
// transport pulls, or a Pusher, which writes to it. Either holds a
// reference to the Request (Keep) and closes it when the stream ends.
type Stream interface{ sse() }

// Pusher is a Stream that writes itself to w, on a goroutine of the
// transport's (fasthttp's body stream writer), until it ends.
type Pusher interface {
	Stream
	Push(w *bufio.Writer)
}

// fail is the Outcome of an error.
func fail(e *apierr.Error, meta *wire.Metadata) Outcome { return Outcome{Err: e, Meta: meta} }
