package wire

import (
	"bytes"
	"slices"
	"testing"

	"github.com/tidwall/gjson"
)

const testNow = 1763856000

var streamID = Identity{GenID: "gen-1", Model: "v/m", Provider: "fake"}

// referenceChunk is what the pump did with an upstream chunk before
// ChunkStream: RepairChunk, Chunk, then gjson reads of the error, the usage
// and each choice's delta content and finish reason.
func referenceChunk(ch []byte, id Identity) ([]byte, ChunkFacts, []string, bool) {
	out, fixes, ok := RepairChunk(ch)
	if !ok {
		return nil, ChunkFacts{}, fixes, false
	}
	out = chunkAt(out, id, testNow)
	f := ChunkFacts{Error: gjson.GetBytes(out, "error"), Usage: gjson.GetBytes(out, "usage").IsObject()}
	for _, c := range gjson.GetBytes(out, "choices").Array() {
		cf := ChoiceFacts{Content: c.Get("delta.content").Str}
		if fr := c.Get("finish_reason"); fr.Type == gjson.String {
			cf.Finished, cf.FinishReason = true, fr.Str
		}
		f.Choices = append(f.Choices, cf)
	}
	return out, f, fixes, true
}

func testStream(id Identity) *ChunkStream {
	s := NewChunkStream(id)
	s.now = func() int64 { return testNow }
	return s
}

// chunkSeeds are chunks upstreams send, and chunks that must leave the fast
// path: wrong types, duplicate and escaped keys, odd whitespace.
var chunkSeeds = []string{
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1763856000,"model":"gpt-4o-mini","system_fingerprint":"fp","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1763856000,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":"hello "},"logprobs":null,"finish_reason":null}]}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1763856000,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1763856000,"model":"gpt-4o-mini","choices":[],"usage":{"prompt_tokens":250,"completion_tokens":20,"total_tokens":270}}`,
	`{"id":"gen-1","model":"v/m","provider":"fake","created":1,"choices":[{"index":0,"delta":{"content":"already ours"}}]}`,
	`{"id":"gen-1","model":"v/m","provider":"other","created":1,"choices":[{"index":0,"delta":{"content":"x"}}]}`,
	`{"model":"m","choices":[{"index":0,"delta":{"content":"no id, no created"}}]}`,
	`{"choices":[{"index":0,"delta":{"content":"a\"b\\c\u00e9\n"}},{"index":1,"delta":{"content":"second"},"finish_reason":"length"}]}`,
	`{"id":"x","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]}}]}`,
	`{"id":"x","choices":[{"index":0,"delta":{"tool_calls":[{"index":"0","function":{"name":1}}]}}]}`,
	`{"id":"x","choices":[{"index":0,"delta":{"tool_calls":{"a":1}}}]}`,
	`{"id":"x","choices":[{"index":0,"delta":{"function_call":"f","refusal":1,"reasoning":"r","reasoning_content":null}}]}`,
	`{"id":"x","choices":[{"delta":{"content":"no index"}}]}`,
	`{"id":"x","choices":[{"index":0}]}`,
	`{"id":"x","choices":[{"index":0,"delta":"s"}]}`,
	`{"id":"x","choices":["not an object",{"index":1,"delta":{}}]}`,
	`{"id":"x","choices":{"index":0}}`,
	`{"id":"x","usage":{"prompt_tokens":1}}`,
	`{"id":"x","choices":[],"usage":"lots"}`,
	`{"id":"x","choices":[],"usage":null}`,
	`{"id":"x","created":"now","choices":[]}`,
	`{"error":{"message":"overloaded","type":"server_error"}}`,
	`{"id":"x","choices":[],"error":{"message":"mid-stream"}}`,
	`{"id":"a","id":"b","choices":[]}`,
	`{"choices":[],"choices":[{"index":0,"delta":{}}]}`,
	`{"\u0069d":"a","choices":[]}`,
	`{"id":"x","choices":[{"index":0,"delta":{"content":"a","content":"b"}}]}`,
	`{"id":"x","choices":[{"index":0,"delta":{"content":["part",{"text":"two"}]}}]}`,
	`{"id":"x","choices":[{"index":0,"delta":{"content":1}}]}`,
	`{"id":"x","choices":[{"index":0,"delta":{},"finish_reason":1,"logprobs":[]}]}`,
	`{"id":"x","choices":[{"index":0,"delta":{},"logprobs":{"content":[]}}]}`,
	"{\"id\":\"x\",\"choices\":[] } \n",
	"{ \"id\" : 1 , \"choices\" : [ { \"index\" : 0 , \"delta\" : { } } ] }",
	"{\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\xff\xfe\"}}]}",
	` {"id":"x","choices":[]}`,
	`{"id":null,"model":5,"provider":{},"choices":[]}`,
	`{"id":"x","model":"<b>&","choices":[]}`,
	`{}`,
	`[]`,
	`"s"`,
	``,
	`{"choices":[`,
	`{"id":"x","choices":[{"index":0,"delta":{"tool_calls":[{"function":null}]}}]}`,
	`{"id":"x","choices":[{"index":0,"delta":{"tool_calls":[{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9}]}}]}`,
}

func checkAgainstReference(t *testing.T, id Identity, in []byte) {
	t.Helper()
	wantOut, wantFacts, wantFixes, wantOK := referenceChunk(bytes.Clone(in), id)
	s := testStream(id)
	orig := bytes.Clone(in)
	out, facts, fixes, ok := s.Next(in)
	if !bytes.Equal(in, orig) {
		t.Fatalf("Next(%q) changed its input to %q", orig, in)
	}
	if ok != wantOK || !slices.Equal(fixes, wantFixes) {
		t.Fatalf("Next(%q): ok %v fixes %q, want ok %v fixes %q", in, ok, fixes, wantOK, wantFixes)
	}
	if !ok {
		return
	}
	if !bytes.Equal(out, wantOut) {
		t.Fatalf("Next(%q)\n got  %s\n want %s", in, out, wantOut)
	}
	if facts.Error.Raw != wantFacts.Error.Raw || facts.Usage != wantFacts.Usage || !slices.Equal(facts.Choices, wantFacts.Choices) {
		t.Fatalf("Next(%q) facts %+v, want %+v", in, *facts, wantFacts)
	}
}

func TestChunkStreamMatchesReference(t *testing.T) {
	ids := []Identity{streamID, {GenID: "gen-1", Model: "v/m"}, {GenID: `g"1`, Model: "é/<m>", Provider: "p\n"}}
	for _, id := range ids {
		for _, seed := range chunkSeeds {
			checkAgainstReference(t, id, []byte(seed))
		}
	}
}

// TestChunkStreamFastPath: the chunks upstreams send take the one-walk
// path, with the facts and rewrites the host needs.
func TestChunkStreamFastPath(t *testing.T) {
	cases := []struct {
		in, want string
		facts    ChunkFacts
	}{
		{
			in:    `{"id":"up","created":7,"model":"gpt","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}`,
			want:  `{"id":"gen-1","created":7,"model":"v/m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}],"provider":"fake"}`,
			facts: ChunkFacts{Choices: []ChoiceFacts{{Content: "hi"}}},
		},
		{
			in:    `{"model":"gpt","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
			want:  `{"model":"v/m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"created":1763856000,"id":"gen-1","provider":"fake"}`,
			facts: ChunkFacts{Choices: []ChoiceFacts{{Finished: true, FinishReason: "stop"}}},
		},
		{
			in:    `{"id":"gen-1","provider":"fake","created":7,"model":"v/m","choices":[],"usage":{"total_tokens":3}}`,
			want:  `{"id":"gen-1","provider":"fake","created":7,"model":"v/m","choices":[],"usage":{"total_tokens":3}}`,
			facts: ChunkFacts{Usage: true},
		},
		{
			in:   `{"provider":"x","id":"up","created":7,"model":"gpt","choices":[],"error":{"message":"m"}}`,
			want: `{"provider":"fake","id":"gen-1","created":7,"model":"v/m","choices":[],"error":{"message":"m"}}`,
		},
	}
	for _, tc := range cases {
		s := testStream(streamID)
		out, ok := s.fast([]byte(tc.in))
		if !ok {
			t.Fatalf("fast(%s) left the fast path", tc.in)
		}
		if string(out) != tc.want {
			t.Errorf("fast(%s)\n got  %s\n want %s", tc.in, out, tc.want)
		}
		if s.facts.Usage != tc.facts.Usage || !slices.Equal(s.facts.Choices, tc.facts.Choices) {
			t.Errorf("fast(%s) facts %+v, want %+v", tc.in, s.facts, tc.facts)
		}
		checkAgainstReference(t, streamID, []byte(tc.in))
	}
	if s := testStream(streamID); !func() bool { _, ok := s.fast([]byte(chunkSeeds[3])); return ok }() || s.facts.Error.Exists() {
		t.Fatal("usage chunk left the fast path or has an error")
	}
	s := testStream(streamID)
	if _, ok := s.fast([]byte(`{"id":"x","choices":[],"error":{"message":"m"}}`)); !ok || s.facts.Error.Get("message").Str != "m" {
		t.Fatalf("error chunk: facts %+v", s.facts)
	}
}

// FuzzChunkStream checks ChunkStream against what the pump did before, byte
// for byte: the fast path must never differ from RepairChunk + Chunk.
func FuzzChunkStream(f *testing.F) {
	for _, s := range chunkSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		checkAgainstReference(t, streamID, in)
		checkAgainstReference(t, Identity{GenID: "gen-1", Model: "v/m"}, in)
	})
}

// benchChunks is a stream as the peerbench fake upstream sends it.
var benchChunks = func() [][]byte {
	head := `{"id":"chatcmpl-fake000000000000000000000001","object":"chat.completion.chunk","created":1763856000,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_fake","choices":`
	out := [][]byte{[]byte(head + `[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`)}
	for range 20 {
		out = append(out, []byte(head+`[{"index":0,"delta":{"content":"hello "},"logprobs":null,"finish_reason":null}]}`))
	}
	out = append(out, []byte(head+`[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}`))
	return append(out, []byte(head+`[],"usage":{"prompt_tokens":250,"completion_tokens":20,"total_tokens":270}}`))
}()

// BenchmarkStreamChunks is the host's per-chunk work on a 23-chunk stream:
// "reference" is what the pump did before ChunkStream (RepairChunk, Chunk,
// the gjson reads and IsChunk on the chunk it emitted), "ChunkStream" is
// what it does now.
func BenchmarkStreamChunks(b *testing.B) {
	b.Run("reference", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, ch := range benchChunks {
				out, facts, _, _ := referenceChunk(ch, streamID)
				if !facts.Usage && !IsChunk(out) {
					b.Fatal("not a chunk")
				}
			}
		}
	})
	b.Run("ChunkStream", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s := NewChunkStream(streamID)
			for _, ch := range benchChunks {
				if _, _, _, ok := s.Next(ch); !ok {
					b.Fatal("dropped")
				}
			}
		}
	})
}
