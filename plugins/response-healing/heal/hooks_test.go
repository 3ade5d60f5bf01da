package heal

import (
	"testing"

	"github.com/switchyard/switchyard/sdk"
	"github.com/tidwall/gjson"
)

const broken = "```json\n{\"name\": \"Ada\", \"age\": 36,}\n```"

// Without a response_format asking for JSON, nothing is touched, however
// JSON-like the answer; the bug of issue 34.
func TestLeavesAnswersAloneWhenJSONNotRequested(t *testing.T) {
	answers := []string{
		"In Python use {} for an empty dict and [] for an empty list.",
		"```go\npackage main\n\nfunc main() {}\n```",
		broken,
		`{"items": [1, 2`,
	}
	requests := []string{
		`{"model":"m","messages":[]}`,
		`{"model":"m","messages":[],"response_format":{"type":"text"}}`,
		`{"model":"m","messages":[],"response_format":{"type":"grammar","grammar":"root ::= x"}}`,
		`{"model":"m","messages":[],"response_format":null}`,
	}
	for _, req := range requests {
		for _, a := range answers {
			got, data := runHooks(t, req, a)
			if got != a {
				t.Errorf("request %s: %q became %q", req, a, got)
			}
			if data.Get("repaired").Int() != 0 {
				t.Errorf("stage data %s", data.Raw)
			}
		}
	}
	// post_response without state (pre_request never ran) is a no-op too.
	out, err := sdk.Run(PostResponse, []byte(`{"config":{"id":"response-healing"}}`), []byte(`{"choices":[{"message":{"content":"{a: 1}"}}]}`))
	if err != nil || len(out[1]) != 0 {
		t.Fatalf("%q %v", out, err)
	}
}

func TestPreRequestState(t *testing.T) {
	ctx := []byte(`{"config":{"id":"response-healing"}}`)
	cases := []struct{ req, state string }{
		{`{"response_format":{"type":"json_object"}}`, `{"format":"json_object"}`},
		{`{"response_format":{"type":"json_schema","json_schema":{"name":"x","strict":true,"schema":{"type":"object"}}}}`, `{"format":"json_schema","schema":{"type":"object"}}`},
		{`{"response_format":{"type":"json_schema","json_schema":{"name":"x"}}}`, `{"format":"json_schema"}`},
		{`{"response_format":{"type":"json_object"},"stream":true}`, ``},
		{`{"response_format":{"type":"text"}}`, ``},
		{`{}`, ``},
	}
	for _, c := range cases {
		out, err := sdk.Run(PreRequest, ctx, []byte(c.req))
		if err != nil {
			t.Fatal(err)
		}
		state := ""
		if len(out) > 3 {
			state = string(out[3])
		}
		if string(out[0]) != "continue" || len(out[1]) != 0 || state != c.state || !gjson.ValidBytes(out[2]) {
			t.Errorf("%s: %q, state %q want %q", c.req, out, state, c.state)
		}
	}
}

func TestPostResponseStage(t *testing.T) {
	schemaReq := `{"model":"m","messages":[],"response_format":{"type":"json_schema","json_schema":{"name":"p","schema":{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},"required":["name","age"]}}}}`
	got, data := runHooks(t, schemaReq, broken)
	if got != `{"name": "Ada", "age": 36}` {
		t.Fatalf("healed %q", got)
	}
	if data.Get("repaired").Int() != 1 || data.Get("repairs").Raw != `["fence","trailing_comma"]` || !data.Get("schema_valid").Bool() || data.Get("format").Str != "json_schema" {
		t.Fatalf("stage data %s", data.Raw)
	}
	// Valid JSON that breaks the schema: unchanged, and said so.
	got, data = runHooks(t, schemaReq, `{"name": "Ada"}`)
	if got != `{"name": "Ada"}` || data.Get("schema_valid").Bool() || data.Get("repaired").Int() != 0 || data.Get("schema_error").Str != "choice 0: at /: missing property 'age'" {
		t.Fatalf("%q %s", got, data.Raw)
	}
	// No JSON at all.
	got, data = runHooks(t, schemaReq, "Sorry, I can't.")
	if got != "Sorry, I can't." || data.Get("not_json").Int() != 1 || data.Get("schema_valid").Bool() {
		t.Fatalf("%q %s", got, data.Raw)
	}
	// A schema that does not compile: repaired all the same, and said.
	bad := `{"model":"m","messages":[],"response_format":{"type":"json_schema","json_schema":{"name":"p","schema":{"type":"object","$ref":"https://example.com/s.json"}}}}`
	got, data = runHooks(t, bad, broken)
	if got != `{"name": "Ada", "age": 36}` || data.Get("schema_valid").Exists() || data.Get("schema_error").Str == "" {
		t.Fatalf("%q %s", got, data.Raw)
	}
	// json_object: no schema member.
	_, data = runHooks(t, `{"model":"m","messages":[],"response_format":{"type":"json_object"}}`, broken)
	if data.Get("schema_valid").Exists() || data.Get("repaired").Int() != 1 {
		t.Fatalf("%s", data.Raw)
	}
}

// Every choice is healed on its own; a choice without text content (tool
// calls) is skipped.
func TestPostResponseChoices(t *testing.T) {
	ctx := []byte(`{"config":{"id":"response-healing"},"state":{"format":"json_object"}}`)
	result := `{"choices":[` +
		`{"index":0,"message":{"role":"assistant","content":"{a: 1}"}},` +
		`{"index":1,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}},` +
		`{"index":2,"message":{"role":"assistant","content":"{\"ok\": true}"}},` +
		`{"index":3,"message":{"role":"assistant","content":"[1, 2,"}}]}`
	out, err := sdk.Run(PostResponse, ctx, []byte(result))
	if err != nil {
		t.Fatal(err)
	}
	r := gjson.ParseBytes(out[1])
	if r.Get("choices.0.message.content").Str != `{"a": 1}` || r.Get("choices.1.message.content").Type != gjson.Null ||
		r.Get("choices.2.message.content").Str != `{"ok": true}` || r.Get("choices.3.message.content").Str != `[1, 2]` {
		t.Fatalf("%s", out[1])
	}
	if d := gjson.GetBytes(out[2], "data"); d.Get("repaired").Int() != 2 || d.Get("repairs").Raw != `["truncated","unquoted_key"]` {
		t.Fatalf("%s", out[2])
	}
}
