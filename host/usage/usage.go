// Package usage is the vocabulary of what a request used and what it
// cost: token counts (Usage), money (Nanos, Cost, Fee) and the record a
// settled request leaves (Generation). The ledger (host/billing) produces
// these and host/wire writes them into answers; both import this package
// and neither the other, so what reads a response's usage does not pull in
// the ledger and its store drivers (issue 30 §5).
package usage

import "time"

// Usage is what one upstream call consumed, in the OpenAI convention:
// PromptTokens includes CachedTokens and CompletionTokens includes
// ReasoningTokens.
type Usage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	ReasoningTokens  int64 `json:"reasoning_tokens,omitempty"`
	CachedTokens     int64 `json:"cached_tokens,omitempty"`
	AudioTokens      int64 `json:"audio_tokens,omitempty"`
	Images           int64 `json:"images,omitempty"`   // billed per image
	Requests         int64 `json:"requests,omitempty"` // billed per request; 1 for an ordinary call
	// Estimated is true when the gateway counted the tokens itself because
	// the upstream reported none.
	Estimated bool `json:"estimated,omitempty"`
	// ZeroReported is true when the upstream reported zero prompt (or
	// completion) tokens for what it was sent (or generated), and the
	// gateway counted them instead (Generation.Anomaly says so).
	ZeroReported bool `json:"upstream_zero_usage,omitempty"`
}

// TotalTokens is prompt plus completion.
func (u Usage) TotalTokens() int64 { return u.PromptTokens + u.CompletionTokens }

// Add sums two usages (failed billed attempts plus the final one).
func (u Usage) Add(v Usage) Usage {
	return Usage{
		PromptTokens:     u.PromptTokens + v.PromptTokens,
		CompletionTokens: u.CompletionTokens + v.CompletionTokens,
		ReasoningTokens:  u.ReasoningTokens + v.ReasoningTokens,
		CachedTokens:     u.CachedTokens + v.CachedTokens,
		AudioTokens:      u.AudioTokens + v.AudioTokens,
		Images:           u.Images + v.Images,
		Requests:         u.Requests + v.Requests,
		Estimated:        u.Estimated || v.Estimated,
		ZeroReported:     u.ZeroReported || v.ZeroReported,
	}
}

// Cost is a charge and its breakdown; Total is exactly the sum of the parts.
type Cost struct {
	Total      Nanos `json:"total"`
	Prompt     Nanos `json:"prompt"`
	CacheRead  Nanos `json:"cache_read"`
	Completion Nanos `json:"completion"`
	Reasoning  Nanos `json:"reasoning"`
	Audio      Nanos `json:"audio"`
	Request    Nanos `json:"request"`
	Image      Nanos `json:"image"`
}

// Add sums two costs part by part.
func (c Cost) Add(d Cost) Cost {
	return Cost{
		Total:      AddSat(c.Total, d.Total),
		Prompt:     AddSat(c.Prompt, d.Prompt),
		CacheRead:  AddSat(c.CacheRead, d.CacheRead),
		Completion: AddSat(c.Completion, d.Completion),
		Reasoning:  AddSat(c.Reasoning, d.Reasoning),
		Audio:      AddSat(c.Audio, d.Audio),
		Request:    AddSat(c.Request, d.Request),
		Image:      AddSat(c.Image, d.Image),
	}
}

// Fee is a charge beside the tokens: a server tool's calls made during the
// request (a search engine's per-request price, a tool module's cost).
type Fee struct {
	Tool  string `json:"tool"`
	Calls int    `json:"calls"`
	Cost  Nanos  `json:"cost"`
}

// Attribution is the app a request came from, as its client named it in
// OpenRouter's attribution headers (openrouter.ai/docs, "App
// Attribution"). The values are the client's word: recorded and shown as
// text, never trusted.
type Attribution struct {
	Referer    string   `json:"http_referer,omitempty"`
	Title      string   `json:"app_title,omitempty"`
	Categories []string `json:"app_categories,omitempty"`
}

// Generation is the record every reserved request leaves, keyed by its id.
type Generation struct {
	ID           string `json:"id"`
	AccountID    string `json:"account_id"`
	KeyHash      string `json:"key_hash"`
	Model        string `json:"model"`
	Provider     string `json:"provider_name"`
	Status       string `json:"status"`
	FinishReason string `json:"finish_reason,omitempty"`
	Streamed     bool   `json:"streamed"`
	Usage        Usage  `json:"usage"`
	Cost         Cost   `json:"cost"` // of the final attempt
	Attempts     int    `json:"attempts"`
	FailedCost   Nanos  `json:"failed_attempts_cost"` // billed failed attempts
	Charged      Nanos  `json:"total_cost"`           // debited: Cost.Total + FailedCost, capped (see Uncollected)
	Uncollected  Nanos  `json:"uncollected"`          // cost beyond the hold, never charged (see Anomaly)
	// Insured is the inference cost waived by zero-completion insurance
	// (billing.Insured): the answer produced no completion tokens and its
	// finish reason is empty or "error". Tool fees are never insured.
	// Charged + Uncollected + Insured = Cost.Total + FailedCost + FeesCost.
	Insured   Nanos `json:"insured,omitempty"`
	Held      Nanos `json:"held"` // the hold at settlement
	LatencyMs int64 `json:"latency_ms"`
	TTFTMs    int64 `json:"time_to_first_token_ms,omitempty"`
	// PluginUs is the wall time of the request's plugin hook calls (µs),
	// what tenants' module time is accounted by.
	PluginUs int64  `json:"plugin_us,omitempty"`
	Error    string `json:"error,omitempty"`
	// Fees itemise the server-tool fees charged with this generation
	// (AddFees); FeesCost is their sum, included in Charged.
	Fees     []Fee `json:"tool_fees,omitempty"`
	FeesCost Nanos `json:"tool_fees_cost,omitempty"`
	// Anomaly says why the cost went past the hold (Uncollected): the
	// upstream reported more usage than the request could have produced.
	Anomaly string `json:"upstream_anomaly,omitempty"`
	// CacheHitOf is, for an answer the response cache served, the
	// generation whose answer it was (docs/response-cache.md); the record's
	// usage is that generation's and its charge the hit's fee.
	CacheHitOf string `json:"cache_hit_of,omitempty"`
	// Attribution is what the client said about itself in OpenRouter's
	// attribution headers (HTTP-Referer, X-OpenRouter-Title or X-Title,
	// X-OpenRouter-Categories), bounded; plain text, never markup.
	Attribution
	CreatedAt time.Time `json:"created_at"`
	SettledAt time.Time `json:"settled_at"`
}
