package route

import (
	"strconv"
	"strings"

	"github.com/switchyard/switchyard/host/catalog"
	"github.com/switchyard/switchyard/host/wire"
)

// Metadata builds the service_metadata object of spec 2.2 for a response
// served by selected on the attempt-th attempt (1-based). requested is the
// model the caller asked for; selected may be nil when no attempt
// succeeded. Its pipeline is empty: the caller adds the stages that ran.
func (p *Plan) Metadata(requested string, selected *catalog.Endpoint, attempt int) *wire.Metadata {
	avail := make([]wire.Endpoint, 0, len(p.Available))
	for _, ep := range p.Available {
		if ep == nil || ep.Provider == nil {
			continue // a broken catalog entry, never routed to
		}
		avail = append(avail, wire.Endpoint{Model: p.modelOf(ep), Provider: providerSlug(ep), Selected: ep == selected})
	}
	region := ""
	if selected != nil && selected.Provider != nil {
		region = selected.Provider.Region
	}
	return &wire.Metadata{
		Attempt:   attempt,
		Endpoints: &wire.Endpoints{Available: avail, Total: len(avail)},
		Pipeline:  []map[string]any{},
		Region:    region,
		Requested: requested,
		Strategy:  p.Strategy,
		Summary:   p.Summary(requested, selected, attempt),
	}
}

// Summary is the one-line, human-readable description of a routing
// decision, e.g. "openai/gpt-4o via openai (load-balance, attempt 1 of 3)".
func (p *Plan) Summary(requested string, selected *catalog.Endpoint, attempt int) string {
	var b strings.Builder
	if selected == nil {
		b.WriteString(requested)
		// attempt is how many were made: fewer than planned when an error
		// was not worth retrying or fallbacks were off.
		b.WriteString(": no endpoint succeeded (")
		b.WriteString(p.Strategy)
		b.WriteString(", ")
		b.WriteString(strconv.Itoa(attempt))
		if attempt == 1 {
			b.WriteString(" attempt)")
		} else {
			b.WriteString(" attempts)")
		}
		return b.String()
	}
	model := p.modelOf(selected)
	b.WriteString(model)
	b.WriteString(" via ")
	b.WriteString(providerSlug(selected))
	b.WriteString(" (")
	if base, _ := SplitVariant(requested); model != requested && model != base { // a variant is the model itself
		b.WriteString("fallback from ")
		b.WriteString(requested)
		b.WriteString(", ")
	}
	b.WriteString(p.Strategy)
	b.WriteString(", attempt ")
	b.WriteString(strconv.Itoa(attempt))
	b.WriteString(" of ")
	b.WriteString(strconv.Itoa(len(p.Attempts)))
	b.WriteString(")")
	return b.String()
}

// modelOf finds the id of the requested model ep belongs to.
func (p *Plan) modelOf(ep *catalog.Endpoint) string {
	for _, m := range p.models {
		for _, e := range m.Endpoints {
			if e == ep {
				return m.ID
			}
		}
	}
	if ep.Model != nil {
		return ep.Model.ID
	}
	return ""
}

func providerSlug(ep *catalog.Endpoint) string {
	if ep.Provider == nil {
		return ""
	}
	return ep.Provider.Slug
}
