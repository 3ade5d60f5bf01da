package toolcheck

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// tools is the get_weather function of OpenAI's function-calling guide
// (platform.openai.com/docs/guides/function-calling, "Defining functions"):
// location required, units an enum.
const tools = `[{"type":"function","function":{"name":"get_weather","description":"Get current temperature for a given location.",
"parameters":{"type":"object","properties":{"location":{"type":"string"},"units":{"type":"string","enum":["celsius","fahrenheit"]}},
"required":["location"],"additionalProperties":false}}},
{"type":"function","function":{"name":"now"}}]`

// message wraps tool calls in a chat completion's choices, the shape of
// the same guide's response example.
func message(calls ...string) gjson.Result {
	return gjson.Parse(`[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[` + strings.Join(calls, ",") + `]},"finish_reason":"tool_calls"}]`)
}

func call(name, args string) string {
	return `{"id":"call_12345xyz","type":"function","function":{"name":"` + name + `","arguments":` + args + `}}`
}

func TestJudgeMessage(t *testing.T) {
	tests := []struct {
		name    string
		choices gjson.Result
		want    Verdict
	}{
		{"the guide's call", message(call("get_weather", `"{\"location\":\"Paris, France\"}"`)), Valid},
		{"no tool calls", gjson.Parse(`[{"index":0,"message":{"role":"assistant","content":"Hello"}}]`), None},
		{"no arguments for a function without parameters", message(call("now", `""`)), Valid},
		{"an unknown function", message(call("get_time", `"{}"`)), Invalid},
		{"arguments cut off", message(call("get_weather", `"{\"location\":\"Par"`)), Invalid},
		{"arguments not an object", message(call("get_weather", `"[\"Paris\"]"`)), Invalid},
		{"required member missing", message(call("get_weather", `"{\"units\":\"celsius\"}"`)), Invalid},
		{"value outside the enum", message(call("get_weather", `"{\"location\":\"Paris\",\"units\":\"kelvin\"}"`)), Invalid},
		{"one good, one bad", message(call("get_weather", `"{\"location\":\"Paris\"}"`), call("get_weather", `"{}"`)), Invalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c Calls
			c.Message(tt.choices)
			if got := c.Judge(gjson.Parse(tools)); got != tt.want {
				t.Fatalf("Judge = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestJudgeDeltas: a streamed call arrives as its name then its arguments
// in pieces (OpenAI's streaming guide, "Streaming function calls"); two
// calls interleave by index.
func TestJudgeDeltas(t *testing.T) {
	deltas := []string{
		`[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]`,
		`[{"index":1,"id":"call_2","type":"function","function":{"name":"get_weather","arguments":""}}]`,
		`[{"index":0,"function":{"arguments":"{\"location\":"}}]`,
		`[{"index":1,"function":{"arguments":"{\"location\":\"Bogotá\"}"}}]`,
		`[{"index":0,"function":{"arguments":"\"Paris\"}"}}]`,
	}
	var c Calls
	for _, d := range deltas {
		c.Delta(0, gjson.Parse(d))
	}
	if c.Len() != 2 {
		t.Fatalf("%d calls, want 2", c.Len())
	}
	if got := c.Judge(gjson.Parse(tools)); got != Valid {
		t.Fatalf("Judge = %v, want Valid", got)
	}
	// The same stream cut before the first call's arguments end.
	var cut Calls
	for _, d := range deltas[:4] {
		cut.Delta(0, gjson.Parse(d))
	}
	if got := cut.Judge(gjson.Parse(tools)); got != Invalid {
		t.Fatalf("cut stream: Judge = %v, want Invalid", got)
	}
}

// TestJudgeBadSchema: a parameters schema that does not compile judges the
// call on its name and JSON only: the client's schema is not the
// endpoint's fault.
func TestJudgeBadSchema(t *testing.T) {
	bad := `[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"no-such-type"}}}}}]`
	var c Calls
	c.Message(message(call("f", `"{\"a\":1}"`)))
	if got := c.Judge(gjson.Parse(bad)); got != Valid {
		t.Fatalf("Judge = %v, want Valid", got)
	}
}

func FuzzJudge(f *testing.F) {
	f.Add(`{"location":"Paris"}`, `[{"index":0,"function":{"name":"get_weather","arguments":"{}"}}]`)
	f.Add(`{"location":`, `[{"index":3,"function":{"arguments":"x"}}]`)
	f.Fuzz(func(t *testing.T, args, delta string) {
		var c Calls
		c.Message(message(call("get_weather", `"`+strings.ReplaceAll(strings.ReplaceAll(args, `\`, `\\`), `"`, `\"`)+`"`)))
		c.Delta(0, gjson.Parse(delta))
		if v := c.Judge(gjson.Parse(tools)); v == None {
			t.Fatal("calls collected but judged None")
		}
	})
}

func BenchmarkJudge(b *testing.B) {
	ts := gjson.Parse(tools)
	choices := message(call("get_weather", `"{\"location\":\"Paris, France\",\"units\":\"celsius\"}"`))
	run := func(b *testing.B, uncached bool) {
		for b.Loop() {
			if uncached {
				schemas.Lock()
				clear(schemas.m)
				schemas.Unlock()
			}
			var c Calls
			c.Message(choices)
			if c.Judge(ts) != Valid {
				b.Fatal("not valid")
			}
		}
	}
	b.Run("cached", func(b *testing.B) { run(b, false) })
	b.Run("uncached", func(b *testing.B) { run(b, true) })
}
