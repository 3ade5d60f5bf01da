package websearch

import (
	"strconv"
	"strings"

	"github.com/switchyard/switchyard/sdk"
	"github.com/tidwall/gjson"
)

// ToolName is the function name the model sees for service:web_search.
const ToolName = "web_search"

// toolOptions reads the request's tools[] entry parameters (OpenRouter's
// names allowed_domains / excluded_domains, and the plugin's names too).
func toolOptions(p gjson.Result) Options {
	o := Options{
		Engine:       p.Get("engine").Str,
		Include:      stringsOf(p.Get("allowed_domains")),
		Exclude:      stringsOf(p.Get("excluded_domains")),
		MaxResults:   int(p.Get("max_results").Int()),
		MaxUses:      int(p.Get("max_uses").Int()),
		UserLocation: p.Get("user_location"),
	}
	o.Include = append(o.Include, stringsOf(p.Get("include_domains"))...)
	o.Exclude = append(o.Exclude, stringsOf(p.Get("exclude_domains"))...)
	return o
}

// fill takes from p (the request's plugins[] item for web, which the host
// hands the tool as ctx.config) what the tool's parameters leave unset.
func (o *Options) fill(p Options) {
	if o.Engine == "" {
		o.Engine = p.Engine
	}
	if len(o.Include) == 0 {
		o.Include = p.Include
	}
	if len(o.Exclude) == 0 {
		o.Exclude = p.Exclude
	}
	if o.MaxResults == 0 {
		o.MaxResults = p.MaxResults
	}
	if o.MaxUses == 0 {
		o.MaxUses = p.MaxUses
	}
	if !o.UserLocation.Exists() {
		o.UserLocation = p.UserLocation
	}
}

func toolError(out *sdk.Out, msg string) {
	out.Field(append(appendString([]byte(`{"error":`), msg), '}'))
	out.Field(nil) // free
}

// ToolCall runs service:web_search: in ctx, tool name, arguments
// ({"query": "…"}); out the result JSON the model sees, and the engine's
// fee in dollars. Failures are results ({"error": "…"}) the model can read,
// never a failed call. max_uses refuses the calls past it: the count is
// ctx.calls (how many times the tool already ran in this request) when the
// host gives it, else the module's own count in its kv store, keyed by
// ctx.request_id.
func (m *Module) ToolCall(in *sdk.In, out *sdk.Out) error {
	ctx, name, args := in.Field(0), in.String(1), in.Field(2)
	if name != ToolName {
		toolError(out, "the web module has no tool "+strconv.Quote(name))
		return nil
	}
	s, err := ParseSettings(sdk.Get(ctx, "settings"))
	if err != nil {
		return err
	}
	o := toolOptions(sdk.Get(ctx, "parameters"))
	o.fill(pluginOptions(sdk.Get(ctx, "config")))
	if err := o.Resolve(s); err != nil {
		toolError(out, "web_search: "+err.Error())
		return nil
	}
	if o.MaxUses > 0 {
		calls := -1
		if c := sdk.Get(ctx, "calls"); c.Exists() {
			calls = int(c.Int())
		} else if id := sdk.Get(ctx, "request_id").Str; m.Uses != nil && id != "" {
			n, err := m.Uses(id)
			if err != nil {
				toolError(out, "web_search: cannot count this request's searches for max_uses: "+err.Error())
				return nil
			}
			calls = n
		}
		if calls >= o.MaxUses {
			toolError(out, "web_search: max_uses ("+strconv.Itoa(o.MaxUses)+") reached for this request; answer with the results you already have")
			return nil
		}
	}
	if !gjson.ValidBytes(args) {
		toolError(out, "web_search: the arguments are not a JSON object; send {\"query\": \"…\"}")
		return nil
	}
	a := gjson.ParseBytes(args)
	query := strings.TrimSpace(a.Get("query").Str)
	if query == "" {
		toolError(out, "web_search: arguments.query is required: the words to search for")
		return nil
	}
	if n := int(a.Get("max_results").Int()); n > 0 && n < o.MaxResults {
		o.MaxResults = n // the model may ask for fewer, never more than the request allows
	}
	if o.Engine == EngineNative {
		// A provider that searches itself never calls this tool; a model
		// that does gets the operator's default engine.
		o.Engine = s.Engine
		if o.Engine == EngineNative {
			o.Engine = EngineDemo
		}
	}
	rs, err := Search(m.HTTP, s, o, query)
	if err != nil {
		toolError(out, "web_search: "+err.Error())
		return nil
	}
	if rs == nil {
		rs = []Result{}
	}
	b := appendString([]byte(`{"query":`), truncate(query, maxQuery))
	b = appendString(append(b, `,"engine":`...), o.Engine)
	b = append(appendResults(append(b, `,"results":`...), rs), '}')
	out.Field(b)
	fee := s.For(o.Engine).Fee
	if f, err := strconv.ParseFloat(fee, 64); err != nil || f <= 0 {
		fee = ""
	}
	out.FieldString(fee)
	return nil
}
