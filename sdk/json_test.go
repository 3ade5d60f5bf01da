package sdk

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

var objects = []string{
	`{}`, ` { } `, `{"a":1}`, `{"a":-1.5e3,"b":true,"c":false,"d":null,"e":"x","f":[1,{"g":"}"}],"h":{"i":"]"}}`,
	`{"k\"ey":"v\\","e\u00e9":"\u00e9\n","q":"a\"b\\\"c"}`,
	"{\n\t\"a\" : [ 1 , 2 ] ,\r\n \"b\" : { \"c\" : \"d\" }\n}",
	`{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat(`the \"quoted\" text \\ `, 50) + `"}],"stream":false,"temperature":0.2}`,
}

// Members gives what gjson's ForEach gives, member by member.
func TestMembersMatchesGjson(t *testing.T) {
	for _, o := range objects {
		membersAgree(t, o)
	}
}

func membersAgree(t *testing.T, o string) {
	t.Helper()
	type kv struct {
		k string
		v gjson.Result
	}
	var want, got []kv
	gjson.Parse(o).ForEach(func(k, v gjson.Result) bool { want = append(want, kv{k.Str, v}); return true })
	Members([]byte(o), func(k string, v gjson.Result) bool { got = append(got, kv{k, v}); return true })
	if len(got) != len(want) {
		t.Fatalf("%q: %d members, gjson %d", o, len(got), len(want))
	}
	for i := range want {
		w, g := want[i], got[i]
		if g.k != w.k || g.v.Type != w.v.Type || g.v.Raw != w.v.Raw || g.v.Str != w.v.Str || (g.v.Num != w.v.Num && g.v.Num == g.v.Num) {
			t.Fatalf("%q member %d: %q=%+v, gjson %q=%+v", o, i, g.k, g.v, w.k, w.v)
		}
	}
}

func FuzzMembers(f *testing.F) {
	for _, o := range objects {
		f.Add(o)
	}
	f.Fuzz(func(t *testing.T, o string) {
		if gjson.Valid(o) && gjson.Parse(o).IsObject() {
			membersAgree(t, o)
			return
		}
		Members([]byte(o), func(string, gjson.Result) bool { return true }) // must not panic or hang
	})
}

func BenchmarkMembers(b *testing.B) {
	body := []byte(`{"model":"m","messages":[` + strings.Repeat(`{"role":"tool","tool_call_id":"c","content":"`+strings.Repeat("the build failed because ", 60)+`"},`, 80) +
		`{"role":"user","content":"x"}],"tools":[],"temperature":0.2}`)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		Members(body, func(string, gjson.Result) bool { return true })
	}
}

// TestMembersStopsAtACutOffValue: an object cut off inside a member's
// object or array gives the members before it and stops; the cut-off
// member is not handed over with an empty value.
func TestMembersStopsAtACutOffValue(t *testing.T) {
	for _, o := range []string{`{"a":1,"b":{"c":2`, `{"a":1,"b":[1,2`, `{"a":1,"b":{"c":"}"`} {
		var keys []string
		Members([]byte(o), func(k string, v gjson.Result) bool {
			if v.Raw == "" {
				t.Fatalf("%q: member %q handed over with no value", o, k)
			}
			keys = append(keys, k)
			return true
		})
		if len(keys) != 1 || keys[0] != "a" {
			t.Fatalf("%q: members %v, want [a]", o, keys)
		}
	}
}
