// Package cache is the response-cache plugin's logic: the canonical key of
// a chat request, the options, and the pre_request / post_response hooks
// over the kv host functions. It has no Wasm in it, so it is tested with
// `go test` on the host (package main wires it to the sdk).
package cache

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"

	"github.com/tidwall/gjson"
)

// ignored are the request members that do not change the answer: how it
// is delivered (stream), who asked (user, session, metadata), what the
// gateway reports (usage, service_metadata flags) and the plugins array
// (this plugin's own options among them). Every other member — model and
// models, provider preferences, route, messages, tools, tool_choice,
// sampling parameters, response_format, seed, reasoning, anything a later
// API version adds — is part of the key: a member this list does not know
// makes two requests different, never the same.
var ignored = []string{
	"stream", "stream_options", "plugins", "user", "session_id", "metadata",
	"usage", "trace", "store", "service_tier", "prompt_cache_key", "safety_identifier",
}

// Key is the canonical digest of what determines a chat request's answer:
// hex SHA-256 of its members except the ignored ones in a canonical form
// (object keys sorted, no whitespace, strings decoded and quoted one way,
// numbers by value: 0.70 is 0.7). Order of members and whitespace do not
// matter; the order of array elements (messages) does.
func Key(body []byte) string {
	var buf []byte
	buf = canonical(buf, gjson.ParseBytes(body), true)
	sum := sha256.Sum256(buf)
	return hex.EncodeToString(sum[:])
}

// Canonical is the canonical JSON of body with the ignored members left
// out (what Key hashes), for tests and debugging.
func Canonical(body []byte) string {
	return string(canonical(nil, gjson.ParseBytes(body), true))
}

func canonical(dst []byte, v gjson.Result, top bool) []byte {
	switch {
	case v.IsObject():
		type member struct {
			k string
			v gjson.Result
		}
		var ms []member
		v.ForEach(func(k, val gjson.Result) bool {
			if top && slices.Contains(ignored, k.Str) {
				return true
			}
			// A later duplicate wins, as for encoding/json and the
			// gateway's own reading of the body.
			for i := range ms {
				if ms[i].k == k.Str {
					ms[i].v = val
					return true
				}
			}
			ms = append(ms, member{k.Str, val})
			return true
		})
		slices.SortFunc(ms, func(a, b member) int {
			switch {
			case a.k < b.k:
				return -1
			case a.k > b.k:
				return 1
			}
			return 0
		})
		dst = append(dst, '{')
		for i, m := range ms {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = strconv.AppendQuote(dst, m.k)
			dst = append(dst, ':')
			dst = canonical(dst, m.v, false)
		}
		return append(dst, '}')
	case v.IsArray():
		dst = append(dst, '[')
		i := 0
		v.ForEach(func(_, el gjson.Result) bool {
			if i > 0 {
				dst = append(dst, ',')
			}
			i++
			dst = canonical(dst, el, false)
			return true
		})
		return append(dst, ']')
	case v.Type == gjson.String:
		// Decoded then quoted again: "\u0041" and "A" are the same string.
		return strconv.AppendQuote(dst, v.Str)
	case v.Type == gjson.Number:
		// 0.70 and 0.7 are the same number; integers stay exact.
		if i, err := strconv.ParseInt(v.Raw, 10, 64); err == nil {
			return strconv.AppendInt(dst, i, 10)
		}
		return strconv.AppendFloat(dst, v.Num, 'g', -1, 64)
	case v.Type == gjson.True:
		return append(dst, "true"...)
	case v.Type == gjson.False:
		return append(dst, "false"...)
	}
	return append(dst, "null"...)
}
