// Package validate checks request bodies against the interface (spec
// sections 2.1–2.6 and 8) before anything else runs, so a caller learns what
// is wrong — the field, its JSON path and the rule — with a 400 instead of
// a provider's confusing error. It reads the body with gjson in one pass and
// allocates only to build an error message.
package validate

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/switchyard/switchyard/host/apierr"
	"github.com/tidwall/gjson"
)

// check validates one value at path.
type check func(path string, v gjson.Result) *apierr.Error

func bad(path, format string, args ...any) *apierr.Error {
	return apierr.BadRequest(path, format, args...)
}

func isNull(v gjson.Result) bool { return v.Type == gjson.Null }

func typeName(v gjson.Result) string {
	switch {
	case v.Type == gjson.Null:
		return "null"
	case v.Type == gjson.String:
		return "a string"
	case v.Type == gjson.Number:
		return "a number"
	case v.Type == gjson.True || v.Type == gjson.False:
		return "a boolean"
	case v.IsArray():
		return "an array"
	case v.IsObject():
		return "an object"
	}
	return "invalid JSON"
}

// nullable accepts null, else runs c.
func nullable(c check) check {
	return func(p string, v gjson.Result) *apierr.Error {
		if isNull(v) {
			return nil
		}
		return c(p, v)
	}
}

func boolean(p string, v gjson.Result) *apierr.Error {
	if v.Type != gjson.True && v.Type != gjson.False {
		return bad(p, "must be a boolean, got %s", typeName(v))
	}
	return nil
}

func str(p string, v gjson.Result) *apierr.Error {
	if v.Type != gjson.String {
		return bad(p, "must be a string, got %s", typeName(v))
	}
	return nil
}

func nonEmptyStr(p string, v gjson.Result) *apierr.Error {
	if err := str(p, v); err != nil {
		return err
	}
	if v.Str == "" {
		return bad(p, "must not be empty")
	}
	return nil
}

func maxLen(n int) check {
	return func(p string, v gjson.Result) *apierr.Error {
		if err := str(p, v); err != nil {
			return err
		}
		if c := utf8.RuneCountInString(v.Str); c > n {
			return bad(p, "at most %d characters, got %d", n, c)
		}
		return nil
	}
}

func oneOf(values ...string) check {
	return func(p string, v gjson.Result) *apierr.Error {
		if v.Type == gjson.String {
			for _, x := range values {
				if v.Str == x {
					return nil
				}
			}
		}
		return bad(p, "must be one of %s, got %s", strings.Join(values, ", "), clip(v.Raw))
	}
}

// number accepts a JSON number in [min, max].
func number(min, max float64) check {
	return func(p string, v gjson.Result) *apierr.Error {
		if v.Type != gjson.Number {
			return bad(p, "must be a number, got %s", typeName(v))
		}
		if f := v.Float(); f < min || f > max || math.IsNaN(f) {
			return bad(p, "must be a number between %s and %s, got %s", fmtNum(min), fmtNum(max), v.Raw)
		}
		return nil
	}
}

// integer accepts an integral JSON number in [min, max].
func integer(min, max int64) check {
	return func(p string, v gjson.Result) *apierr.Error {
		if v.Type != gjson.Number || !isIntegral(v.Raw) {
			return bad(p, "must be an integer, got %s", clip(v.Raw))
		}
		f := v.Float()
		if f < float64(min) || f > float64(max) {
			if max == math.MaxInt64 {
				return bad(p, "must be an integer of at least %d, got %s", min, v.Raw)
			}
			return bad(p, "must be an integer between %d and %d, got %s", min, max, v.Raw)
		}
		return nil
	}
}

func isIntegral(raw string) bool {
	if strings.ContainsAny(raw, ".eE") {
		f, err := strconv.ParseFloat(raw, 64)
		return err == nil && f == math.Trunc(f) && !math.IsInf(f, 0)
	}
	return true
}

func object(p string, v gjson.Result) *apierr.Error {
	if !v.IsObject() {
		return bad(p, "must be an object, got %s", typeName(v))
	}
	return nil
}

// arrayOf checks an array of at least min and at most max items (max < 0:
// unbounded), each with item.
func arrayOf(min, max int, item check) check {
	return func(p string, v gjson.Result) *apierr.Error {
		if !v.IsArray() {
			return bad(p, "must be an array, got %s", typeName(v))
		}
		n := 0
		var err *apierr.Error
		v.ForEach(func(_, it gjson.Result) bool {
			if item != nil {
				err = item(p+"["+strconv.Itoa(n)+"]", it)
			}
			n++
			return err == nil
		})
		if err != nil {
			return err
		}
		if n < min {
			if min == 1 {
				return bad(p, "must have at least 1 item")
			}
			return bad(p, "must have at least %d items, got %d", min, n)
		}
		if max >= 0 && n > max {
			return bad(p, "at most %d items, got %d", max, n)
		}
		return nil
	}
}

// fields checks an object whose members must be among known (unknown
// members are an error when strict) and validates each.
func fields(strict bool, known map[string]check, required ...string) check {
	return func(p string, v gjson.Result) *apierr.Error {
		if err := object(p, v); err != nil {
			return err
		}
		var err *apierr.Error
		v.ForEach(func(k, val gjson.Result) bool {
			c, ok := known[k.Str]
			switch {
			case !ok && strict:
				err = bad(join(p, k.Str), "unknown field")
			case ok && c != nil:
				err = c(join(p, k.Str), val)
			}
			return err == nil
		})
		if err != nil {
			return err
		}
		for _, r := range required {
			if !v.Get(gjson.Escape(r)).Exists() {
				return bad(join(p, r), "required")
			}
		}
		return nil
	}
}

func join(p, k string) string {
	if p == "" {
		return k
	}
	return p + "." + k
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:37] + "..."
	}
	if s == "" {
		return "nothing"
	}
	return s
}

func fmtNum(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// modelID checks <vendor>/<model_name>, with an optional :variant.
func modelID(p string, v gjson.Result) *apierr.Error {
	if err := str(p, v); err != nil {
		return err
	}
	vendor, name, ok := strings.Cut(v.Str, "/")
	if !ok || vendor == "" || name == "" || strings.ContainsAny(v.Str, " \t\n") {
		return bad(p, "must be a model id of the form <vendor>/<model_name>, got %s", clip(v.Raw))
	}
	return nil
}

// parse checks the body is one JSON object.
func parse(body []byte) (gjson.Result, *apierr.Error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return gjson.Result{}, bad("", "request body is empty; send a JSON object")
	}
	if !gjson.ValidBytes(body) {
		return gjson.Result{}, bad("", "request body is not valid JSON")
	}
	// Read the body in place: results alias it, and nothing here keeps them
	// past the call.
	root := gjson.Parse(unsafe.String(unsafe.SliceData(body), len(body)))
	if !root.IsObject() {
		return gjson.Result{}, bad("", "request body must be a JSON object, got %s", typeName(root))
	}
	return root, nil
}
