package sse

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

type ev struct{ name, data, id string }

func (e ev) String() string { return fmt.Sprintf("{%q %q %q}", e.name, e.data, e.id) }

// readAll reads every event of in through src (which may split it
// anywhere) and returns them with the error that ended the stream (nil for
// io.EOF).
func readAll(src io.Reader, max int) ([]ev, *Reader, error) {
	r := NewReader(src, max)
	var out []ev
	for i := 0; ; i++ {
		e, err := r.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return out, r, nil
			}
			return out, r, err
		}
		out = append(out, ev{e.Name, string(e.Data), e.ID})
		if i > 1<<16 {
			return out, r, errors.New("too many events")
		}
	}
}

// readAllTry is readAll reading as a relay does: TryNext while it finds
// events, Next (which waits) when it does not.
func readAllTry(src io.Reader, max int) ([]ev, error) {
	r := NewReader(src, max)
	var out []ev
	for i := 0; ; i++ {
		e, ok, err := r.TryNext()
		if !ok {
			if err != nil {
				return out, fmt.Errorf("TryNext: an error %v without ok", err)
			}
			e, err = r.Next()
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return out, err
		}
		out = append(out, ev{e.Name, string(e.Data), e.ID})
		if i > 1<<16 {
			return out, errors.New("too many events")
		}
	}
}

// sources returns in as several readers that split it differently, so
// framing never depends on how reads fall.
func sources(in string) map[string]io.Reader {
	return map[string]io.Reader{
		"whole":     strings.NewReader(in),
		"one byte":  iotest.OneByteReader(strings.NewReader(in)),
		"half":      iotest.HalfReader(strings.NewReader(in)),
		"data+EOF":  iotest.DataErrReader(strings.NewReader(in)),
		"3-byte":    &chunked{s: in, n: 3},
		"empty too": &chunked{s: in, n: 2, stutter: true},
	}
}

// chunked returns n bytes per Read; with stutter, every other Read returns
// (0, nil).
type chunked struct {
	s       string
	n       int
	stutter bool
	flip    bool
}

func (c *chunked) Read(p []byte) (int, error) {
	if c.stutter {
		c.flip = !c.flip
		if c.flip {
			return 0, nil
		}
	}
	if c.s == "" {
		return 0, io.EOF
	}
	n := min(c.n, len(p), len(c.s))
	copy(p, c.s[:n])
	c.s = c.s[n:]
	return n, nil
}

func TestReaderFraming(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want []ev
		// comments seen by the end of the stream
		comments int
	}{
		{"openai framing", "data: {\"a\":1}\n\ndata: [DONE]\n\n", []ev{{"", `{"a":1}`, ""}, {"", "[DONE]", ""}}, 0},
		{"crlf", "data: x\r\n\r\ndata: y\r\n\r\n", []ev{{"", "x", ""}, {"", "y", ""}}, 0},
		{"cr only", "data: x\r\rdata: y\r\r", []ev{{"", "x", ""}, {"", "y", ""}}, 0},
		{"mixed endings", "data: a\r\ndata: b\rdata: c\n\r\n", []ev{{"", "a\nb\nc", ""}}, 0},
		{"cr then lf is one ending", "data: x\r\n\r\n", []ev{{"", "x", ""}}, 0},
		{"lf then cr is two endings", "data: x\n\rdata: y\n\n", []ev{{"", "x", ""}, {"", "y", ""}}, 0},
		{"no space after colon", "data:x\n\n", []ev{{"", "x", ""}}, 0},
		{"only one space dropped", "data:  x\n\n", []ev{{"", " x", ""}}, 0},
		{"tab kept", "data:\tx\n\n", []ev{{"", "\tx", ""}}, 0},
		{"colon in value", "data: a: b\n\n", []ev{{"", "a: b", ""}}, 0},
		{"multi-line data", "data: a\ndata: b\n\n", []ev{{"", "a\nb", ""}}, 0},
		{"empty data line", "data:\n\n", []ev{{"", "", ""}}, 0},
		{"empty data lines join", "data\ndata\n\n", []ev{{"", "\n", ""}}, 0},
		{"field without colon", "data\n\n", []ev{{"", "", ""}}, 0},
		{"comments skipped and counted", ": keep-alive\n\n: SWITCHYARD PROCESSING\n\ndata: x\n\n:\n", []ev{{"", "x", ""}}, 3},
		{"comment inside an event", "data: a\n: ping\ndata: b\n\n", []ev{{"", "a\nb", ""}}, 1},
		{"bom", "\xEF\xBB\xBFdata: x\n\n", []ev{{"", "x", ""}}, 0},
		{"bom only at the start", "data: x\n\n\xEF\xBB\xBFdata: y\n\n", []ev{{"", "x", ""}}, 0},
		{"retry and unknown fields", "retry: 100\nfoo: bar\nDATA: no\ndata: x\nretry: x\n\n", []ev{{"", "x", ""}}, 0},
		{"field names are exact", "data : x\ndata: y\n\n", []ev{{"", "y", ""}}, 0},
		{"named event", "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n", []ev{{"message_stop", `{"type":"message_stop"}`, ""}}, 0},
		{"name resets after dispatch", "event: a\ndata: 1\n\ndata: 2\n\n", []ev{{"a", "1", ""}, {"", "2", ""}}, 0},
		{"last name wins", "event: a\nevent: b\ndata: 1\n\n", []ev{{"b", "1", ""}}, 0},
		{"event without data dropped", "event: ping\n\ndata: x\n\n", []ev{{"", "x", ""}}, 0},
		{"id persists", "id: 7\ndata: a\n\ndata: b\n\nid:\ndata: c\n\n", []ev{{"", "a", "7"}, {"", "b", "7"}, {"", "c", ""}}, 0},
		{"id with NUL ignored", "id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\n", []ev{{"", "a", "1"}, {"", "b", "1"}}, 0},
		{"id without data still set", "id: 9\n\ndata: a\n\n", []ev{{"", "a", "9"}}, 0},
		{"unterminated last event", "data: x\n\ndata: y", []ev{{"", "x", ""}, {"", "y", ""}}, 0},
		{"last event without blank line", "data: x\n", []ev{{"", "x", ""}}, 0},
		{"last event ends in cr", "data: x\r", []ev{{"", "x", ""}}, 0},
		{"unterminated event without data", "data: x\n\nevent: e", []ev{{"", "x", ""}}, 0},
		{"blank lines only", "\n\n\r\n\r", nil, 0},
		{"empty stream", "", nil, 0},
		{"utf-8 data", "data: h\u00e9llo \U0001F600\n\n", []ev{{"", "h\u00e9llo \U0001F600", ""}}, 0},
	}
	for _, tc := range cases {
		for sname, src := range sources(tc.in) {
			t.Run(tc.name+"/"+sname, func(t *testing.T) {
				got, r, err := readAll(src, 1<<20)
				if err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(got) != fmt.Sprint(tc.want) {
					t.Fatalf("got %v\nwant %v", got, tc.want)
				}
				if r.Comments() != tc.comments {
					t.Fatalf("comments %d, want %d", r.Comments(), tc.comments)
				}
			})
		}
		for sname, src := range sources(tc.in) {
			t.Run(tc.name+"/TryNext/"+sname, func(t *testing.T) {
				got, err := readAllTry(src, 1<<20)
				if err != nil || fmt.Sprint(got) != fmt.Sprint(tc.want) {
					t.Fatalf("got %v (%v)\nwant %v", got, err, tc.want)
				}
			})
		}
	}
}

func TestReaderLimit(t *testing.T) {
	cases := []struct {
		name string
		in   string
		max  int
		want int // events read before the error; -1: no error
	}{
		{"data at the limit", "data: " + strings.Repeat("x", 50) + "\n\n", 50, -1},
		{"data over the limit", "data: " + strings.Repeat("x", 51) + "\n\n", 50, 0},
		{"lines add up", strings.Repeat("data: xxxxxxxxxx\n", 10) + "\n", 50, 0},
		{"after good events", "data: a\n\ndata: " + strings.Repeat("x", 100) + "\n\n", 50, 1},
		{"endless line", "data: " + strings.Repeat("x", 1<<20), 1000, 0},
		{"endless comment", ":" + strings.Repeat("x", 1<<20), 1000, 0},
		{"big event, small start buffer", "data: " + strings.Repeat("y", 100_000) + "\n\n", 200_000, -1},
	}
	for _, tc := range cases {
		for sname, src := range sources(tc.in) {
			t.Run(tc.name+"/"+sname, func(t *testing.T) {
				got, r, err := readAll(src, tc.max)
				if tc.want < 0 {
					if err != nil || len(got) != 1 {
						t.Fatalf("%d events, %v", len(got), err)
					}
					return
				}
				if !errors.Is(err, ErrEventTooLarge) || len(got) != tc.want {
					t.Fatalf("%d events, %v; want %d then ErrEventTooLarge", len(got), err, tc.want)
				}
				if _, err := r.Next(); !errors.Is(err, ErrEventTooLarge) {
					t.Fatalf("error is not sticky: %v", err)
				}
			})
		}
	}
}

func TestReaderErrors(t *testing.T) {
	boom := errors.New("connection reset")
	r := NewReader(io.MultiReader(strings.NewReader("data: a\n\ndata: b\n"), iotest.ErrReader(boom)), 1024)
	if e, err := r.Next(); err != nil || string(e.Data) != "a" {
		t.Fatalf("%q %v", e.Data, err)
	}
	// An event cut by a read error is not dispatched: only a clean end is
	// taken as the end of the last event.
	if _, err := r.Next(); !errors.Is(err, boom) {
		t.Fatalf("got %v, want the read error", err)
	}
	if _, err := r.Next(); !errors.Is(err, boom) {
		t.Fatalf("error is not sticky: %v", err)
	}

	stuck := NewReader(&chunked{s: "", n: 1, stutter: true, flip: true}, 1024)
	stuck.src = readerFunc(func([]byte) (int, error) { return 0, nil })
	if _, err := stuck.Next(); !errors.Is(err, io.ErrNoProgress) {
		t.Fatalf("got %v, want io.ErrNoProgress", err)
	}
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

func TestDataIsReused(t *testing.T) {
	r := NewReader(strings.NewReader("data: first\n\ndata: second\n\n"), 1024)
	a, _ := r.Next()
	kept := append([]byte(nil), a.Data...)
	b, _ := r.Next()
	if string(kept) != "first" || string(b.Data) != "second" {
		t.Fatalf("%q %q", kept, b.Data)
	}
}

func TestAppend(t *testing.T) {
	cases := []struct {
		name, data, want string
	}{
		{"json", `{"a":1}`, "data: {\"a\":1}\n\n"},
		{"empty", ``, "data: \n\n"},
		{"newline", "a\nb", "data: a\ndata: b\n\n"},
		{"crlf", "a\r\nb", "data: a\ndata: b\n\n"},
		{"bare cr cannot inject a field", "a\revent: evil", "data: a\ndata: event: evil\n\n"},
		{"trailing newline", "a\n", "data: a\ndata: \n\n"},
		{"leading space kept", " a", "data:  a\n\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := AppendEvent([]byte("prefix|"), []byte(tc.data))
			if string(got) != "prefix|"+tc.want {
				t.Fatalf("%q, want %q", got, tc.want)
			}
		})
	}
	if got := string(AppendComment(nil, "SWITCHYARD PROCESSING")); got != ": SWITCHYARD PROCESSING\n\n" {
		t.Fatalf("%q", got)
	}
	if got := string(AppendComment(nil, "a\r\nb\rc")); got != ": a\n: b\n: c\n\n" {
		t.Fatalf("%q", got)
	}
}

// reference parses a whole stream the simple way, by the standard plus the
// reader's one choice (an unterminated final event is dispatched).
func reference(s string) []ev {
	s = strings.TrimPrefix(s, "\xEF\xBB\xBF")
	var lines []string
	for len(s) > 0 {
		i := strings.IndexAny(s, "\r\n")
		if i < 0 {
			lines = append(lines, s)
			break
		}
		lines = append(lines, s[:i])
		if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
			i++
		}
		s = s[i+1:]
	}
	var out []ev
	var data strings.Builder
	has, name, id := false, "", ""
	for _, l := range lines {
		switch {
		case l == "":
			if has {
				out = append(out, ev{name, data.String(), id})
			}
			data.Reset()
			has, name = false, ""
			continue
		case l[0] == ':':
			continue
		}
		f, v, found := strings.Cut(l, ":")
		if found {
			v = strings.TrimPrefix(v, " ")
		}
		switch f {
		case "data":
			if has {
				data.WriteByte('\n')
			}
			data.WriteString(v)
			has = true
		case "event":
			name = v
		case "id":
			if !strings.Contains(v, "\x00") {
				id = v
			}
		}
	}
	if has {
		out = append(out, ev{name, data.String(), id})
	}
	return out
}

func FuzzReader(f *testing.F) {
	f.Add([]byte("data: x\n\n"), []byte("y"), uint8(0))
	f.Add([]byte("\xEF\xBB\xBFevent: a\r\ndata:b\r\r: c\nid: 1\n\ndata"), []byte("a\nb"), uint8(1))
	f.Add([]byte("data: a\r"), []byte("a\r\nb\rc"), uint8(2))
	f.Add([]byte(": ping\n\nretry: 5\nid: x\x00y\ndata: 1\n\n"), []byte{}, uint8(7))
	f.Fuzz(func(t *testing.T, stream, payload []byte, chunk uint8) {
		// Any input, split anywhere: never panics, agrees with the
		// reference parser.
		src := io.Reader(bytes.NewReader(stream))
		if chunk > 0 {
			src = &chunked{s: string(stream), n: int(chunk%16) + 1, stutter: chunk%2 == 0}
		}
		got, _, err := readAll(src, 1<<20)
		if err != nil {
			t.Fatalf("%v on %q", err, stream)
		}
		want := reference(string(stream))
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("stream %q\ngot  %v\nwant %v", stream, got, want)
		}
		// Read without waiting where it can, an event begun in one read
		// and ended in a later one comes out the same.
		src = &chunked{s: string(stream), n: int(chunk%16) + 1, stutter: chunk%2 == 0}
		got, err = readAllTry(src, 1<<20)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("TryNext: stream %q\ngot  %v (%v)\nwant %v", stream, got, err, want)
		}
		// A small limit is an error, never an oversized event.
		r := NewReader(bytes.NewReader(stream), 8)
		for {
			e, err := r.Next()
			if err != nil {
				break
			}
			if len(e.Data) > 8 {
				t.Fatalf("event of %d bytes over the limit of 8", len(e.Data))
			}
		}
		// Round trip: what AppendEvent writes reads back as the same data,
		// line breaks normalized to \n, and after a comment.
		var w []byte
		w = AppendComment(w, string(payload))
		w = AppendEvent(w, payload)
		w = AppendEvent(w, []byte("{}"))
		evs, _, err := readAll(bytes.NewReader(w), 1<<20)
		wantRT := strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(string(payload))
		if err != nil || len(evs) != 2 || evs[0].data != wantRT || evs[1].data != "{}" {
			t.Fatalf("round trip of %q gave %v, %v", payload, evs, err)
		}
	})
}

// chatStream is a realistic OpenAI chat stream: a role chunk, 200 content
// chunks, a finish chunk, a usage chunk, keep-alives, and [DONE].
func chatStream() []byte {
	var b []byte
	b = AppendComment(b, "SWITCHYARD PROCESSING")
	head := `{"id":"chatcmpl-AbC123xyz","object":"chat.completion.chunk","created":1731000000,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_abc123","choices":[{"index":0,`
	b = AppendEvent(b, []byte(head+`"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`))
	words := []string{"The", " quick", " brown", " fox", " jumps", " over", " the", " lazy", " dog", ".\n", " \"Quoted\"", " caf\u00e9"}
	for i := 0; i < 200; i++ {
		b = AppendEvent(b, []byte(head+`"delta":{"content":"`+strings.ReplaceAll(strings.ReplaceAll(words[i%len(words)], `"`, `\"`), "\n", `\n`)+`"},"logprobs":null,"finish_reason":null}]}`))
		if i%50 == 49 {
			b = AppendComment(b, "keep-alive")
		}
	}
	b = AppendEvent(b, []byte(head+`"delta":{},"logprobs":null,"finish_reason":"stop"}]}`))
	b = AppendEvent(b, []byte(`{"id":"chatcmpl-AbC123xyz","object":"chat.completion.chunk","created":1731000000,"model":"gpt-4o-2024-08-06","choices":[],"usage":{"prompt_tokens":25,"completion_tokens":200,"total_tokens":225}}`))
	return AppendEvent(b, []byte("[DONE]"))
}

func BenchmarkReader(b *testing.B) {
	data := chatStream()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	src := bytes.NewReader(data)
	for b.Loop() {
		src.Reset(data)
		r := NewReader(src, 16<<20)
		n := 0
		for {
			if _, err := r.Next(); err != nil {
				break
			}
			n++
		}
		if n != 204 {
			b.Fatalf("%d events", n)
		}
	}
}

// BenchmarkReaderCRLF reads the same stream with \r\n line endings, through
// small reads as a network delivers them.
func BenchmarkReaderCRLF(b *testing.B) {
	data := bytes.ReplaceAll(chatStream(), []byte("\n"), []byte("\r\n"))
	s := string(data)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		r := NewReader(&chunked{s: s, n: 1400}, 16<<20)
		for {
			if _, err := r.Next(); err != nil {
				break
			}
		}
	}
}
