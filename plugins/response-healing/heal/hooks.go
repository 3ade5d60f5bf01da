package heal

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/sdk"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// The module's hooks. post_response does not see the request, so
// pre_request reads its response_format and hands what post_response needs
// over in the plugin's state (docs/plugins.md, "State across a request's
// hooks"): {"format": "json_object"} or {"format": "json_schema",
// "schema": {…}}. No state — no JSON asked for, a stream, or pre_request
// never ran — and post_response leaves the answer alone.

// PreRequest is the module's pre_request hook: it never changes the
// request.
func PreRequest(in *sdk.In, out *sdk.Out) error {
	body := in.Field(1)
	rf := sdk.Get(body, "response_format")
	format := rf.Get("type").Str
	out.FieldString(abi.ActionContinue)
	out.Field(nil)
	switch {
	case format != "json_object" && format != "json_schema":
		out.FieldString(`{"type":"plugin","summary":"no JSON requested: the answer is left alone","data":{"format":` + sdk.Quote(format) + `}}`)
		return nil
	case sdk.Get(body, "stream").Bool():
		// A stream's JSON is whole only at its end, after the client
		// has seen every chunk: there is nothing left to repair.
		out.FieldString(`{"type":"plugin","summary":"streamed: the answer is passed through","data":{"format":` + sdk.Quote(format) + `,"stream":true}}`)
		return nil
	}
	state := append([]byte(nil), `{"format":`...)
	state = sdk.AppendJSONString(state, format)
	schema := rf.Get("json_schema.schema")
	if format == "json_schema" && (schema.IsObject() || schema.Type == gjson.True || schema.Type == gjson.False) {
		state = append(state, `,"schema":`...)
		state = append(state, schema.Raw...)
	}
	state = append(state, '}')
	out.FieldString(`{"type":"plugin","summary":"JSON requested (` + format + `): the answer will be checked","data":{"format":` + sdk.Quote(format) + `}}`)
	out.Field(state)
	return nil
}

// PostResponse is the module's post_response hook: for a request that
// asked for JSON, each choice's content that is not valid JSON is
// repaired; with a schema, the repaired value is checked against it
// (and preferred among several in the text), and the stage says whether
// the answer satisfies it.
func PostResponse(in *sdk.In, out *sdk.Out) error {
	ctx, result := in.Field(0), in.Field(1)
	st := sdk.Get(ctx, "state")
	format := st.Get("format").Str
	out.FieldString(abi.ActionContinue)
	if format != "json_object" && format != "json_schema" {
		out.Field(nil)
		out.FieldString(`{"type":"plugin","summary":"no JSON requested: the answer is left alone","data":{"repaired":0}}`)
		return nil
	}
	var opt Options
	var sch *jsonschema.Schema
	schemaErr := ""
	// validate remembers the last check: the value Heal's Accept passed is
	// the one checked again for the stage.
	var lastS string
	var lastErr error
	checked := false
	validate := func(s string) error {
		if !checked || s != lastS {
			lastS, lastErr, checked = s, Validate(sch, s), true
		}
		return lastErr
	}
	if raw := st.Get("schema"); raw.Exists() {
		var err error
		if sch, err = CompileSchema(raw.Raw); err != nil {
			schemaErr = "the request's schema does not compile: " + err.Error()
		} else {
			switch raw.Get("type").Str {
			case "object":
				opt.Root = ObjectRoot
			case "array":
				opt.Root = ArrayRoot
			}
			opt.Accept = func(b []byte) bool { return validate(string(b)) == nil }
		}
	}
	var edited []byte
	var all Repairs
	repaired, notJSON, invalid, i := 0, 0, 0, -1
	firstInvalid := ""
	gjson.GetBytes(result, "choices").ForEach(func(_, ch gjson.Result) bool {
		i++
		content := ch.Get("message.content")
		if content.Type != gjson.String {
			return true
		}
		final := content.Str
		fixed, r, ok := Heal(content.Str, opt)
		switch {
		case !ok:
			notJSON++
		case fixed != content.Str:
			if edited == nil {
				edited = append([]byte(nil), result...)
			}
			edited, _ = sjson.SetBytes(edited, "choices."+strconv.Itoa(i)+".message.content", fixed)
			final = fixed
			repaired++
			all |= r
		}
		if sch != nil {
			if err := validate(final); err != nil {
				invalid++
				if firstInvalid == "" {
					firstInvalid = "choice " + strconv.Itoa(i) + ": " + err.Error()
				}
			}
		}
		return true
	})
	out.Field(edited) // empty: unchanged

	var sum strings.Builder
	switch {
	case repaired > 0:
		sum.WriteString("repaired JSON in " + strconv.Itoa(repaired) + " choice(s): " + all.String())
	case notJSON > 0:
		sum.WriteString("no JSON found in the answer: left alone")
	default:
		sum.WriteString("content already valid JSON")
	}
	switch {
	case sch != nil && invalid == 0:
		sum.WriteString("; valid against the schema")
	case sch != nil:
		sum.WriteString("; not valid against the schema")
	case schemaErr != "":
		sum.WriteString("; the schema could not be checked")
	}
	b := append([]byte(nil), `{"type":"plugin","summary":`...)
	b = sdk.AppendJSONString(b, sum.String())
	b = append(b, `,"data":{"format":`...)
	b = sdk.AppendJSONString(b, format)
	b = append(b, `,"repaired":`...)
	b = strconv.AppendInt(b, int64(repaired), 10)
	b = append(b, `,"repairs":[`...)
	for k, name := range all.Kinds() {
		if k > 0 {
			b = append(b, ',')
		}
		b = sdk.AppendJSONString(b, name)
	}
	b = append(b, `],"not_json":`...)
	b = strconv.AppendInt(b, int64(notJSON), 10)
	if sch != nil {
		b = append(b, `,"schema_valid":`...)
		b = strconv.AppendBool(b, invalid == 0)
		if firstInvalid != "" {
			b = append(b, `,"schema_error":`...)
			b = sdk.AppendJSONString(b, firstInvalid)
		}
	} else if schemaErr != "" {
		b = append(b, `,"schema_error":`...)
		b = sdk.AppendJSONString(b, schemaErr)
	}
	b = append(b, "}}"...)
	out.Field(b)
	return nil
}

// CompileSchema compiles a request's JSON Schema. It loads nothing: a
// $ref to anything outside the schema is an error.
func CompileSchema(doc string) (*jsonschema.Schema, error) {
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(doc))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(jsonschema.SchemeURLLoader{})
	if err := c.AddResource("request-schema.json", v); err != nil {
		return nil, err
	}
	return c.Compile("request-schema.json")
}

// Validate checks the JSON text s against sch; the error names the
// innermost failure and where it is.
func Validate(sch *jsonschema.Schema, s string) error {
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(s))
	if err != nil {
		return sdk.Error("not JSON")
	}
	if err := sch.Validate(v); err != nil {
		return sdk.Error(deepest(err))
	}
	return nil
}

func deepest(err error) string {
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return err.Error()
	}
	// The validator lists an object's failing members in map order: take
	// the first by location (then message) at each level, so the module
	// and the host, and two runs, name the same failure.
	for len(ve.Causes) > 0 {
		ve = slices.MinFunc(ve.Causes, func(a, b *jsonschema.ValidationError) int {
			return cmp.Or(slices.Compare(a.InstanceLocation, b.InstanceLocation), strings.Compare(a.Error(), b.Error()))
		})
	}
	msg := ve.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		msg = msg[i+2:]
	}
	return "at /" + strings.Join(ve.InstanceLocation, "/") + ": " + msg
}
