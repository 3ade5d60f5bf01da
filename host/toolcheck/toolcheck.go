// Package toolcheck judges the tool calls of a model's answer against the
// tools its request offered: what the router's :exacto variant ranks
// endpoints by (docs/routing.md, "Model variants"). A call is valid when it
// names a function the request offered and its arguments are a JSON object
// that function's parameters schema accepts. A bad call is the endpoint's
// failure to call tools well (a wrong name, arguments cut off or not JSON,
// a required member missing), which is what a client of :exacto wants to
// avoid.
package toolcheck

import (
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/tidwall/gjson"
)

// Verdict is the judgement of one answer.
type Verdict uint8

const (
	None    Verdict = iota // the answer made no tool call
	Valid                  // every call was valid
	Invalid                // at least one was not
)

// Call is one tool call of an answer: the function's name and its
// arguments, the JSON text the model wrote.
type Call struct {
	Name, Arguments string
}

// Calls collects an answer's tool calls: from a JSON answer's choices
// (Message) or from a stream's deltas (Delta), which send a call's name
// once and its arguments in pieces.
type Calls struct {
	calls []Call
	// Streamed calls: the position in calls of each choice's delta index,
	// and their arguments so far (a builder each, so pieces cost their
	// size, not the size of what came before).
	index map[int64]int
	args  []*strings.Builder
}

// Message adds the tool calls of a chat completion's choices.
func (c *Calls) Message(choices gjson.Result) {
	choices.ForEach(func(_, ch gjson.Result) bool {
		ch.Get("message.tool_calls").ForEach(func(_, tc gjson.Result) bool {
			if tc.Get("type").Str == "" || tc.Get("type").Str == "function" {
				c.calls = append(c.calls, Call{Name: tc.Get("function.name").Str, Arguments: tc.Get("function.arguments").Str})
			}
			return true
		})
		return true
	})
}

// Delta adds one streamed delta.tool_calls array of choice ch: a piece
// with a new index starts a call, the others extend it.
func (c *Calls) Delta(ch int64, toolCalls gjson.Result) {
	toolCalls.ForEach(func(_, tc gjson.Result) bool {
		key := ch<<32 | tc.Get("index").Int()
		if c.index == nil {
			c.index = map[int64]int{}
		}
		i, ok := c.index[key]
		if !ok {
			i = len(c.calls)
			c.index[key] = i
			c.calls = append(c.calls, Call{})
			for len(c.args) < i {
				c.args = append(c.args, nil) // calls added by Message
			}
			c.args = append(c.args, &strings.Builder{})
		}
		if n := tc.Get("function.name").Str; n != "" {
			c.calls[i].Name = n
		}
		c.args[i].WriteString(tc.Get("function.arguments").Str)
		return true
	})
}

// Len is the number of calls collected.
func (c *Calls) Len() int { return len(c.calls) }

// Judge judges the collected calls against the request's tools array.
func (c *Calls) Judge(tools gjson.Result) Verdict {
	if len(c.calls) == 0 {
		return None
	}
	for i, call := range c.calls {
		if i < len(c.args) && c.args[i] != nil {
			call.Arguments = c.args[i].String()
		}
		if !valid(call, tools) {
			return Invalid
		}
	}
	return Valid
}

// valid reports whether one call names an offered function and its
// arguments are an object its schema accepts. A schema the client sent
// that does not compile judges nothing: the endpoint is not at fault.
func valid(call Call, tools gjson.Result) bool {
	var params gjson.Result
	found := false
	tools.ForEach(func(_, t gjson.Result) bool {
		if t.Get("type").Str == "function" && t.Get("function.name").Str == call.Name {
			params, found = t.Get("function.parameters"), true
			return false
		}
		return true
	})
	if !found || call.Name == "" {
		return false
	}
	args := strings.TrimSpace(call.Arguments)
	if args == "" {
		args = "{}" // a call without arguments: some providers send ""
	}
	if !gjson.Valid(args) || !gjson.Parse(args).IsObject() {
		return false
	}
	if !params.IsObject() {
		return true
	}
	sch, err := compile(params.Raw)
	if err != nil {
		return true
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(args))
	if err != nil {
		return false
	}
	return sch.Validate(v) == nil
}

// schemas caches compiled parameters schemas by their text: compiling one
// costs about 0.4 ms (BenchmarkJudge/uncached) and an agent sends the same
// tools every turn. It is emptied when it reaches maxSchemas, which bounds
// its memory without bookkeeping per entry.
var schemas = struct {
	sync.Mutex
	m map[string]compiled
}{m: map[string]compiled{}}

type compiled struct {
	sch *jsonschema.Schema
	err error
}

const maxSchemas = 256

// compile compiles a function's parameters schema (cached). It loads
// nothing: a $ref outside the schema is an error.
func compile(doc string) (*jsonschema.Schema, error) {
	schemas.Lock()
	c, ok := schemas.m[doc]
	schemas.Unlock()
	if ok {
		return c.sch, c.err
	}
	c.sch, c.err = compileNow(doc)
	schemas.Lock()
	if len(schemas.m) >= maxSchemas {
		clear(schemas.m)
	}
	schemas.m[doc] = c
	schemas.Unlock()
	return c.sch, c.err
}

func compileNow(doc string) (*jsonschema.Schema, error) {
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(doc))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(jsonschema.SchemeURLLoader{})
	if err := c.AddResource("parameters.json", v); err != nil {
		return nil, err
	}
	return c.Compile("parameters.json")
}
