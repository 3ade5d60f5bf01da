package eventstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/host/sse"
)

// TestVectors: the AWS SDK's positive vectors decode to their payload
// and string headers; the negative ones (a corrupt length, header or
// payload) are errors, never a frame.
func TestVectors(t *testing.T) {
	for _, kind := range []string{"positive", "negative"} {
		files, _ := filepath.Glob(filepath.Join("testdata", "encoded", kind, "*"))
		if len(files) == 0 {
			t.Fatal("no vectors")
		}
		for _, path := range files {
			name := filepath.Base(path)
			t.Run(kind+"/"+name, func(t *testing.T) {
				enc, _ := os.ReadFile(path)
				want, _ := os.ReadFile(filepath.Join("testdata", "decoded", kind, name))
				f, err := NewDecoder(bytes.NewReader(enc), 1<<20).Next()
				if kind == "negative" {
					if !errors.Is(err, ErrCorrupt) {
						t.Fatalf("want a corrupt frame (%s), got %v", want, err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				var dec struct {
					Payload []byte
					Headers []struct {
						Name  string
						Type  int
						Value json.RawMessage // base64 for bytes and strings, a number otherwise
					}
				}
				if err := json.Unmarshal(want, &dec); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(f.Payload, dec.Payload) {
					t.Fatalf("payload %q, want %q", f.Payload, dec.Payload)
				}
				for _, h := range dec.Headers {
					var v []byte
					if h.Type == 7 {
						_ = json.Unmarshal(h.Value, &v)
					}
					if h.Name == ":message-type" && f.MessageType != string(v) {
						t.Fatalf("message type %q, want %q", f.MessageType, v)
					}
				}
			})
		}
	}
}

// TestSSE: frames as a ConverseStream sends them, cut anywhere by the
// network, become one server-sent event each, named by the union member;
// an exception keeps its type; a stream cut inside a frame is an error.
func TestSSE(t *testing.T) {
	var stream []byte
	stream = Encode(stream, []byte(`{"p":"abc","role":"assistant"}`), ":event-type", "messageStart", ":content-type", "application/json", ":message-type", "event")
	stream = Encode(stream, []byte(`{"contentBlockIndex":0,"delta":{"text":"Hel"},"p":"ab"}`), ":event-type", "contentBlockDelta", ":message-type", "event")
	stream = Encode(stream, []byte("{\"stopReason\":\n\"end_turn\"}"), ":event-type", "messageStop", ":message-type", "event")
	stream = Encode(stream, []byte(`{"message":"Too many requests, please wait before trying again."}`), ":exception-type", "ThrottlingException", ":message-type", "exception")
	want := []string{
		`{"messageStart":{"p":"abc","role":"assistant"}}`,
		`{"contentBlockDelta":{"contentBlockIndex":0,"delta":{"text":"Hel"},"p":"ab"}}`,
		"{\"messageStop\":{\"stopReason\":\n\"end_turn\"}}",
		`{"throttlingException":{"message":"Too many requests, please wait before trying again."}}`,
	}
	for _, cut := range []int{1, 7, 13, 64, len(stream)} {
		rd := sse.NewReader(NewSSE(&chunks{b: stream, n: cut}, 1<<20), 1<<20)
		var got []string
		for {
			ev, err := rd.Next()
			if err != nil {
				if !errors.Is(err, io.EOF) {
					t.Fatalf("cut %d: %v", cut, err)
				}
				break
			}
			got = append(got, string(ev.Data))
		}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Fatalf("cut %d: events\n%q\nwant\n%q", cut, got, want)
		}
	}
	_, err := io.ReadAll(NewSSE(bytes.NewReader(stream[:len(stream)-3]), 1<<20))
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("a stream cut inside a frame: %v", err)
	}
}

// chunks reads n bytes at a time.
type chunks struct {
	b []byte
	n int
}

func (c *chunks) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), c.n)], c.b)
	c.b = c.b[n:]
	return n, nil
}

// FuzzDecoder: any bytes decode to frames or an error, never a panic or
// a frame bigger than the limit; an encoded frame decodes to itself.
func FuzzDecoder(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "encoded", "*", "*"))
	for _, p := range files {
		b, _ := os.ReadFile(p)
		f.Add(b)
	}
	f.Add(Encode(nil, []byte(`{"a":1}`), ":event-type", "x"))
	f.Fuzz(func(t *testing.T, b []byte) {
		d := NewDecoder(bytes.NewReader(b), 4096)
		for {
			fr, err := d.Next()
			if err != nil {
				break
			}
			if len(fr.Payload) > 4096 {
				t.Fatal("frame over the limit")
			}
			again, err := NewDecoder(bytes.NewReader(Encode(nil, fr.Payload, ":event-type", fr.EventType)), 4096).Next()
			if err != nil || !bytes.Equal(again.Payload, fr.Payload) || again.EventType != fr.EventType {
				t.Fatalf("round trip: %v", err)
			}
		}
		_, _ = io.ReadAll(NewSSE(bytes.NewReader(b), 4096))
	})
}

// BenchmarkSSE: decoding a ConverseStream delta frame into its event.
func BenchmarkSSE(b *testing.B) {
	frame := Encode(nil, []byte(`{"contentBlockIndex":0,"delta":{"text":"Hello, how can I help you today?"},"p":"abcdefghijkl"}`),
		":event-type", "contentBlockDelta", ":content-type", "application/json", ":message-type", "event")
	stream := bytes.Repeat(frame, 1000)
	buf := make([]byte, 32<<10)
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		r := NewSSE(bytes.NewReader(stream), 1<<20)
		for {
			if _, err := r.Read(buf); err != nil {
				break
			}
		}
	}
}
