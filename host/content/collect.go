package content

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"
	"unicode/utf8"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// Collector gathers one generation's content as its answer is written —
// a JSON completion (JSON) or a chat event stream (Write) — and stores it
// once: when the stream's [DONE] passes (before the client reads it, so
// a GET right after the stream finds the record), or at Close for a
// stream that ended otherwise (the client left, an error). A nil
// *Collector does nothing: content storage is off for the account.
//
// Text beyond the record's bound is not kept (Truncated). Safe for the
// transport's goroutine and the request's Close on another.
type Collector struct {
	svc     *Service
	account string
	id      string
	input   json.RawMessage

	mu               sync.Mutex
	text, reasoning  []byte
	hasText, hasReas bool
	fail             *Failure
	truncated        bool
	line             []byte // a partial line of the stream
	skipping         bool   // the rest of a line too large to keep
	done             bool
}

// JSON records a chat completion answer and stores the record.
func (c *Collector) JSON(answer []byte) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	m := gjson.GetBytes(answer, "choices.0.message")
	c.add(m.Get("content"), m.Get("reasoning"))
	c.store()
}

// Fail stores the record of a request answered with an error.
func (c *Collector) Fail(status int, message string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fail = &Failure{Status: status, Message: message}
	c.store()
}

// Write takes any split of a chat event stream (data: lines, comments,
// blank lines). It never fails: it is a tee beside the client's writes.
func (c *Collector) Write(p []byte) (int, error) {
	if c == nil {
		return len(p), nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return len(p), nil
	}
	rest := p
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			// A line longer than the whole record cannot be kept: its
			// bytes are skipped up to its end.
			if !c.skipping && len(c.line)+len(rest) > c.svc.max+64<<10 {
				c.line, c.skipping, c.truncated = c.line[:0], true, true
			}
			if !c.skipping {
				c.line = append(c.line, rest...)
			}
			break
		}
		line := rest[:i]
		rest = rest[i+1:]
		if c.skipping {
			c.skipping = false
			continue
		}
		if len(c.line) > 0 {
			line = append(c.line, line...)
			c.line = c.line[:0]
		}
		c.event(bytes.TrimRight(line, "\r"))
		if c.done {
			break
		}
	}
	return len(p), nil
}

// event handles one line of the stream.
func (c *Collector) event(line []byte) {
	data, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok {
		return
	}
	data = bytes.TrimSpace(data)
	if string(data) == "[DONE]" {
		c.store()
		return
	}
	ev := gjson.ParseBytes(data)
	if e := ev.Get("error"); e.Exists() {
		c.fail = &Failure{Status: int(e.Get("code").Int()), Message: e.Get("message").String()}
	}
	d := ev.Get("choices.0.delta")
	c.add(d.Get("content"), d.Get("reasoning"))
}

// add appends text and reasoning, within the record's bound.
func (c *Collector) add(text, reasoning gjson.Result) {
	if text.Type == gjson.String {
		c.hasText = true
		c.text = c.appendBounded(c.text, text.Str)
	}
	if reasoning.Type == gjson.String {
		c.hasReas = true
		c.reasoning = c.appendBounded(c.reasoning, reasoning.Str)
	}
}

func (c *Collector) appendBounded(dst []byte, s string) []byte {
	room := c.svc.max - len(c.text) - len(c.reasoning)
	if len(s) > room {
		c.truncated = true
		s = cutUTF8(s, max(room, 0))
	}
	return append(dst, s...)
}

// Close stores what a stream that ended without [DONE] gathered.
func (c *Collector) Close() error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.store()
	return nil
}

// store writes the record once; the input gives way to the output when
// both do not fit.
func (c *Collector) store() {
	if c.done {
		return
	}
	c.done = true
	rec := &Record{Error: c.fail, Truncated: c.truncated}
	if c.hasText {
		s := string(c.text)
		rec.Completion = &s
	}
	if c.hasReas {
		s := string(c.reasoning)
		rec.Reasoning = &s
	}
	in, cut := fitInput(c.input, c.svc.max-len(c.text)-len(c.reasoning))
	rec.Input, rec.Truncated = in, rec.Truncated || cut
	if err := c.svc.Store.Put(c.account, c.id, rec); err != nil {
		c.svc.Log.Warn("content: storing a generation's content", "generation", c.id, "err", err)
	}
}

// Input is OpenRouter's input object of a chat request body: its
// messages as sent, or, with prompt (POST /completions, translated to one
// user message), that message's text as the prompt.
func Input(chatBody []byte, prompt bool) json.RawMessage {
	msgs := gjson.GetBytes(chatBody, "messages")
	if prompt {
		if p := msgs.Get("0.content"); p.Type == gjson.String {
			b, _ := json.Marshal(map[string]string{"prompt": p.Str})
			return b
		}
	}
	raw := msgs.Raw
	if !msgs.IsArray() {
		raw = "[]"
	}
	b, _ := sjson.SetRawBytes([]byte(`{}`), "messages", []byte(raw))
	return b
}

// fitInput is in within room bytes: a prompt cut short, or the most
// recent messages that fit (the oldest dropped; none when even the last
// does not fit). cut reports that it was shortened.
func fitInput(in json.RawMessage, room int) (json.RawMessage, bool) {
	if len(in) <= room {
		return in, false
	}
	room = max(room, 0)
	if p := gjson.GetBytes(in, "prompt"); p.Exists() {
		b, _ := json.Marshal(map[string]string{"prompt": cutUTF8(p.Str, max(room-len(`{"prompt":""}`), 0))})
		for len(b) > room && len(b) > len(`{"prompt":""}`) { // escaping grew it
			s := gjson.GetBytes(b, "prompt").Str
			b, _ = json.Marshal(map[string]string{"prompt": cutUTF8(s, len(s)-(len(b)-room))})
		}
		return b, true
	}
	msgs := gjson.GetBytes(in, "messages").Array()
	size := len(`{"messages":[]}`)
	first := len(msgs)
	for first > 0 && size+len(msgs[first-1].Raw)+1 <= room {
		first--
		size += len(msgs[first].Raw) + 1
	}
	out := []byte(`{"messages":[`)
	for i, m := range msgs[first:] {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, m.Raw...)
	}
	return append(out, "]}"...), true
}

// cutUTF8 is s cut to at most n bytes on a character boundary.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Reader is src with its bytes also written to c as they are read (src
// itself when c is nil). Its Close, which the transport always calls,
// stores what a stream that ended without [DONE] gathered, then closes
// src. (Not the request's own end: a stream may end it before its last
// bytes are read.)
func (c *Collector) Reader(src io.ReadCloser) io.ReadCloser {
	if c == nil {
		return src
	}
	return &teeReader{Reader: io.TeeReader(src, c), src: src, c: c}
}

type teeReader struct {
	io.Reader
	src io.Closer
	c   *Collector
}

func (t *teeReader) Close() error {
	_ = t.c.Close()
	return t.src.Close()
}

// Writer writes to c, then to w (w itself when c is nil).
func (c *Collector) Writer(w io.Writer) io.Writer {
	if c == nil {
		return w
	}
	return io.MultiWriter(c, w)
}
