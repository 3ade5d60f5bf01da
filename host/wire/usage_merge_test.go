package wire

import (
	"testing"

	"github.com/switchyard/switchyard/host/usage"
	"github.com/tidwall/gjson"
)

// usageShapes are response bodies whose usage objects WriteUsage must
// treat exactly as writeUsageBySets does: absent, empty, complete, with
// details, with members in another order, duplicated, of the wrong type,
// with extra members, with whitespace, and bodies that are not objects.
var usageShapes = []string{
	`{"id":"x","choices":[]}`,
	`{"id":"x","usage":{}}`,
	`{"id":"x","usage":null}`,
	`{"id":"x","usage":5}`,
	`{"id":"x","usage":[1,2]}`,
	`{"id":"x","usage":"text"}`,
	`{"id":"x","usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`,
	`{"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15},"id":"first"}`,
	`{"id":"x","usage":{"total_tokens":15,"completion_tokens":5,"prompt_tokens":10,"extra":{"a":[1,2]}}}`,
	`{"id":"x","usage":{"prompt_tokens":100,"completion_tokens":50,"total_tokens":150,"prompt_tokens_details":{"cached_tokens":20,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":10},"extra":"kept"}}`,
	`{"id":"x","usage":{"prompt_tokens_details":{"audio_tokens":3},"completion_tokens_details":{"accepted_prediction_tokens":1}}}`,
	`{"id":"x","usage":{"prompt_tokens_details":null,"completion_tokens_details":7}}`,
	`{"id":"x","usage":{"prompt_tokens_details":[1],"completion_tokens_details":"s"}}`,
	`{"id":"x","usage":{"prompt_tokens_details":{},"completion_tokens_details":{}}}`,
	`{"id":"x","usage":{"prompt_tokens_details":{"cached_tokens":1,"audio_tokens":2,"cached_tokens":9}}}`,
	`{"id":"x","usage":{"prompt_tokens_details":{ "a" : [1, {"cached_tokens":3}] , "cached_tokens" :1},"completion_tokens_details":{"x":{}}}}`,
	`{"id":"x","usage":{"prompt_tokens":1,"prompt_tokens":2,"cost":9,"cost":8}}`,
	`{"id":"x","usage":{"estimated":false,"cost":"old","cost_details":{"prompt":1}}}`,
	`{"id":"x","usage":{ "prompt_tokens" : 10 ,
	  "completion_tokens":5 } , "choices":[{"message":{"content":"usage"}}]}`,
	`{"id":"x","usage":{"prompt_tokens":10},"usage":{"prompt_tokens":20}}`,
	`{"id":"x","usage":{"a\u0062":1,"prompt\u005ftokens":3}}`,
	`{"id":"x","usage":{"prompt_tokens":1e3,"completion_tokens":-1,"total_tokens":true}}`,
	`{"id":"x","nested":{"usage":{"prompt_tokens":1}},"usage":{"prompt_tokens":2}}`,
	`{"id":"x","usage":{"prompt_tokens":10,}}`,
	`{"id":"x","usage":{"prompt_tokens":`,
	`[{"usage":{}}]`,
	`"usage"`,
	``,
	`{}`,
	` { "usage" : { } } `,
}

func usageGenerations() []*usage.Generation {
	return []*usage.Generation{
		{Usage: usage.Usage{PromptTokens: 100, CompletionTokens: 50}, Charged: 123456789,
			Cost: usage.Cost{Prompt: 1, Completion: 2, Total: 3}},
		{Usage: usage.Usage{PromptTokens: 7, CompletionTokens: 0, CachedTokens: 3, ReasoningTokens: 2, Estimated: true},
			Charged: 5, FailedCost: 4, Uncollected: 1, FeesCost: 2_500_000,
			Cost: usage.Cost{Prompt: 1, CacheRead: 2, Completion: 3, Reasoning: 4, Audio: 5, Request: 6, Image: 7}},
		{Usage: usage.Usage{CachedTokens: 1}, Charged: -5},
		{Usage: usage.Usage{ReasoningTokens: 9, Estimated: true}},
	}
}

// sameUsageOutput fails unless WriteUsage and writeUsageBySets agree on
// body: the same error, and outputs equal once whitespace is removed
// (mergeUsage writes members without the upstream's spacing).
func sameUsageOutput(t *testing.T, body string, g *usage.Generation) {
	t.Helper()
	got, gerr := WriteUsage([]byte(body), g)
	want, werr := writeUsageBySets([]byte(body), g)
	if (gerr == nil) != (werr == nil) {
		t.Fatalf("body %q: error %v, by sets %v", body, gerr, werr)
	}
	if gerr != nil {
		return
	}
	if compact(got) != compact(want) {
		t.Fatalf("body %q, usage %+v:\n got     %s\n by sets %s", body, g.Usage, got, want)
	}
}

func compact(b []byte) string {
	if !gjson.ValidBytes(b) {
		return string(b)
	}
	return gjson.GetBytes(b, "@ugly").Raw
}

func TestWriteUsageAgreesWithSetBySet(t *testing.T) {
	for _, body := range usageShapes {
		for _, g := range usageGenerations() {
			sameUsageOutput(t, body, g)
		}
	}
}

func FuzzWriteUsage(f *testing.F) {
	for _, body := range usageShapes {
		f.Add(body, int64(10), int64(5), int64(0), int64(0), false, int64(1234))
		f.Add(body, int64(0), int64(0), int64(3), int64(4), true, int64(-1))
	}
	f.Fuzz(func(t *testing.T, body string, p, c, cached, reasoning int64, est bool, charged int64) {
		if !gjson.Valid(body) {
			// Every caller's body is valid JSON (RepairCompletion refuses
			// anything else); what sjson makes of invalid JSON is not a
			// definition worth matching byte for byte.
			t.Skip()
		}
		g := &usage.Generation{Usage: usage.Usage{PromptTokens: p, CompletionTokens: c, CachedTokens: cached,
			ReasoningTokens: reasoning, Estimated: est}, Charged: usage.Nanos(charged),
			Cost: usage.Cost{Prompt: usage.Nanos(p), Completion: usage.Nanos(c)}, FeesCost: usage.Nanos(cached)}
		sameUsageOutput(t, body, g)
	})
}

// BenchmarkWriteUsage is the settlement's rewrite of a 1 KB completion's
// usage object.
func BenchmarkWriteUsage(b *testing.B) {
	body := []byte(`{"id":"chatcmpl-0123456789","object":"chat.completion","created":1700000000,"model":"gpt-4o-mini",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"` + string(make1K()) + `"},"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":250,"completion_tokens":120,"total_tokens":370,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},` +
		`"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0}}}`)
	g := usageGenerations()[0]
	for _, bc := range []struct {
		name string
		fn   func([]byte, *usage.Generation) ([]byte, error)
	}{{"merge", WriteUsage}, {"bysets", writeUsageBySets}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bc.fn(body, g); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func FuzzParseUsage(f *testing.F) {
	for _, body := range usageShapes {
		f.Add(body)
	}
	for _, body := range []string{
		`{"usage":{"prompt_tokens":10,"total_tokens":10}}`,
		`{"usage":{"prompt_tokens":10,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":-3}}}`,
		`{"usage":{"prompt_tokens":1,"prompt_tokens_details":5,"prompt_tokens_details":{"cached_tokens":3}}}`,
		`{"usage":{"prompt_tokens":1,"completion_tokens_details":[{"reasoning_tokens":3}],"prompt_tokens_details":{"audio_tokens":2,"cached_tokens":1,"cached_tokens":9}}}`,
	} {
		f.Add(body)
	}
	f.Fuzz(func(t *testing.T, body string) {
		u, ok := ParseUsage([]byte(body))
		wu, wok := parseUsageByGet([]byte(body))
		if u != wu || ok != wok {
			t.Fatalf("%q: %+v %v, by Get %+v %v", body, u, ok, wu, wok)
		}
	})
}

// BenchmarkParseUsage reads the usage of a 1 KB completion.
func BenchmarkParseUsage(b *testing.B) {
	body := []byte(`{"id":"chatcmpl-0123456789","object":"chat.completion","created":1700000000,"model":"gpt-4o-mini",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"` + string(make1K()) + `"},"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":250,"completion_tokens":120,"total_tokens":370,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},` +
		`"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0}}}`)
	for _, bc := range []struct {
		name string
		fn   func([]byte) (usage.Usage, bool)
	}{{"members", ParseUsage}, {"get", parseUsageByGet}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := bc.fn(body); !ok {
					b.Fatal("no usage")
				}
			}
		})
	}
}

func make1K() []byte {
	b := make([]byte, 900)
	for i := range b {
		b[i] = 'a' + byte(i%26)
	}
	return b
}
