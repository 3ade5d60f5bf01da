package wire

import (
	"fmt"
	"strings"
	"testing"
)

// repairShapes are chunks and completions for TestRepairAgreesWithReference
// and FuzzRepair's corpus: well-formed ones, and each field repair reads
// absent, null, duplicated, escaped and of every wrong type.
var repairShapes = []string{
	`{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop","logprobs":null}],"usage":{"prompt_tokens":1}}`,
	`{"choices":[{"index":0,"delta":{"role":"assistant","content":"h"},"finish_reason":null}]}`,
	`{"usage":{"prompt_tokens":1}}`,
	`{"choices":{}}`,
	`{"choices":[1,"x",null,{"index":"0"},{}]}`,
	`{"created":"now","usage":5,"choices":[{"index":0,"finish_reason":3,"logprobs":"x","message":{"role":1,"refusal":2,"reasoning":[],"reasoning_content":{},"content":7,"function_call":"f","tool_calls":{}}}]}`,
	`{"choices":[{"message":{"content":[{"type":"text","text":"a"},"b",{"x":1}]}}]}`,
	`{"choices":[{"delta":"x"},{"delta":null},{"index":1}]}`,
	`{"choices":[{"index":0,"message":{"tool_calls":[1,{"index":"a","id":2,"type":3,"function":"f"},{"function":{"name":1,"arguments":{}}},{"id":"ok","type":"function","function":{"name":"n","arguments":"{}"}}]}}]}`,
	`{"choices":[{"index":0,"index":"x","message":{"content":"a","content":5,"role":"assistant","role":3}}],"choices":5}`,
	`{"choices":[{"ind\u0065x":"x","mess\u0061ge":{"cont\u0065nt":5}}],"cre\u0061ted":"x"}`,
	`{"created":1,"created":"x","usage":{},"usage":3,"choices":[]}`,
	`{"choices":[{"index":0,"message":{"content":null,"tool_calls":null,"function_call":null,"refusal":null}}]}`,
	`{"choices":[{"index":0,"message":{"content":"\u00e9\ud83d\ude00 \"q\" \\ x"}}]}`,
	"{\"choices\":[{\"index\":0,\"message\":{\"content\":\"\xff ok\"}}]}",
	`[]`, `"x"`, `{"choices":[}`, ``, `{}`,
}

func sameRepair(t *testing.T, in string) {
	t.Helper()
	for _, field := range []string{"message", "delta"} {
		out, fixes, ok := repair([]byte(in), field)
		wout, wfixes, wok := repairRef([]byte(in), field)
		if ok != wok || string(out) != string(wout) || fmt.Sprint(fixes) != fmt.Sprint(wfixes) {
			t.Fatalf("%s %q:\n got       %v %s %q\n reference %v %s %q", field, in, ok, out, fixes, wok, wout, wfixes)
		}
	}
}

func TestRepairAgreesWithReference(t *testing.T) {
	for _, in := range repairShapes {
		sameRepair(t, in)
	}
}

func FuzzRepair(f *testing.F) {
	for _, in := range repairShapes {
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, in string) { sameRepair(t, in) })
}

// BenchmarkRepairCompletion is the check of a well-formed 1 KB completion
// (nothing to repair), the common case on every non-streaming answer.
func BenchmarkRepairCompletion(b *testing.B) {
	body := []byte(`{"id":"chatcmpl-0123456789","object":"chat.completion","created":1700000000,"model":"gpt-4o-mini",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"` + strings.Repeat("lorem ipsum ", 80) +
		`","refusal":null},"logprobs":null,"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":250,"completion_tokens":120,"total_tokens":370},"system_fingerprint":"fp_0123"}`)
	for _, bc := range []struct {
		name string
		fn   func([]byte, string) ([]byte, []string, bool)
	}{{"members", repair}, {"reference", repairRef}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, fixes, ok := bc.fn(body, "message"); !ok || len(fixes) > 0 {
					b.Fatal(fixes)
				}
			}
		})
	}
}
