package config

import "time"

// Limits protect the process itself from its clients: descriptors, memory
// and time held by connections and requests that may never authenticate.
// Zero values take the defaults below (docs/security.md explains each).
type Limits struct {
	// MaxConnections caps open client connections; 0 = derived from the
	// descriptor limit (which the gateway raises to its hard limit at
	// start): half of what is left of 80% of it after a reserve of 128, so
	// each client connection can have an upstream connection too.
	MaxConnections int `yaml:"max_connections"`
	// MaxConnectionsPerIP caps open connections from one client address
	// (an IPv6 client by its /64), loopback ones included; 0 = a tenth of
	// MaxConnections (at least 8), binding once half of MaxConnections is
	// in use; -1 = no per-address cap (behind a reverse proxy, local or
	// remote); a value set here binds at any load.
	MaxConnectionsPerIP int `yaml:"max_connections_per_ip"`
	// HeaderTimeout bounds how long a new connection may take to send its
	// request line and headers (and, while idle, its next request after
	// IdleTimeout); a connection that sends nothing is closed after it.
	HeaderTimeout Duration `yaml:"header_timeout"`
	// BodyTimeout bounds how long reading one request body may take.
	BodyTimeout Duration `yaml:"body_timeout"`
	// IdleTimeout closes a keep-alive connection with no next request.
	IdleTimeout Duration `yaml:"idle_timeout"`
	// MaxBodyBytesInFlight bounds the request body bytes held at once across
	// all connections (read and being handled); a request whose body would
	// pass it gets 503 with Retry-After.
	MaxBodyBytesInFlight int64 `yaml:"max_body_bytes_in_flight"`
	// MaxRequestsInFlight sheds requests (503 + Retry-After) while this many
	// are being handled; 0 = 4096, -1 = no bound.
	MaxRequestsInFlight int64 `yaml:"max_requests_in_flight"`
	// MaxHeapBytes sheds requests while the Go heap holds more than this;
	// 0 = 90% of GOMEMLIMIT when it is set, else no bound.
	MaxHeapBytes int64 `yaml:"max_heap_bytes"`
	// MaxUpstreamBodyBytes bounds a non-streaming upstream answer; a larger
	// one is a 502. 0 = 64 MiB.
	MaxUpstreamBodyBytes int `yaml:"max_upstream_body_bytes"`
	// MaxToolCallsPerTurn bounds the tool calls of one upstream answer in
	// the server-tool loop, where the gateway answers, records and sends
	// back every call: an answer with more is a 502 naming this limit (the
	// upstream's fault; another endpoint may answer). 0 =
	// DefaultMaxToolCallsPerTurn.
	MaxToolCallsPerTurn int `yaml:"max_tool_calls_per_turn"`
	// MaxToolFeePerCall is the most one server-tool call (or one plugin
	// in a request) may charge, in dollars: a larger reported fee is
	// charged at it and recorded as an anomaly; the server-tool loop
	// holds it for every call of a turn before running them, and a
	// request holds it for each plugin that may charge before its
	// plugins run (a manifest's lower max_fee instead). 0 =
	// DefaultMaxToolFeePerCall.
	MaxToolFeePerCall float64 `yaml:"max_tool_fee_per_call"`
	// MaxSubRequestCost is the most one plugin's chat and embed
	// sub-requests may cost in a request, in dollars, unless its manifest
	// declares a lower max_sub_cost: the request holds it for each such
	// plugin before its plugins (the router first) run, and a sub-request
	// that does not fit what is left is refused with 402. A plugin that
	// reserves its calls first (chat_reserve, fusion) holds them there.
	// 0 = DefaultMaxSubRequestCost.
	MaxSubRequestCost float64 `yaml:"max_sub_request_cost"`
}

// DefaultMaxSubRequestCost is limits.max_sub_request_cost's default,
// $0.25: a classifier call (auto-router), a Llama Guard check or a few
// vision pages at small-model prices, held per plugin that may make
// sub-requests before it runs.
const DefaultMaxSubRequestCost = 0.25

// DefaultMaxToolCallsPerTurn is limits.max_tool_calls_per_turn's default:
// far above the parallel calls models make (a handful, rarely dozens).
const DefaultMaxToolCallsPerTurn = 128

// DefaultMaxToolFeePerCall is limits.max_tool_fee_per_call's default, $1:
// some 50 times the dearest per-call price of the search and fetch APIs
// tools wrap ($0.005–$0.02 a request), so no honest fee meets it, while a
// broken or hostile module takes at most $1 a call — and a turn holds at
// most $1 per call it runs (8 by default) before running them.
const DefaultMaxToolFeePerCall = 1.0

func (l *Limits) fillDefaults() {
	if l.HeaderTimeout == 0 {
		l.HeaderTimeout = Duration(10 * time.Second)
	}
	if l.BodyTimeout == 0 {
		l.BodyTimeout = Duration(2 * time.Minute)
	}
	if l.IdleTimeout == 0 {
		l.IdleTimeout = Duration(time.Minute)
	}
	if l.MaxBodyBytesInFlight == 0 {
		l.MaxBodyBytesInFlight = 256 << 20
	}
	if l.MaxRequestsInFlight == 0 {
		l.MaxRequestsInFlight = 4096
	}
	if l.MaxUpstreamBodyBytes == 0 {
		l.MaxUpstreamBodyBytes = 64 << 20
	}
	if l.MaxToolCallsPerTurn == 0 {
		l.MaxToolCallsPerTurn = DefaultMaxToolCallsPerTurn
	}
	if l.MaxToolFeePerCall == 0 {
		l.MaxToolFeePerCall = DefaultMaxToolFeePerCall
	}
	if l.MaxSubRequestCost == 0 {
		l.MaxSubRequestCost = DefaultMaxSubRequestCost
	}
}
