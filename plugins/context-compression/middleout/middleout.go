// Package middleout is the context-compression module's engine: when a
// chat prompt plus the output it asks for does not fit the context of the
// endpoints the request may be routed to, it drops whole messages from the
// middle of the conversation, then truncates the middle of the longest
// remaining texts, until it fits. Models attend least to the middle of a
// long prompt, so that is where losing text costs least.
//
// It keeps the leading system (or developer) messages and the last user
// message with everything after it, and it never separates an assistant
// message that calls tools from the tool messages that answer it: such a
// group is dropped or kept whole. A provider's limit on the number of
// messages is met the same way, which keeps about half of the allowed
// messages from the start and half from the end.
//
// The package is plain Go: the module's main hands it the host's
// tokenizer (count_tokens) and the tests a native one.
package middleout

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// Counter counts text in tokens.
type Counter func(text string) (int, error)

// Window is what the host tells the module about the endpoints the request
// may be routed to (ctx.context): the smallest and largest context length,
// the largest maximum output, and the smallest message-count limit of their
// providers (0 when unknown or none).
type Window struct {
	MinContext  int `json:"min_context"`
	MaxContext  int `json:"max_context"`
	MaxOutput   int `json:"max_output"`
	MaxMessages int `json:"max_messages"`
}

// WindowOf reads ctx.context.
func WindowOf(c gjson.Result) Window {
	return Window{
		MinContext:  int(c.Get("min_context").Int()),
		MaxContext:  int(c.Get("max_context").Int()),
		MaxOutput:   int(c.Get("max_output").Int()),
		MaxMessages: int(c.Get("max_messages").Int()),
	}
}

// Stats describe a prompt: its messages and its tokens (messages, tool
// definitions and the chat framing).
type Stats struct {
	Messages int `json:"messages"`
	Tokens   int `json:"tokens"`
}

// Outcome is what Compress did.
type Outcome struct {
	// Body is the compressed request; nil when it was left unchanged.
	Body          []byte
	Before, After Stats
	// Context is the context length aimed at (the largest available);
	// Reserved the output tokens kept free in it.
	Context, Reserved int
	// Dropped counts removed messages, Truncated shortened texts.
	Dropped, Truncated int
	// Fits is false when even the kept messages, truncated, do not fit.
	Fits bool
	// Counted is false when the prompt was not tokenized because its size
	// alone proves it fits: Before.Tokens and After.Tokens are then that
	// bound, not a count.
	Counted bool
}

// The chat framing of the host's tokenizer (host/tokenize): per message,
// per name, and once for the reply.
const (
	tokensPerMessage = 3
	tokensPerName    = 1
	tokensReplyStart = 3
	// imageTokens is what an input image is taken to cost: the host's
	// bound for a large high-detail image (tokenize.ImageTokensBound).
	imageTokens = 1600
	// bytesPerToken is how the gateway's router estimates a prompt before
	// routing (validate.EstimateTokens: the messages' JSON length / 4).
	// The compressed prompt must fit by that estimate too, or the router
	// would still turn it away.
	bytesPerToken = 4
	// minKeep is the fewest tokens of a text truncation leaves.
	minKeep = 16
	// maxTruncations bounds the truncation phase.
	maxTruncations = 256
)

// Marker replaces the removed middle of a truncated text.
const Marker = "\n\n[… middle of this message removed to fit the model's context …]\n\n"

// text is a truncatable string of a message: its content, or a text part.
type text struct {
	path   string // within the message
	s      string
	tokens int
}

type message struct {
	raw    string
	tokens int
	texts  []text
	unit   int
	kept   bool
}

type state struct {
	msgs              []message
	fixed             int // tool definitions, response schema, reply framing
	tokens, bytes, n  int
	context, reserved int
	maxMessages       int
}

func (s *state) fits() bool {
	if s.maxMessages > 0 && s.n > s.maxMessages {
		return false
	}
	return s.tokens+s.reserved <= s.context && s.estimate()+s.reserved <= s.context
}

// estimate is the router's figure for the kept messages.
func (s *state) estimate() int { return (s.bytes + bytesPerToken - 1) / bytesPerToken }

// excess is how many tokens too many the prompt has by either measure.
func (s *state) excess() (tokens, bytes int) {
	return max(s.tokens+s.reserved-s.context, 0), max(s.estimate()+s.reserved-s.context, 0) * bytesPerToken
}

func (s *state) drop(i int) {
	m := &s.msgs[i]
	if !m.kept {
		return
	}
	m.kept = false
	s.tokens -= m.tokens
	s.bytes -= len(m.raw) + 1 // and its comma
	s.n--
}

// Compress fits body (a chat request) into w's largest context, reserving
// the output it asks for (max_tokens or max_completion_tokens, capped at
// w.MaxOutput). count is the tokenizer.
func Compress(body []byte, w Window, count Counter) (Outcome, error) {
	o := Outcome{Context: w.MaxContext}
	req := gjson.ParseBytes(body)
	msgs := req.Get("messages")
	out := int(max(req.Get("max_tokens").Int(), req.Get("max_completion_tokens").Int()))
	if w.MaxOutput > 0 && out > w.MaxOutput {
		out = w.MaxOutput
	}
	o.Reserved = max(out, 0)
	s := &state{context: w.MaxContext, reserved: o.Reserved, maxMessages: w.MaxMessages, bytes: 2}
	if bound, n, ok := sizeBound(req, msgs); ok && (w.MaxContext <= 0 || bound+o.Reserved <= w.MaxContext) && (w.MaxMessages <= 0 || n <= w.MaxMessages) {
		// Tokenizing costs about as much as the rest of the request's
		// handling in the gateway; a prompt whose size proves it fits
		// needs none.
		o.Before = Stats{Messages: n, Tokens: bound}
		o.After, o.Fits = o.Before, true
		return o, nil
	}
	o.Counted = true
	roles := map[string]int{}
	var err error
	countRole := func(r string) int {
		n, ok := roles[r]
		if !ok && err == nil {
			n, err = count(r)
			roles[r] = n
		}
		return n
	}
	lastUser := -1
	msgs.ForEach(func(_, m gjson.Result) bool {
		mm := message{raw: m.Raw, kept: true, tokens: tokensPerMessage}
		m.ForEach(func(k, v gjson.Result) bool {
			switch k.Str {
			case "role":
				mm.tokens += countRole(v.Str)
				if v.Str == "user" {
					lastUser = len(s.msgs)
				}
			case "name":
				mm.tokens += tokensPerName + countOf(count, v.Str, &err)
			case "content":
				if v.Type == gjson.String {
					mm.texts = append(mm.texts, text{path: "content", s: v.Str})
					return true
				}
				i := 0
				v.ForEach(func(_, p gjson.Result) bool {
					switch t := p.Get("type").Str; {
					case t == "image_url" || t == "input_image":
						mm.tokens += imageTokens
					case p.Get("text").Type == gjson.String:
						mm.texts = append(mm.texts, text{path: "content." + strconv.Itoa(i) + ".text", s: p.Get("text").Str})
					}
					i++
					return true
				})
			case "reasoning":
				if v.Type == gjson.String {
					mm.tokens += countOf(count, v.Str, &err)
				}
			case "tool_calls":
				v.ForEach(func(_, tc gjson.Result) bool {
					mm.tokens += countOf(count, tc.Get("function.name").Str, &err) + countOf(count, tc.Get("function.arguments").Str, &err)
					return true
				})
			}
			return true
		})
		for i := range mm.texts {
			mm.texts[i].tokens = countOf(count, mm.texts[i].s, &err)
			mm.tokens += mm.texts[i].tokens
		}
		s.msgs = append(s.msgs, mm)
		s.tokens += mm.tokens
		s.bytes += len(mm.raw) + 1
		s.n++
		return true
	})
	if len(s.msgs) > 0 {
		s.bytes-- // n-1 commas
	}
	if t := req.Get("tools"); t.IsArray() {
		s.fixed += countOf(count, t.Raw, &err)
	}
	if js := req.Get("response_format.json_schema"); js.Exists() {
		s.fixed += countOf(count, js.Raw, &err)
	}
	if len(s.msgs) > 0 {
		s.fixed += tokensReplyStart
	}
	if err != nil {
		return o, err
	}
	s.tokens += s.fixed
	o.Before = Stats{Messages: s.n, Tokens: s.tokens}
	if s.context <= 0 || s.fits() {
		o.After, o.Fits = o.Before, true
		return o, nil
	}
	units(msgs, s.msgs)

	// The kept ends: the leading system messages, and the last user
	// message with what follows it (the turn being answered). Without a
	// user message, the last unit.
	head := 0
	for head < len(s.msgs) {
		r := gjson.Get(s.msgs[head].raw, "role").Str
		if r != "system" && r != "developer" {
			break
		}
		head++
	}
	tail := lastUser
	if tail < 0 && len(s.msgs) > 0 {
		tail = len(s.msgs) - 1
	}
	if tail >= 0 {
		for tail > 0 && s.msgs[tail-1].unit == s.msgs[tail].unit {
			tail--
		}
	}
	tail = max(tail, head)

	// Phase 1: drop whole units from the middle outwards.
	var middle []int // first message of each unit between head and tail
	for i := head; i < tail; i++ {
		if i == head || s.msgs[i].unit != s.msgs[i-1].unit {
			middle = append(middle, i)
		}
	}
	// The unit dropped each time is the middle one of those left, so the
	// dropped ones are one run [lo, hi) of middle growing from its centre:
	// the next is its right neighbour when as many are left on each side
	// (or more on the right), else its left one. Removing each from the
	// list instead shifted the list each time: quadratic in the units
	// (100,000 messages ran past the module's time limit).
	lo, hi := len(middle)/2, len(middle)/2
	for (lo > 0 || hi < len(middle)) && !s.fits() {
		var k int
		if lo > len(middle)-hi {
			lo--
			k = lo
		} else {
			k = hi
			hi++
		}
		u := s.msgs[middle[k]].unit
		for i := middle[k]; i < len(s.msgs) && s.msgs[i].unit == u; i++ {
			s.drop(i)
			o.Dropped++
		}
	}

	// Phase 2: cut the middle out of the longest texts still kept.
	for range maxTruncations {
		if s.fits() || (s.maxMessages > 0 && s.n > s.maxMessages) {
			break
		}
		mi, ti := s.longest()
		if mi < 0 {
			break
		}
		if err := s.truncate(mi, ti, count); err != nil {
			return o, err
		}
		o.Truncated++
	}
	o.Fits = s.fits()
	o.After = Stats{Messages: s.n, Tokens: s.tokens}
	arr := make([]byte, 0, s.bytes)
	arr = append(arr, '[')
	for _, m := range s.msgs {
		if !m.kept {
			continue
		}
		if len(arr) > 1 {
			arr = append(arr, ',')
		}
		arr = append(arr, m.raw...)
	}
	arr = append(arr, ']')
	o.Body, err = sjson.SetRawBytes(append([]byte(nil), body...), "messages", arr)
	return o, err
}

// sizeBound is an upper bound of the prompt's tokens from its size, and
// its message count: every token of the gateway's tokenizers covers at
// least one byte of text, and a JSON string is at least as long as its
// text. ok is false when an image part may cost more than its bytes.
func sizeBound(req, msgs gjson.Result) (bound, n int, ok bool) {
	if strings.Contains(msgs.Raw, "image") {
		return 0, 0, false
	}
	msgs.ForEach(func(_, _ gjson.Result) bool { n++; return true })
	bound = len(msgs.Raw) + n*(tokensPerMessage+tokensPerName) + tokensReplyStart
	bound += len(req.Get("tools").Raw) + len(req.Get("response_format.json_schema").Raw)
	return bound, n, true
}

func countOf(count Counter, s string, err *error) int {
	if s == "" || *err != nil {
		return 0
	}
	n, e := count(s)
	if e != nil {
		*err = e
	}
	return n
}

// units numbers the messages so that an assistant message with tool calls
// and the tool messages answering those calls share a number.
func units(msgs gjson.Result, ms []message) {
	u := 0
	open := map[string]bool{}
	for i := range ms {
		m := gjson.Parse(ms[i].raw)
		if m.Get("role").Str == "tool" && open[m.Get("tool_call_id").Str] {
			ms[i].unit = u
			continue
		}
		u++
		ms[i].unit = u
		clear(open)
		if m.Get("role").Str == "assistant" {
			m.Get("tool_calls").ForEach(func(_, tc gjson.Result) bool {
				open[tc.Get("id").Str] = true
				return true
			})
		}
	}
}

// longest finds the kept text with the most tokens that can still shrink.
func (s *state) longest() (mi, ti int) {
	mi, ti = -1, -1
	best := minKeep
	for i := range s.msgs {
		if !s.msgs[i].kept {
			continue
		}
		for j, t := range s.msgs[i].texts {
			if t.tokens > best && len(t.s) > len(Marker)+2*minKeep {
				mi, ti, best = i, j, t.tokens
			}
		}
	}
	return mi, ti
}

// truncate removes the middle of text ti of message mi: as much as the
// excess asks, down to minKeep tokens, replaced with Marker.
func (s *state) truncate(mi, ti int, count Counter) error {
	m := &s.msgs[mi]
	t := &m.texts[ti]
	xt, xb := s.excess()
	markerTokens := 24 // Marker is about 17 tokens; a margin for the cut
	keepTokens := max(t.tokens-xt-markerTokens, minKeep)
	keep := len(t.s) * keepTokens / max(t.tokens, 1)
	if xb > 0 {
		keep = min(keep, len(t.s)-xb-len(Marker))
	}
	keep = max(keep, 0)
	h := runeStart(t.s, keep/2)
	tl := runeStart(t.s, len(t.s)-keep/2)
	if tl < h {
		tl = h
	}
	ns := t.s[:h] + Marker + t.s[tl:]
	if len(ns) >= len(t.s) {
		// Nothing left to cut: make it as short as it gets, so the loop
		// moves on to the next text.
		ns = Marker
	}
	n, err := count(ns)
	if err != nil {
		return err
	}
	raw, err := sjson.Set(m.raw, t.path, ns)
	if err != nil {
		return err
	}
	s.bytes += len(raw) - len(m.raw)
	s.tokens += n - t.tokens
	m.tokens += n - t.tokens
	m.raw = raw
	t.s, t.tokens = ns, n
	return nil
}

// runeStart moves i back to the start of the UTF-8 sequence it falls in.
func runeStart(s string, i int) int {
	i = min(max(i, 0), len(s))
	for i > 0 && i < len(s) && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}
