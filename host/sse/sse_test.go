package sse

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func readAll(t *testing.T, in string, max int) ([]Event, error) {
	t.Helper()
	r := NewReader(strings.NewReader(in), max)
	var out []Event
	for {
		ev, err := r.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return out, err
		}
		ev.Data = append([]byte(nil), ev.Data...)
		out = append(out, ev)
	}
}

func TestReader(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want []string // data of each event
	}{
		{"openai framing", "data: {\"a\":1}\n\ndata: [DONE]\n\n", []string{`{"a":1}`, "[DONE]"}},
		{"crlf", "data: x\r\n\r\ndata: y\r\n\r\n", []string{"x", "y"}},
		{"cr only", "data: x\r\rdata: y\r\r", []string{"x", "y"}},
		{"no space after colon", "data:x\n\n", []string{"x"}},
		{"two spaces keep one", "data:  x\n\n", []string{" x"}},
		{"multi-line data", "data: a\ndata: b\n\n", []string{"a\nb"}},
		{"comments skipped", ": keep-alive\n\n: OPENROUTER PROCESSING\n\ndata: x\n\n", []string{"x"}},
		{"bom", "\xEF\xBB\xBFdata: x\n\n", []string{"x"}},
		{"retry and unknown fields", "retry: 100\nfoo: bar\ndata: x\n\n", []string{"x"}},
		{"field without colon", "data\n\n", []string{""}},
		{"unterminated last event", "data: x\n\ndata: y", []string{"x", "y"}},
		{"blank lines only", "\n\n\n", nil},
		{"named anthropic event", "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n", []string{`{"type":"message_stop"}`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			evs, err := readAll(t, tc.in, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) != len(tc.want) {
				t.Fatalf("%d events, want %d: %+v", len(evs), len(tc.want), evs)
			}
			for i, w := range tc.want {
				if string(evs[i].Data) != w {
					t.Errorf("event %d data %q, want %q", i, evs[i].Data, w)
				}
			}
		})
	}
}

func TestReaderNameAndID(t *testing.T) {
	evs, err := readAll(t, "event: ping\nid: 7\ndata: x\n\n", 1<<20)
	if err != nil || len(evs) != 1 || evs[0].Name != "ping" || evs[0].ID != "7" {
		t.Fatalf("%v %+v", err, evs)
	}
}

func TestReaderComments(t *testing.T) {
	r := NewReader(strings.NewReader(": a\n\n: b\n\ndata: x\n\n"), 1024)
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if r.Comments() != 2 {
		t.Fatalf("comments %d", r.Comments())
	}
}

func TestReaderLimit(t *testing.T) {
	_, err := readAll(t, "data: "+strings.Repeat("x", 100)+"\n\n", 50)
	if !errors.Is(err, ErrEventTooLarge) {
		t.Fatalf("long line: %v", err)
	}
	_, err = readAll(t, strings.Repeat("data: xxxxxxxxxx\n", 10)+"\n", 50)
	if !errors.Is(err, ErrEventTooLarge) {
		t.Fatalf("many data lines: %v", err)
	}
}

func TestAppend(t *testing.T) {
	if got := string(AppendEvent(nil, []byte(`{"a":1}`))); got != "data: {\"a\":1}\n\n" {
		t.Fatalf("%q", got)
	}
	if got := string(AppendEvent(nil, []byte("a\nb"))); got != "data: a\ndata: b\n\n" {
		t.Fatalf("%q", got)
	}
	if got := string(AppendComment(nil, "SWITCHYARD PROCESSING")); got != ": SWITCHYARD PROCESSING\n\n" {
		t.Fatalf("%q", got)
	}
}

func FuzzReader(f *testing.F) {
	f.Add([]byte("data: x\n\n"), []byte("y"))
	f.Add([]byte("\xEF\xBB\xBFevent: a\r\ndata:b\r\r: c\n"), []byte("a\nb"))
	f.Fuzz(func(t *testing.T, stream, payload []byte) {
		// Arbitrary input: never panics, never exceeds the limit.
		r := NewReader(bytes.NewReader(stream), 4096)
		for i := 0; i < 10000; i++ {
			ev, err := r.Next()
			if err != nil {
				break
			}
			if len(ev.Data) > 4096 {
				t.Fatalf("event of %d bytes over the limit", len(ev.Data))
			}
		}
		// Round trip: what AppendEvent writes reads back the same, for
		// payloads without CR (a lone CR is a line break by the standard).
		if bytes.IndexByte(payload, '\r') >= 0 {
			return
		}
		rt := NewReader(bytes.NewReader(AppendEvent(nil, payload)), 1<<20)
		ev, err := rt.Next()
		if err != nil || !bytes.Equal(ev.Data, payload) {
			t.Fatalf("round trip of %q gave %q, %v", payload, ev.Data, err)
		}
	})
}

func BenchmarkReader(b *testing.B) {
	var stream bytes.Buffer
	for i := 0; i < 200; i++ {
		stream.WriteString(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"word "},"finish_reason":null}]}` + "\n\n")
	}
	stream.WriteString("data: [DONE]\n\n")
	data := stream.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		r := NewReader(bytes.NewReader(data), 1<<20)
		for {
			if _, err := r.Next(); err != nil {
				break
			}
		}
	}
}
