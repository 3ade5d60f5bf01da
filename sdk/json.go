package sdk

import "github.com/tidwall/gjson"

// Members calls fn for each top-level member of the JSON object obj, in
// order, without copying obj: value.Raw aliases it. fn returns false to stop.
func Members(obj []byte, fn func(key string, value gjson.Result) bool) {
	gjson.Parse(unsafeString(obj)).ForEach(func(k, v gjson.Result) bool {
		return fn(k.Str, v)
	})
}

// Get reads a gjson path from a JSON document without copying it.
func Get(doc []byte, path string) gjson.Result { return gjson.Get(unsafeString(doc), path) }

// Member writes `"key":raw` to the open field, preceded by a comma unless it
// is the first member (the byte before it is '{').
func (o *Out) Member(key, raw string) {
	if o.buf[len(o.buf)-1] != '{' {
		o.buf = append(o.buf, ',')
	}
	o.buf = append(o.buf, '"')
	o.buf = append(o.buf, key...) // keys come from gjson members or literals: no escaping needed
	o.buf = append(o.buf, '"', ':')
	o.buf = append(o.buf, raw...)
}

// MemberString writes `"key":"value"` with value JSON-escaped.
func (o *Out) MemberString(key, value string) {
	o.Member(key, "")
	o.buf = AppendJSONString(o.buf, value)
}

// AppendJSONString appends s as a JSON string literal.
func AppendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c == '\t':
			dst = append(dst, '\\', 't')
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}
