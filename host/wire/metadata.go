package wire

import (
	"encoding/json"

	"github.com/tidwall/sjson"
)

// Metadata is service_metadata (spec 2.2): how the gateway served a request.
// It is built by routing (route.Plan.Metadata) and completed by the
// pipeline's stages.
type Metadata struct {
	Attempt   int        `json:"attempt"`
	Endpoints *Endpoints `json:"endpoints,omitempty"`
	IsBYOK    bool       `json:"is_byok"`
	// Pipeline lists the plugin stages that ran, in order; each is the
	// plugin's own summary object plus name, hook, action and module.
	Pipeline  []map[string]any `json:"pipeline"`
	Region    string           `json:"region"`
	Requested string           `json:"requested"`
	Strategy  string           `json:"strategy"`
	Summary   string           `json:"summary"`
	// MaxOutputTokens is set when the request's max output was above the
	// serving endpoint's maximum and was clamped to it.
	MaxOutputTokens *Clamp `json:"max_output_tokens,omitempty"`
	// Unsupported lists the request's options the gateway accepted and
	// ignored ("web.mode": plugin options OpenRouter's SDKs send).
	Unsupported []string `json:"unsupported,omitempty"`
	// Cache is the response cache's verdict when it ran: status (hit,
	// miss, bypass), mode, and for a hit similarity, age_seconds and
	// original_generation (docs/response-cache.md).
	Cache map[string]any `json:"cache,omitempty"`
	// Name is the member Set writes: "service_metadata" when empty, or
	// OpenRouter's "openrouter_metadata" for a client that asked with its
	// header.
	Name string `json:"-"`
}

// Clamp is a requested max output and the endpoint maximum sent instead.
type Clamp struct {
	Requested int `json:"requested"`
	ClampedTo int `json:"clamped_to"`
}

// Endpoints lists the endpoints routing considered.
type Endpoints struct {
	Available []Endpoint `json:"available"`
	Total     int        `json:"total"`
}

// Endpoint is one considered endpoint.
type Endpoint struct {
	Model    string `json:"model"`
	Provider string `json:"provider"`
	Selected bool   `json:"selected"`
}

// PluginAnswered is the metadata of a request the plugin pipeline stopped
// or answered before routing.
func PluginAnswered(requested string, stages []map[string]any) *Metadata {
	return &Metadata{Requested: requested, Pipeline: stages, Strategy: "plugin",
		Summary: "answered by the plugin pipeline before routing"}
}

// WithStages returns m with the pipeline's stages (m may be nil: the caller
// did not ask for metadata).
func (m *Metadata) WithStages(stages []map[string]any) *Metadata {
	if m != nil && stages != nil {
		m.Pipeline = stages
	}
	return m
}

// Set writes m as the service_metadata member of body (m.Name's); a nil m
// leaves body as it is.
func (m *Metadata) Set(body []byte) []byte {
	if m == nil {
		return body
	}
	name := m.Name
	if name == "" {
		name = "service_metadata"
	}
	body, _ = sjson.SetRawBytes(body, name, m.JSON())
	return body
}

// JSON is m as a JSON object, or nil for a nil m.
func (m *Metadata) JSON() json.RawMessage {
	if m == nil {
		return nil
	}
	if m.Pipeline == nil {
		m.Pipeline = []map[string]any{}
	}
	b, _ := json.Marshal(m)
	return b
}
