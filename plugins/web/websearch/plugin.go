package websearch

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/sdk"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// DefaultPrompt leads the injected results unless the request gives
// search_prompt. (The module has no clock, so unlike OpenRouter's it does
// not say when the search ran.)
const DefaultPrompt = "A web search was conducted for this conversation. Incorporate the following web search results into your response.\n\n" +
	"IMPORTANT: Cite them using markdown links named using the domain of the source.\nExample: [nytimes.com](https://nytimes.com/some-page)."

// Module is the web module's hooks over the host's services.
type Module struct {
	HTTP HTTPFunc
	// Uses counts a tool call of request id and returns how many calls
	// came before it (the module's kv store, inside the module), for
	// max_uses when the host's ctx does not say (ctx.calls). Nil: no
	// counting beyond ctx.calls.
	Uses func(requestID string) (int, error)
}

// state is what pre_request hands to the post hooks of the same request
// (ctx.state: {"results": […]}, or {"native": true}); post_chunk adds
// "stream", what each choice has said so far (choiceScan).
type state struct {
	Native  bool
	Results []Result
}

// choiceScan follows one streamed choice: N code points so far; Text, the
// last part of the content (from code point Base), where a citation may
// still be completing; Done, the end of the last citation recorded; Spans,
// the inline citations found ([result, start, end]).
type choiceScan struct {
	N, Base, Done int
	Text          string
	Spans         [][3]int
}

// maxTail bounds the text a stream keeps for citations split across
// chunks: a Markdown link longer than this is not recognised.
const maxTail = 2048

func pluginOptions(cfg gjson.Result) Options {
	return Options{
		Engine:       cfg.Get("engine").Str,
		Include:      stringsOf(cfg.Get("include_domains")),
		Exclude:      stringsOf(cfg.Get("exclude_domains")),
		MaxResults:   int(cfg.Get("max_results").Int()),
		MaxUses:      int(cfg.Get("max_uses").Int()),
		SearchPrompt: cfg.Get("search_prompt").Str,
		UserLocation: cfg.Get("user_location"),
	}
}

// summary is the pipeline stage object; data holds key, raw JSON value
// pairs. (Built by hand, like every JSON on the hot paths: encoding/json's
// reflection costs milliseconds inside a Go guest.)
func summary(text string, data ...string) []byte {
	b := append([]byte(nil), `{"type":"plugin","summary":`...)
	b = appendString(b, text)
	b = append(b, `,"data":{`...)
	for i := 0; i+1 < len(data); i += 2 {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, data[i])
		b = append(b, ':')
		b = append(b, data[i+1]...)
	}
	return append(b, "}}"...)
}

// withCost adds the engine's fee for the search as the stage's "cost",
// which the host charges with the request (docs/plugins.md, "Fees"). A
// free engine (the demo, a self-hosted SearXNG) adds nothing.
func withCost(summary []byte, fee string) []byte {
	if fee == "" || strings.Trim(fee, "0.") == "" {
		return summary
	}
	b := append(summary[:len(summary)-1:len(summary)-1], `,"cost":`...)
	b = appendString(b, fee)
	return append(b, '}')
}

// appendResults writes rs as a JSON array of result objects.
func appendResults(b []byte, rs []Result) []byte {
	b = append(b, '[')
	for i, r := range rs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"url":`...)
		b = appendString(b, r.URL)
		b = append(b, `,"title":`...)
		b = appendString(b, r.Title)
		b = append(b, `,"content":`...)
		b = appendString(b, r.Content)
		if r.Published != "" {
			b = append(b, `,"published_date":`...)
			b = appendString(b, r.Published)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

// PreRequest searches once on the conversation (the query is the last user
// message) and injects the results as a system message before the last
// user message. With engine native it leaves the search to the provider.
func (m *Module) PreRequest(in *sdk.In, out *sdk.Out) error {
	ctx, body := in.Field(0), in.Field(1)
	s, err := ParseSettings(sdk.Get(ctx, "settings"))
	if err != nil {
		return err // the operator's configuration: a 502 naming the module
	}
	o := pluginOptions(sdk.Get(ctx, "config"))
	if err := o.Resolve(s); err != nil {
		out.FieldString(abi.ActionBlock)
		b, _ := json.Marshal(map[string]any{"code": 400, "message": "plugins: web.engine: " + err.Error(), "metadata": map[string]any{"option": "engine"}})
		out.Field(b)
		out.Field(nil)
		return nil
	}
	data := []string{"engine", sdk.Quote(o.Engine)}
	if o.Engine == EngineNative {
		nb, err := native(body, o)
		if err != nil {
			return err
		}
		out.FieldString(abi.ActionContinue)
		out.Field(nb)
		out.Field(summary("native search: left to the provider", data...))
		out.FieldString(`{"native":true}`)
		return nil
	}
	msgs := sdk.Get(body, "messages")
	last := lastUser(msgs)
	if last < 0 {
		out.FieldString(abi.ActionContinue)
		out.Field(nil)
		out.Field(summary("no user message to search for", data...))
		return nil
	}
	query := sdk.ContentText(msgs.Get(strconv.Itoa(last) + ".content"))
	data = append(data, "query", sdk.Quote(truncate(query, maxQuery)))
	rs, err := Search(m.HTTP, s, o, query)
	if err != nil {
		// A search outage does not fail the request: the model answers
		// without results, and the stage says why.
		data = append(data, "error", sdk.Quote(err.Error()))
		out.FieldString(abi.ActionContinue)
		out.Field(nil)
		out.Field(summary("web search failed: "+err.Error(), data...))
		return nil
	}
	data = append(data, "results", strconv.Itoa(len(rs)), "fee", sdk.Quote(s.For(o.Engine).Fee))
	if len(rs) == 0 {
		out.FieldString(abi.ActionContinue)
		out.Field(nil)
		out.Field(withCost(summary("web search ("+o.Engine+"): no results", data...), s.For(o.Engine).Fee))
		return nil
	}
	prompt := o.SearchPrompt
	if prompt == "" {
		prompt = DefaultPrompt
	}
	nb, err := Inject(body, last, prompt, rs)
	if err != nil {
		return err
	}
	st := append(appendResults([]byte(`{"results":`), rs), '}')
	out.FieldString(abi.ActionContinue)
	out.Field(nb)
	out.Field(withCost(summary("web search ("+o.Engine+"): "+strconv.Itoa(len(rs))+" results injected", data...), s.For(o.Engine).Fee))
	out.Field(st)
	return nil
}

// lastUser is the index of the last user message, or -1.
func lastUser(msgs gjson.Result) int {
	i, last := 0, -1
	msgs.ForEach(func(_, m gjson.Result) bool {
		if m.Get("role").Str == "user" {
			last = i
		}
		i++
		return true
	})
	return last
}

// ResultsText is the injected message's text: the prompt, then each result
// numbered with its title, URL, date and content.
func ResultsText(prompt string, rs []Result) string {
	var b strings.Builder
	b.WriteString(prompt)
	for i, r := range rs {
		b.WriteString("\n\n[")
		b.WriteString(strconv.Itoa(i + 1))
		b.WriteString("] ")
		b.WriteString(r.Title)
		b.WriteString("\nURL: ")
		b.WriteString(r.URL)
		if r.Published != "" {
			b.WriteString("\nPublished: ")
			b.WriteString(r.Published)
		}
		if r.Content != "" {
			b.WriteString("\n")
			b.WriteString(r.Content)
		}
	}
	return b.String()
}

// Inject returns body with a system message holding the results inserted
// before message last.
func Inject(body []byte, last int, prompt string, rs []Result) ([]byte, error) {
	msgs := sdk.Get(body, "messages")
	arr := make([]byte, 0, len(msgs.Raw)+1024)
	arr = append(arr, '[')
	i := 0
	msgs.ForEach(func(_, m gjson.Result) bool {
		if i > 0 {
			arr = append(arr, ',')
		}
		if i == last {
			arr = append(arr, `{"role":"system","content":`...)
			arr = appendString(arr, ResultsText(prompt, rs))
			arr = append(arr, "},"...)
		}
		arr = append(arr, m.Raw...)
		i++
		return true
	})
	arr = append(arr, ']')
	return sjson.SetRawBytes(append([]byte(nil), body...), "messages", arr)
}

// native prepares a request for a provider that searches itself: OpenAI's
// web_search_options (with user_location in OpenAI's shape) unless the
// request has its own. The plugins[] item stays in the request, so the
// adapters read max_uses, include_domains and exclude_domains from it.
func native(body []byte, o Options) ([]byte, error) {
	if sdk.Get(body, "web_search_options").Exists() {
		return nil, nil
	}
	wso := map[string]any{}
	if o.UserLocation.IsObject() {
		approx := map[string]any{}
		for _, k := range []string{"city", "country", "region", "timezone"} {
			if v := o.UserLocation.Get(k); v.Type == gjson.String {
				approx[k] = v.Str
			}
		}
		wso["user_location"] = map[string]any{"type": "approximate", "approximate": approx}
	}
	b, _ := json.Marshal(wso)
	return sjson.SetRawBytes(append([]byte(nil), body...), "web_search_options", b)
}

// readState reads the results pre_request left in ctx.state. (gjson, not
// encoding/json: reflection is slow inside a Go guest.)
func readState(ctx []byte) (state, bool) {
	var st state
	raw := sdk.Get(ctx, "state")
	if !raw.IsObject() {
		return st, false
	}
	st.Native = raw.Get("native").Bool()
	st.Results = resultsOf(raw.Get("results"))
	return st, !st.Native && len(st.Results) > 0
}

// resultsOf reads a JSON array of results.
func resultsOf(a gjson.Result) []Result {
	var rs []Result
	a.ForEach(func(_, r gjson.Result) bool {
		rs = append(rs, Result{URL: r.Get("url").Str, Title: r.Get("title").Str, Content: r.Get("content").Str, Published: r.Get("published_date").Str})
		return true
	})
	return rs
}

// PostResponse adds the url_citation annotations to each choice's message,
// after any the provider gave.
func (m *Module) PostResponse(in *sdk.In, out *sdk.Out) error {
	st, ok := readState(in.Field(0))
	if !ok {
		out.FieldString(abi.ActionContinue)
		out.Field(nil)
		out.Field(nil)
		return nil
	}
	result := in.Field(1)
	var edited []byte
	n := 0
	sdk.Get(result, "choices").ForEach(func(i, ch gjson.Result) bool {
		c := ch.Get("message.content")
		if c.Type != gjson.String {
			return true
		}
		if edited == nil {
			edited = append([]byte(nil), result...)
		}
		edited = setAnnotations(edited, "choices."+i.String()+".message.annotations", ch.Get("message.annotations"), Annotations(c.Str, st.Results))
		n++
		return true
	})
	out.FieldString(abi.ActionContinue)
	out.Field(edited)
	out.Field(summary("cited "+strconv.Itoa(len(st.Results))+" results in "+strconv.Itoa(n)+" choice(s)", "results", strconv.Itoa(len(st.Results))))
	return nil
}

// setAnnotations writes ours after the existing annotations (a JSON array
// or absent) at path.
func setAnnotations(doc []byte, path string, existing gjson.Result, ours []byte) []byte {
	if existing.IsArray() && len(existing.Array()) > 0 {
		merged := append([]byte(nil), existing.Raw[:strings.LastIndexByte(existing.Raw, ']')]...)
		merged = append(merged, ',')
		merged = append(merged, ours[1:]...)
		ours = merged
	}
	doc, _ = sjson.SetRawBytes(doc, path, ours)
	return doc
}

// PostChunk follows each streamed choice's content for inline citations and
// puts the annotations on the delta of the chunk that finishes the choice.
// What it has seen travels in the plugin's state (action continue_state),
// since instances keep nothing between calls. It runs on every chunk, so
// it reads only the results' URLs until a choice finishes, and copies the
// results' JSON into the new state as it came.
func (m *Module) PostChunk(in *sdk.In, out *sdk.Out) error {
	ctx, chunk := in.Field(0), in.Field(1)
	raw := sdk.Get(ctx, "state")
	results := raw.Get("results")
	if raw.Get("native").Bool() || !results.IsArray() {
		out.FieldString(abi.ActionContinue)
		out.Field(chunk)
		return nil
	}
	var urls []Result // URLs only: what scan needs
	results.ForEach(func(_, r gjson.Result) bool {
		urls = append(urls, Result{URL: r.Get("url").Str})
		return true
	})
	var streams map[string]*choiceScan
	changed := false
	var edited []byte // a copy of chunk, once a choice gets annotations
	sdk.Get(chunk, "choices").ForEach(func(j, ch gjson.Result) bool {
		idx := ch.Get("index").String()
		if idx == "" {
			idx = j.String()
		}
		fin := ch.Get("finish_reason")
		final := fin.Exists() && fin.Type != gjson.Null
		text := ch.Get("delta.content").Str
		if text == "" && !final {
			return true
		}
		if streams == nil {
			streams = readStreams(raw.Get("stream"))
		}
		cs := streams[idx]
		if cs == nil {
			cs = &choiceScan{}
			streams[idx] = cs
		}
		cs.Text += text
		cs.N += utf8.RuneCountInString(text)
		for _, sp := range scan(cs.Text, urls) {
			if cs.Base+sp.end <= cs.Done || (!final && sp.bend >= len(cs.Text)) {
				continue // recorded already, or may still grow
			}
			cs.Spans = append(cs.Spans, [3]int{sp.k, cs.Base + sp.start, cs.Base + sp.end})
			cs.Done = cs.Base + sp.end
		}
		if len(cs.Text) > maxTail {
			cut := len(cs.Text) - maxTail
			for cut < len(cs.Text) && !utf8.RuneStart(cs.Text[cut]) {
				cut++
			}
			cs.Base += utf8.RuneCountInString(cs.Text[:cut])
			cs.Text = cs.Text[cut:]
		}
		changed = true
		if final {
			rs := resultsOf(results)
			spans := make([]span, 0, len(cs.Spans))
			for _, s := range cs.Spans {
				if s[0] < len(rs) {
					spans = append(spans, span{k: s[0], start: s[1], end: s[2]})
				}
			}
			ann := append(appendAnnotations([]byte{'['}, rs, spans, cs.N), ']')
			if edited == nil {
				edited = append([]byte(nil), chunk...)
			}
			edited = setAnnotations(edited, "choices."+j.String()+".delta.annotations", ch.Get("delta.annotations"), ann)
		}
		return true
	})
	if !changed {
		out.FieldString(abi.ActionContinue)
		out.Field(chunk)
		return nil
	}
	out.FieldString(abi.ActionContinueState)
	out.Open()
	out.WriteString(`{"results":`)
	out.WriteString(results.Raw)
	out.WriteString(`,"stream":`)
	out.Write(appendStreams(nil, streams))
	out.Byte('}')
	out.Close()
	if edited == nil {
		edited = chunk
	}
	out.Field(edited)
	return nil
}

// appendString appends s as a JSON string literal, copying runs of bytes
// that need no escape at once (a byte-at-a-time loop is what costs inside
// a Go guest).
func appendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// readStreams decodes state.stream: {"<choice>": {"n","base","text","done","spans":[[k,start,end]…]}}.
func readStreams(v gjson.Result) map[string]*choiceScan {
	m := map[string]*choiceScan{}
	v.ForEach(func(k, c gjson.Result) bool {
		cs := &choiceScan{N: int(c.Get("n").Int()), Base: int(c.Get("base").Int()), Text: c.Get("text").Str, Done: int(c.Get("done").Int())}
		c.Get("spans").ForEach(func(_, sp gjson.Result) bool {
			a := sp.Array()
			if len(a) == 3 {
				cs.Spans = append(cs.Spans, [3]int{int(a[0].Int()), int(a[1].Int()), int(a[2].Int())})
			}
			return true
		})
		m[k.String()] = cs
		return true
	})
	return m
}

func appendStreams(b []byte, m map[string]*choiceScan) []byte {
	b = append(b, '{')
	first := true
	for k, cs := range m {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendString(b, k)
		b = append(b, `:{"n":`...)
		b = strconv.AppendInt(b, int64(cs.N), 10)
		b = append(b, `,"base":`...)
		b = strconv.AppendInt(b, int64(cs.Base), 10)
		b = append(b, `,"text":`...)
		b = appendString(b, cs.Text)
		b = append(b, `,"done":`...)
		b = strconv.AppendInt(b, int64(cs.Done), 10)
		b = append(b, `,"spans":[`...)
		for i, sp := range cs.Spans {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '[')
			b = strconv.AppendInt(b, int64(sp[0]), 10)
			b = append(b, ',')
			b = strconv.AppendInt(b, int64(sp[1]), 10)
			b = append(b, ',')
			b = strconv.AppendInt(b, int64(sp[2]), 10)
			b = append(b, ']')
		}
		b = append(b, "]}"...)
	}
	return append(b, '}')
}
