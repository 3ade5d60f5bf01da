package completions

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

func TestToChat(t *testing.T) {
	cases := []struct {
		name, body string
		field      string // the refused field, "" when accepted
		messages   string
		echo       string
		check      func(t *testing.T, chat gjson.Result)
	}{
		{name: "a string prompt", body: `{"model":"m","prompt":"Once upon a time","max_tokens":5,"temperature":0.2,"provider":{"sort":"price"}}`,
			messages: `[{"role":"user","content":"Once upon a time"}]`,
			check: func(t *testing.T, c gjson.Result) {
				if c.Get("prompt").Exists() || c.Get("max_tokens").Int() != 5 || c.Get("provider.sort").Str != "price" || c.Get("model").Str != "m" {
					t.Fatalf("chat %s", c.Raw)
				}
			}},
		{name: "an array of one prompt", body: `{"model":"m","prompt":["say \"hi\"\n"]}`, messages: `[{"role":"user","content":"say \"hi\"\n"}]`},
		{name: "echo", body: `{"model":"m","prompt":"ab","echo":true}`, messages: `[{"role":"user","content":"ab"}]`, echo: "ab",
			check: func(t *testing.T, c gjson.Result) {
				if c.Get("echo").Exists() {
					t.Fatalf("echo reached chat: %s", c.Raw)
				}
			}},
		{name: "logprobs as a count", body: `{"model":"m","prompt":"x","logprobs":3}`, messages: `[{"role":"user","content":"x"}]`,
			check: func(t *testing.T, c gjson.Result) {
				if c.Get("logprobs").Type != gjson.True || c.Get("top_logprobs").Int() != 3 {
					t.Fatalf("chat %s", c.Raw)
				}
			}},
		{name: "no prompt", body: `{"model":"m"}`, field: "prompt"},
		{name: "null prompt", body: `{"model":"m","prompt":null}`, field: "prompt"},
		{name: "two prompts", body: `{"model":"m","prompt":["a","b"]}`, field: "prompt"},
		{name: "token ids", body: `{"model":"m","prompt":[1,2,3]}`, field: "prompt"},
		{name: "a number", body: `{"model":"m","prompt":4}`, field: "prompt"},
		{name: "suffix", body: `{"model":"m","prompt":"a","suffix":"z"}`, field: "suffix"},
		{name: "best_of", body: `{"model":"m","prompt":"a","best_of":3}`, field: "best_of"},
		{name: "not an object", body: `[1]`, field: ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, aerr := ToChat([]byte(tc.body))
			if tc.messages == "" {
				if aerr == nil || aerr.Status != 400 || !strings.Contains(aerr.Message, tc.field) {
					t.Fatalf("ToChat(%s) = %v, want a 400 naming %q", tc.body, aerr, tc.field)
				}
				return
			}
			if aerr != nil {
				t.Fatal(aerr)
			}
			c := gjson.ParseBytes(r.Chat)
			if got := c.Get("messages").Raw; got != tc.messages || r.Echo != tc.echo {
				t.Fatalf("messages %s echo %q; want %s %q", got, r.Echo, tc.messages, tc.echo)
			}
			if tc.check != nil {
				tc.check(t, c)
			}
		})
	}
}

// The chat answer becomes a text_completion, its other members kept;
// logprobs come in completions' side-by-side form.
func TestFromChat(t *testing.T) {
	chat := `{"id":"gen-1","object":"chat.completion","created":1,"model":"m","provider":"p","choices":[` +
		`{"index":0,"message":{"role":"assistant","content":"there was a dog"},"finish_reason":"stop","native_finish_reason":"end_turn",` +
		`"logprobs":{"content":[{"token":"there","logprob":-0.5,"top_logprobs":[{"token":"there","logprob":-0.5},{"token":"a","logprob":-1}]},{"token":" was","logprob":-0.25,"top_logprobs":[]}]}}],` +
		`"usage":{"prompt_tokens":4,"completion_tokens":4,"total_tokens":8,"cost":0.0001}}`
	out := gjson.ParseBytes(FromChat([]byte(chat), &Request{Echo: "Once "}))
	ch := out.Get("choices.0")
	if out.Get("object").Str != "text_completion" || out.Get("id").Str != "gen-1" || out.Get("provider").Str != "p" || out.Get("usage.cost").Float() != 0.0001 {
		t.Fatalf("answer %s", out.Raw)
	}
	if ch.Get("text").Str != "Once there was a dog" || ch.Get("finish_reason").Str != "stop" || ch.Get("native_finish_reason").Str != "end_turn" || ch.Get("message").Exists() {
		t.Fatalf("choice %s", ch.Raw)
	}
	if lp := ch.Get("logprobs"); lp.Get("tokens").Raw != `["there"," was"]` || lp.Get("token_logprobs").Raw != `[-0.5,-0.25]` ||
		lp.Get("top_logprobs").Raw != `[{"there":-0.5,"a":-1},{}]` || lp.Get("text_offset").Raw != `[0,5]` {
		t.Fatalf("logprobs %s", lp.Raw)
	}
	if got := gjson.ParseBytes(FromChat([]byte(`{"choices":[{"index":0,"message":{"content":null},"finish_reason":null}]}`), &Request{})).Get("choices.0").Raw; got != `{"text":"","index":0,"logprobs":null,"finish_reason":null}` {
		t.Fatalf("empty choice %s", got)
	}
}

// A stream translates line by line whatever its split: chunks become
// text chunks (the echo before a choice's first text), the usage chunk,
// an error chunk, comments and [DONE] pass.
func TestStream(t *testing.T) {
	chat := ": keep-alive\n\n" +
		`data: {"id":"gen-1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"},"finish_reason":null}]}` + "\n\n" +
		`data: {"id":"gen-1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop"}]}` + "\n\n" +
		`data: {"id":"gen-1","object":"chat.completion.chunk","model":"m","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3,"cost":0.5}}` + "\n\n" +
		`data: {"error":{"code":502,"message":"x"}}` + "\n\n" +
		"data: [DONE]\n\n"
	want := ": keep-alive\n\n" +
		`data: {"id":"gen-1","object":"text_completion","model":"m","choices":[{"text":"> Hel","index":0,"logprobs":null,"finish_reason":null}]}` + "\n\n" +
		`data: {"id":"gen-1","object":"text_completion","model":"m","choices":[{"text":"lo","index":0,"logprobs":null,"finish_reason":"stop"}]}` + "\n\n" +
		`data: {"id":"gen-1","object":"text_completion","model":"m","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3,"cost":0.5}}` + "\n\n" +
		`data: {"error":{"code":502,"message":"x"}}` + "\n\n" +
		"data: [DONE]\n\n"
	for _, split := range []int{1, 7, 64, len(chat)} {
		s := NewStream(&Request{Echo: "> "})
		var got []byte
		for p := chat; p != ""; {
			n := min(split, len(p))
			got = append(got, s.Feed([]byte(p[:n]))...)
			p = p[n:]
		}
		got = append(got, s.End()...)
		if string(got) != want {
			t.Fatalf("split %d:\n%s\nwant\n%s", split, got, want)
		}
	}
}

func FuzzStream(f *testing.F) {
	f.Add([]byte(`data: {"choices":[{"index":0,"delta":{"content":"a"}}]}`+"\n\n"), 3)
	f.Add([]byte("data: [DONE]\n: x\ndata: {\n"), 1)
	f.Fuzz(func(t *testing.T, b []byte, split int) {
		if split <= 0 {
			split = 1
		}
		s := NewStream(&Request{Echo: "e"})
		for p := b; len(p) > 0; {
			n := min(split, len(p))
			s.Feed(p[:n])
			p = p[n:]
		}
		s.End()
	})
}

func FuzzToChat(f *testing.F) {
	f.Add([]byte(`{"model":"m","prompt":"hi","logprobs":2,"echo":true}`))
	f.Add([]byte(`{"prompt":["x"]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, aerr := ToChat(b)
		if aerr == nil && !gjson.ValidBytes(r.Chat) {
			t.Fatalf("invalid chat body %q from %q", r.Chat, b)
		}
	})
}
