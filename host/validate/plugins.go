package validate

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/switchyard/switchyard/abi/manifest"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/jsonwalk"
	"github.com/tidwall/gjson"
)

// plugin checks one item of plugins (the path is already plugins[i]): an
// object with a non-empty string id and, if present, a boolean enabled.
//
// Its options are the plugin's business: the host knows no plugin by
// name. PluginOptions checks them against the config_schema of the module
// the request would run under that id, once the caller knows the account
// (flow.ParseChat); the plugin pipeline answers an id that names no
// installed plugin with 400 `plugins[i].id: unknown plugin "x"`.
func (v *validator) plugin(p gjson.Result) *apierr.Error {
	if err := v.object(p); err != nil {
		return err
	}
	idv := v.Get(p, "id")
	if idv.Type != gjson.String || idv.Raw == `""` {
		return v.failAt("id", "required: the id of a plugin installed for the account (GET /modules lists them), got %s", describe(idv))
	}
	if e := v.Get(p, "enabled"); e.Exists() {
		return v.field("enabled", e, v.boolean)
	}
	return nil
}

// FormatModelID is the config_schema format of a model id
// (<vendor>/<model_name>, optionally :<variant>); a plugin's schema names
// it for an option that takes one, and gets the request's own check and
// message for it.
const FormatModelID = "model-id"

// hostFormats are the formats the host asserts in plugin schemas.
var hostFormats = []*jsonschema.Format{{Name: FormatModelID, Validate: func(x any) error {
	if s, ok := x.(string); ok && !isModelID(s) {
		return errors.New("not a model id of the form <vendor>/<model_name>")
	}
	return nil
}}}

// CompilePluginSchema compiles a plugin's config_schema with the host's
// formats (FormatModelID).
func CompilePluginSchema(doc []byte) (*jsonschema.Schema, error) {
	return manifest.CompileSchema("config.json", doc, hostFormats...)
}

// UnsupportedOptions are the options of a config_schema marked
// "x-unsupported": true: accepted and checked, because OpenRouter's SDKs
// send them, but not implemented by the plugin. The host removes them
// before the plugin runs and reports them in service_metadata.unsupported.
func UnsupportedOptions(configSchema []byte) []string {
	var out []string
	gjson.GetBytes(configSchema, "properties").ForEach(func(k, p gjson.Result) bool {
		if p.Get("x-unsupported").Type == gjson.True {
			out = append(out, k.Str)
		}
		return true
	})
	return out
}

// PluginSchemas finds the compiled config_schema of the plugin a request
// runs under id: nil when it has none or no such plugin is installed (the
// pipeline says so).
type PluginSchemas func(id string) *jsonschema.Schema

// PluginOptions checks every item of a validated request's plugins array
// against its plugin's config_schema. The JSON Schema validator decides;
// the message is the request validator's own (the path of the option, the
// rule it breaks, what was sent), so a plugin's options read like any
// other field's. Disabled items are checked too: the request is wrong
// either way.
func PluginOptions(plugins gjson.Result, find PluginSchemas) *apierr.Error {
	if !plugins.IsArray() || find == nil {
		return nil
	}
	var aerr *apierr.Error
	i := 0
	plugins.ForEach(func(_, p gjson.Result) bool {
		if sch := find(p.Get("id").Str); sch != nil {
			aerr = PluginOption(i, p.Get("id").Str, sch, p.Raw)
		}
		i++
		return aerr == nil
	})
	return aerr
}

// PluginOption checks item, plugins[index] of a request, against plugin
// id's compiled config_schema.
func PluginOption(index int, id string, sch *jsonschema.Schema, item string) *apierr.Error {
	at := "plugins[" + strconv.Itoa(index) + "]"
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(item))
	if err != nil {
		return apierr.BadRequest(at, "not valid JSON")
	}
	verr := sch.Validate(inst)
	if verr == nil {
		return nil
	}
	v := getValidator(item)
	defer v.done()
	if v.Scan(MaxDepth) == jsonwalk.OK {
		root, _ := v.ValueAt(0)
		v.in("plugins")
		v.at(index)
		if aerr := (&schemaWalk{v: v, id: id}).check(sch, root, true); aerr != nil {
			// "plugins[0].engine: must be …" names the plugin too.
			if path, msg, ok := strings.Cut(aerr.Message, ": "); ok && !strings.Contains(msg, "plugin "+id) {
				aerr.Message = path + ": invalid option of plugin " + id + ": " + msg
			}
			return aerr
		}
	}
	// A rule the walk does not speak (oneOf, pattern, …): the schema
	// validator's own words.
	field, msg := manifest.SchemaViolation(verr)
	if field != "" {
		at += "." + field
	}
	return apierr.BadRequest(at, "invalid option of plugin %s: %s", id, msg)
}

// schemaWalk finds the first rule of a config_schema an item breaks, in
// the order a person reads the item, and words it as the request
// validator does. It speaks the keywords plugin schemas use (type, enum,
// const, format, properties, additionalProperties, required, items,
// min/maxItems, min/maxLength, minimum/maximum, not); PluginOption falls
// back to the schema validator's message for the others.
type schemaWalk struct {
	v  *validator
	id string
}

func (w *schemaWalk) check(s *jsonschema.Schema, x gjson.Result, top bool) *apierr.Error {
	v := w.v
	for s != nil && s.Ref != nil {
		s = s.Ref
	}
	if s == nil {
		return nil
	}
	if s.Bool != nil {
		if !*s.Bool {
			return v.fail("not allowed")
		}
		return nil
	}
	if s.Types != nil {
		if aerr := w.typ(s, x); aerr != nil {
			return aerr
		}
	}
	if x.Type == gjson.String {
		if aerr := w.length(s, x); aerr != nil {
			return aerr
		}
	}
	if s.Not != nil && s.Not.Const != nil && matches(*s.Not.Const, x) {
		if x.Raw == `""` {
			return v.fail("must not be empty")
		}
		return v.fail("must not be %s", shown(x))
	}
	if s.Enum != nil && !slices.ContainsFunc(s.Enum.Values, func(e any) bool { return matches(e, x) }) {
		return v.fail("must be one of %s, got %s", values(s.Enum.Values), shown(x))
	}
	if s.Const != nil && !matches(*s.Const, x) {
		return v.fail("must be %s, got %s", values([]any{*s.Const}), shown(x))
	}
	if s.Format != nil && s.Format.Name == FormatModelID {
		if aerr := v.modelID(x); aerr != nil {
			return aerr
		}
	}
	switch {
	case x.Type == gjson.Number:
		return w.bounds(s, x)
	case x.IsArray():
		return w.array(s, x)
	case x.IsObject():
		return w.object(s, x, top)
	}
	return nil
}

// typ checks the schema's type, with the range or length it requires in
// the message (as the request validator words integer and string rules).
func (w *schemaWalk) typ(s *jsonschema.Schema, x gjson.Result) *apierr.Error {
	v, types := w.v, s.Types.ToStrings()
	for _, t := range types {
		switch t {
		case "integer":
			if _, ok := integral(x); ok {
				return nil
			}
		case "number":
			if x.Type == gjson.Number {
				return nil
			}
		case "string":
			if x.Type == gjson.String {
				return nil
			}
		case "boolean":
			if x.Type == gjson.True || x.Type == gjson.False {
				return nil
			}
		case "object":
			if x.IsObject() {
				return nil
			}
		case "array":
			if x.IsArray() {
				return nil
			}
		case "null":
			if x.Type == gjson.Null {
				return nil
			}
		}
	}
	if len(types) != 1 {
		return v.fail("must be one of the types %s, got %s", strings.Join(types, ", "), describe(x))
	}
	switch types[0] {
	case "integer":
		lo, hi := intBounds(s)
		return v.integer(x, lo, hi)
	case "number":
		return v.fail("must be a number%s, got %s", numRange(s), describe(x))
	case "string":
		return v.fail("must be a %s, got %s", strRule(s), describe(x))
	case "boolean":
		return v.boolean(x)
	case "object":
		return v.object(x)
	case "array":
		return v.fail("must be an array, got %s", describe(x))
	}
	return v.fail("must be null, got %s", describe(x))
}

func (w *schemaWalk) length(s *jsonschema.Schema, x gjson.Result) *apierr.Error {
	n := utf8Len(text(x))
	switch {
	case s.MinLength != nil && n < *s.MinLength && n == 0:
		return w.v.fail("must not be empty")
	case s.MinLength != nil && n < *s.MinLength:
		return w.v.fail("must be at least %d characters, got %d", *s.MinLength, n)
	case s.MaxLength != nil && n > *s.MaxLength:
		return w.v.fail("must be at most %d characters, got %d", *s.MaxLength, n)
	}
	return nil
}

// bounds checks a number against minimum and maximum, worded as the
// request validator words an integer's or a number's range.
func (w *schemaWalk) bounds(s *jsonschema.Schema, x gjson.Result) *apierr.Error {
	if s.Minimum == nil && s.Maximum == nil {
		return nil
	}
	if s.Types != nil && slices.Contains(s.Types.ToStrings(), "integer") {
		lo, hi := intBounds(s)
		return w.v.integer(x, lo, hi)
	}
	f := new(big.Rat)
	if _, ok := f.SetString(x.Raw); !ok {
		return nil
	}
	if (s.Minimum != nil && f.Cmp(s.Minimum) < 0) || (s.Maximum != nil && f.Cmp(s.Maximum) > 0) {
		return w.v.fail("must be a number%s, got %s", numRange(s), shown(x))
	}
	return nil
}

func (w *schemaWalk) array(s *jsonschema.Schema, x gjson.Result) *apierr.Error {
	v := w.v
	n := v.Count(x)
	switch {
	case s.MaxItems != nil && n > *s.MaxItems:
		return v.fail("at most %d items, got %d", *s.MaxItems, n)
	case s.MinItems != nil && n < *s.MinItems && *s.MinItems == 1:
		return v.fail("must have at least 1 item")
	case s.MinItems != nil && n < *s.MinItems:
		return v.fail("must have at least %d items, got %d", *s.MinItems, n)
	}
	item := s.Items2020
	if it, ok := s.Items.(*jsonschema.Schema); ok && item == nil {
		item = it
	}
	if item == nil {
		return nil
	}
	return v.items(x, 0, -1, func(_ int, y gjson.Result) *apierr.Error { return w.check(item, y, false) })
}

// object walks the members in the order sent, then the required ones. An
// option the plugin's schema does not have is "unknown option of plugin
// x" at the top, "unknown field" below it; "enabled" at the top, when the
// schema leaves it out, says the plugin cannot be turned off per request.
func (w *schemaWalk) object(s *jsonschema.Schema, x gjson.Result, top bool) *apierr.Error {
	v := w.v
	if aerr := v.each(x, func(k string, y gjson.Result) *apierr.Error {
		if p := s.Properties[k]; p != nil {
			return w.check(p, y, false)
		}
		switch ap := s.AdditionalProperties.(type) {
		case *jsonschema.Schema:
			return w.check(ap, y, false)
		case bool:
			if ap {
				return nil
			}
		default:
			return nil
		}
		switch {
		case top && k == "enabled" && len(s.Properties) <= 1:
			return v.fail("%s has no options and cannot be disabled per request", w.id)
		case top && k == "enabled":
			return v.fail("%s cannot be disabled per request", w.id)
		case top:
			return v.fail("unknown option of plugin %s", w.id)
		}
		return v.unknown()
	}); aerr != nil {
		return aerr
	}
	for _, r := range s.Required {
		if !v.Get(x, r).Exists() {
			if p := s.Properties[r]; p != nil && p.Enum != nil {
				return v.failAt(r, "required: %s", values(p.Enum.Values))
			}
			return v.failAt(r, "required")
		}
	}
	return nil
}

// intBounds are an integer schema's minimum and maximum (the widest
// int64 range when absent).
func intBounds(s *jsonschema.Schema) (lo, hi int64) {
	lo, hi = math.MinInt64, math.MaxInt64
	if s.Minimum != nil {
		if f, _ := s.Minimum.Float64(); f > math.MinInt64 {
			lo = int64(math.Ceil(f))
		}
	}
	if s.Maximum != nil {
		if f, _ := s.Maximum.Float64(); f < math.MaxInt64 {
			hi = int64(math.Floor(f))
		}
	}
	return lo, hi
}

// numRange is " between a and b", " of at least a", " of at most b" or "".
func numRange(s *jsonschema.Schema) string {
	num := func(r *big.Rat) string { f, _ := r.Float64(); return fmtNum(f) }
	switch {
	case s.Minimum != nil && s.Maximum != nil:
		return " between " + num(s.Minimum) + " and " + num(s.Maximum)
	case s.Minimum != nil:
		return " of at least " + num(s.Minimum)
	case s.Maximum != nil:
		return " of at most " + num(s.Maximum)
	}
	return ""
}

// matches reports whether the JSON value x equals e (a value as the
// schema library decodes JSON: json.Number for numbers).
func matches(e any, x gjson.Result) bool {
	switch e := e.(type) {
	case string:
		return x.Type == gjson.String && text(x) == e
	case bool:
		return (x.Type == gjson.True && e) || (x.Type == gjson.False && !e)
	case nil:
		return x.Type == gjson.Null
	case json.Number:
		a, b := new(big.Rat), new(big.Rat)
		_, ok1 := a.SetString(string(e))
		_, ok2 := b.SetString(x.Raw)
		return x.Type == gjson.Number && ok1 && ok2 && a.Cmp(b) == 0
	}
	want, _ := json.Marshal(e)
	got, _ := jsonschema.UnmarshalJSON(strings.NewReader(x.Raw))
	gotRaw, _ := json.Marshal(got)
	return string(want) == string(gotRaw)
}

// values lists enum values: strings as they are, others as JSON.
func values(vs []any) string {
	out := make([]string, len(vs))
	for i, e := range vs {
		if s, ok := e.(string); ok {
			out[i] = s
			continue
		}
		b, _ := json.Marshal(e)
		out[i] = string(b)
	}
	return strings.Join(out, ", ")
}

// strRule is a string schema's rule as a message says it: "string",
// "non-empty string", "string (1 to 256 characters)".
func strRule(s *jsonschema.Schema) string {
	lo, hi := 0, -1
	if s.MinLength != nil {
		lo = *s.MinLength
	}
	if s.MaxLength != nil {
		hi = *s.MaxLength
	}
	switch {
	case lo == 1 && hi < 0:
		return "non-empty string"
	case lo > 0 && hi >= 0:
		return fmt.Sprintf("string (%d to %d characters)", lo, hi)
	case lo > 0:
		return fmt.Sprintf("string (at least %d characters)", lo)
	case hi >= 0:
		return fmt.Sprintf("string (at most %d characters)", hi)
	}
	return "string"
}

func utf8Len(s string) int { return len([]rune(s)) }
