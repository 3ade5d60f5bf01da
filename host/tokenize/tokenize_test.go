package tokenize

import (
	"slices"
	"strings"

	"testing"

	"github.com/pkoukk/tiktoken-go"
	"github.com/switchyard/switchyard/host/agentbody"
)

// Reference counts and token ids are tiktoken's own (OpenAI's published
// examples for cl100k_base and o200k_base).
func TestCountReference(t *testing.T) {
	for _, tc := range []struct {
		enc  string
		text string
		want int
	}{
		{CL100K, "hello world", 2},
		{CL100K, "tiktoken is great!", 6},
		{CL100K, "antidisestablishmentarianism", 6},
		{CL100K, "2 + 2 = 4", 7},
		{CL100K, "お誕生日おめでとう", 9},
		{CL100K, "", 0},
		{O200K, "hello world", 2},
		{O200K, "tiktoken is great!", 6},
		{O200K, "2 + 2 = 4", 7},
		{O200K, "お誕生日おめでとう", 8},
		{CL100K, "<|endoftext|>", 7}, // user text, not the special token
	} {
		e, err := Get(tc.enc)
		if err != nil {
			t.Fatal(err)
		}
		if got := e.Count(tc.text); got != tc.want {
			t.Errorf("%s %q = %d, want %d", tc.enc, tc.text, got, tc.want)
		}
	}
	e, _ := Get(CL100K)
	if ids := tk(t, e).EncodeOrdinary("tiktoken is great!"); len(ids) != 6 || ids[0] != 83 || ids[5] != 0 {
		t.Errorf("ids %v, want [83 1609 5963 374 2294 0]", ids)
	}
	if ids := tk(t, e).EncodeOrdinary("hello world"); ids[0] != 15339 || ids[1] != 1917 {
		t.Errorf("ids %v, want [15339 1917]", ids)
	}
}

func TestEncodingFor(t *testing.T) {
	for model, want := range map[string]string{
		"openai/gpt-4o-mini": O200K, "gpt-4.1": O200K, "openai/o3-mini": O200K, "openai/gpt-5": O200K,
		"openai/gpt-4": CL100K, "openai/gpt-3.5-turbo": CL100K, "openai/text-embedding-3-small": CL100K,
		"anthropic/claude-sonnet-4": CL100K, "demo/echo": CL100K, "": CL100K,
	} {
		if got := EncodingFor(model); got != want {
			t.Errorf("%q → %s, want %s", model, got, want)
		}
	}
}

func TestCountChatPrompt(t *testing.T) {
	for _, tc := range []struct {
		name         string
		body         string
		tokens, imgs int64
	}{
		// 3 per message + "user" (1) + "hello world" (2) + 3 reply priming.
		{"one message", `{"messages":[{"role":"user","content":"hello world"}]}`, 9, 0},
		{"name", `{"messages":[{"role":"user","name":"bob","content":"hello world"}]}`, 11, 0},
		{"parts and image", `{"messages":[{"role":"user","content":[{"type":"text","text":"hello world"},` +
			`{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}]}`, 9 + ImageTokens, 1},
		{"two messages", `{"messages":[{"role":"system","content":"tiktoken is great!"},{"role":"user","content":"hello world"}]}`,
			3 + 1 + 6 + 3 + 1 + 2 + 3, 0},
		{"empty", `{"messages":[]}`, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, imgs, err := CountChatPrompt("openai/gpt-4", []byte(tc.body))
			if err != nil || n != tc.tokens || imgs != tc.imgs {
				t.Fatalf("got %d tokens %d images %v; want %d, %d", n, imgs, err, tc.tokens, tc.imgs)
			}
		})
	}
}

func TestCountEmbeddingInput(t *testing.T) {
	for _, tc := range []struct {
		body   string
		tokens int64
	}{
		{`{"input":"hello world"}`, 2},
		{`{"input":["hello world","tiktoken is great!"]}`, 8},
		{`{"input":[15339,1917,0]}`, 3},
		{`{"input":[[15339,1917],[1]]}`, 3},
		{`{"input":[{"content":[{"type":"text","text":"hello world"},{"type":"image_url","image_url":{"url":"x"}}]}]}`, 2 + ImageTokens},
	} {
		n, _, err := CountEmbeddingInput("openai/text-embedding-3-small", []byte(tc.body))
		if err != nil || n != tc.tokens {
			t.Errorf("%s: %d %v, want %d", tc.body, n, err, tc.tokens)
		}
	}
}

// The hold estimate stays above the real count on ordinary text.
func TestEstimatePromptBoundsCount(t *testing.T) {
	texts := []string{
		"hello world",
		strings.Repeat("The quick brown fox jumps over the lazy dog. ", 40),
		strings.Repeat("お誕生日おめでとう、日本語のテキストです。", 30),
		strings.Repeat(`{"id": 12345, "values": [1.5, 2.25, 3.125], "ok": true}`, 30),
		strings.Repeat("func main() { for i := 0; i < 10; i++ { fmt.Println(i) } }\n", 30),
		strings.Repeat("0123456789abcdef", 64),
		strings.Repeat("a!b?c;d:", 100),   // adversarial: one byte per token
		strings.Repeat("🙂🚀∑≈ж", 60),       // rare multi-byte characters
		strings.Repeat("é\u00e9\n\t", 60), // escapes
	}
	for _, text := range texts {
		body := []byte(`{"model":"m","messages":[{"role":"user","content":` + quote(text) + `}]}`)
		for _, model := range []string{"openai/gpt-4", "openai/gpt-4o"} {
			exact, _, err := CountChatPrompt(model, body)
			if err != nil {
				t.Fatal(err)
			}
			est, _ := EstimatePrompt(body)
			if est < exact {
				t.Errorf("%s: estimate %d below count %d for %.30q", model, est, exact, text)
			}
		}
	}
	for body, want := range map[string]int64{
		`{"input":["hello world"]}`:                     13, // the JSON string's length
		`{"input":[1,2,3]}`:                             3,
		`{"messages":[{"role":"user","content":"hi"}]}`: 45 + 4 + 3, // the whole body + framing
		`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:..."}}]}]}`: 3 + 6 + ImageTokensBound + 3,
	} {
		if n, _ := EstimatePrompt([]byte(body)); n != want {
			t.Errorf("EstimatePrompt(%s) = %d, want %d", body, n, want)
		}
	}
}

func quote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

func BenchmarkEstimatePrompt(b *testing.B) {
	body := []byte(`{"model":"m","messages":[{"role":"system","content":"You are helpful."},{"role":"user","content":` +
		quote(strings.Repeat("The quick brown fox jumps over the lazy dog. ", 100)) + `}]}`)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		EstimatePrompt(body)
	}
	// The agent-shaped bodies of the request path's benchmarks: the bound
	// the validator takes when it saw no content parts (ChatTextBound),
	// and the walk of a body with an image.
	for _, size := range agentbody.Sizes {
		body := agentbody.Chat("m", false, size)
		b.Run("agent/"+agentbody.Name(size), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				EstimatePrompt(body)
			}
		})
		img := []byte(strings.Replace(string(body), `"messages":[`, `"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://example.com/a.png"}}]},`, 1))
		b.Run("agent+image/"+agentbody.Name(size), func(b *testing.B) {
			b.SetBytes(int64(len(img)))
			for b.Loop() {
				EstimatePrompt(img)
			}
		})
	}
}

// Counting a long text in segments (Count cuts texts over segmentBytes at
// a space between letters) gives the same count as counting it whole, for
// both encodings, on prose with punctuation, digits, newlines, non-ASCII
// letters and runs of spaces around the cut points.
func TestSegmentedCountEqualsWhole(t *testing.T) {
	unit := "Hello, world! Ünïcödé wörds 12345 and  two  spaces\nnew line\t tab's don't we'll I'M 3.14159 "
	text := strings.Repeat(unit, 3*segmentBytes/len(unit)+7)
	for _, name := range []string{"cl100k_base", "o200k_base"} {
		e, err := Get(name)
		if err != nil {
			t.Fatal(err)
		}
		whole := e.bpe.encode(text, nil, nil)
		if got := e.Count(text); got != whole {
			t.Errorf("%s: segmented count %d, whole %d", name, got, whole)
		}
	}
}

// tk is tiktoken's own encoder of e's vocabulary, the reference the
// counter and the decoder are checked against.
func tk(t testing.TB, e *Encoder) *tiktoken.Tiktoken {
	t.Helper()
	enc, err := e.l.tiktoken(e.name)
	if err != nil {
		t.Fatal(err)
	}
	return enc
}

// TestCountingLeavesTiktokenUnloaded: counting needs the rank map only;
// tiktoken's decoding tables are loaded by the first Decode.
func TestCountingLeavesTiktokenUnloaded(t *testing.T) {
	l := &lazy{}
	e := &Encoder{name: CL100K, l: l}
	var err error
	if e.bpe, err = load(CL100K); err != nil {
		t.Fatal(err)
	}
	if n := e.Count("hello world"); n != 2 {
		t.Fatalf("count %d", n)
	}
	if l.enc != nil {
		t.Fatal("counting loaded tiktoken's encoder")
	}
	if s, err := e.Decode([]int{15339, 1917}); err != nil || s != "hello world" {
		t.Fatalf("decode %q %v", s, err)
	}
}

// TestWarmForLoadsWhatTheModelsUse: a gateway warms the vocabularies of its
// catalog's models, each once, and none that no model uses.
func TestWarmForLoadsWhatTheModelsUse(t *testing.T) {
	for _, tc := range []struct {
		models []string
		want   []string
	}{
		{nil, nil},
		{[]string{"bench/chat", "anthropic/claude-sonnet-4", "demo/echo"}, []string{CL100K}},
		{[]string{"openai/gpt-4o", "openai/gpt-5-mini"}, []string{O200K}},
		{[]string{"openai/gpt-4o", "openai/text-embedding-3-small", "openai/gpt-4o"}, []string{CL100K, O200K}},
	} {
		got, err := WarmFor(tc.models...)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tc.want) {
			t.Fatalf("WarmFor(%q) loaded %v, want %v", tc.models, got, tc.want)
		}
		for _, name := range got {
			if l := encodings[name]; l.bpe == nil {
				t.Fatalf("WarmFor(%q) did not load %s", tc.models, name)
			}
		}
	}
}
