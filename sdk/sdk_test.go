package sdk

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// What a module author relies on, run natively: the JSON helpers, the
// frame an Out builds (through Run and Caller, as the host reads it), and
// the error and parameter helpers adapters call.

// TestAppendJSONString: every string becomes a JSON string literal that
// decodes back to it, whatever it holds.
func TestAppendJSONString(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"empty", "", `""`},
		{"plain", "hello", `"hello"`},
		{"quote and backslash", `say "hi" \ bye`, `"say \"hi\" \\ bye"`},
		{"line breaks and tab", "a\nb\rc\td", `"a\nb\rc\td"`},
		{"other control characters", "\x00\x01\x1b\x1f", `"\u0000\u0001\u001b\u001f"`},
		{"DEL needs no escape", "\x7f", "\"\x7f\""},
		{"UTF-8 is kept", "héllo ☃ 😀", `"héllo ☃ 😀"`},
		{"HTML characters are kept", "<a href='x'>&</a>", `"<a href='x'>&</a>"`},
		{"appends after what is there", "x", `"x"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			prefix := []byte("[")
			got := AppendJSONString(prefix, tc.in)
			if string(got[1:]) != tc.want {
				t.Fatalf("AppendJSONString(%q) = %s, want %s", tc.in, got[1:], tc.want)
			}
			if string(got[:1]) != "[" {
				t.Fatalf("the prefix became %q", got[:1])
			}
			var back string
			if err := json.Unmarshal(got[1:], &back); err != nil || back != tc.in {
				t.Fatalf("%s decodes to %q, %v; want %q", got[1:], back, err, tc.in)
			}
			if q := Quote(tc.in); q != tc.want {
				t.Fatalf("Quote(%q) = %s, want %s", tc.in, q, tc.want)
			}
		})
	}
}

// TestMembersWalk: Members stops when asked, and gives nothing (without
// panicking) for what is not an object or is cut short.
func TestMembersWalk(t *testing.T) {
	keys := func(obj string, stopAfter int) []string {
		var got []string
		Members([]byte(obj), func(k string, v gjson.Result) bool {
			got = append(got, k+"="+v.Raw)
			return len(got) < stopAfter
		})
		return got
	}
	cases := []struct {
		name string
		obj  string
		stop int
		want []string
	}{
		{"all members", `{"a":1,"b":[2,{"c":"}"}],"d":"x"}`, 99, []string{"a=1", `b=[2,{"c":"}"}]`, `d="x"`}},
		{"stops when fn says so", `{"a":1,"b":2,"c":3}`, 2, []string{"a=1", "b=2"}},
		{"escaped key is unescaped", `{"k\"ey":true}`, 99, []string{`k"ey=true`}},
		{"an array is not an object", `[1,2]`, 99, nil},
		{"empty input", ``, 99, nil},
		{"a scalar", `"a"`, 99, nil},
		{"cut after a key", `{"a"`, 99, nil},
		{"cut after the colon", `{"a":`, 99, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := keys(tc.obj, tc.stop); !slices.Equal(got, tc.want) {
				t.Fatalf("members %q, want %q", got, tc.want)
			}
		})
	}
}

// TestValueAt: the value at an offset as gjson reads it, and the offset
// just past it.
func TestValueAt(t *testing.T) {
	cases := []struct {
		s    string
		i    int
		typ  gjson.Type
		raw  string
		str  string
		num  float64
		next int
	}{
		{`"abc",`, 0, gjson.String, `"abc"`, "abc", 0, 5},
		{`x:"a\"b\\",1`, 2, gjson.String, `"a\"b\\"`, `a"b\`, 0, 10},
		{`"\u00e9"`, 0, gjson.String, `"\u00e9"`, "é", 0, 8},
		{`-12.5e1}`, 0, gjson.Number, `-12.5e1`, "", -125, 7},
		{`true,`, 0, gjson.True, `true`, "", 0, 4},
		{`false]`, 0, gjson.False, `false`, "", 0, 5},
		{`null `, 0, gjson.Null, `null`, "", 0, 4},
		{`{"a":"]}"},1`, 0, gjson.JSON, `{"a":"]}"}`, "", 0, 10},
		{`[[1],[2,"["]] `, 0, gjson.JSON, `[[1],[2,"["]]`, "", 0, 13},
	}
	for _, tc := range cases {
		v, next := valueAt(tc.s, tc.i)
		if v.Type != tc.typ || v.Raw != tc.raw || v.Str != tc.str || v.Num != tc.num || next != tc.next || v.Index != tc.i {
			t.Errorf("valueAt(%q, %d) = %v %q str %q num %v, next %d; want %v %q str %q num %v, next %d",
				tc.s, tc.i, v.Type, v.Raw, v.Str, v.Num, next, tc.typ, tc.raw, tc.str, tc.num, tc.next)
		}
		if want := gjson.Parse(tc.raw); want.Type != v.Type || want.Str != v.Str || want.Num != v.Num {
			t.Errorf("valueAt(%q) differs from gjson's %+v", tc.s, want)
		}
	}
}

// TestOutFrame: what a handler writes with Field, FieldString, Open/Write/
// Member/Close is the fields the host reads, through Run and through a
// Caller (the native path), and a handler's error is the call's.
func TestOutFrame(t *testing.T) {
	handler := func(in *In, out *Out) error {
		if in.Len() != 2 || in.Field(2) != nil || in.Field(-1) != nil {
			return Error("unexpected input")
		}
		out.FieldString("continue")
		out.Open()
		out.WriteString("{")
		out.Member("model", `"`+in.String(0)+`"`)
		out.MemberString("content", in.String(1))
		out.Member("n", "1")
		out.Byte('}')
		if out.Len() == 0 {
			return Error("Len of an open field is 0")
		}
		out.Close()
		out.Field(nil)
		return nil
	}
	want := []string{"continue", `{"model":"m","content":"line\n\"quoted\"","n":1}`, ""}
	runs := []struct {
		name string
		run  func(Handler, ...[]byte) ([][]byte, error)
	}{
		{"Run", Run},
		{"Caller", new(Caller).Call},
	}
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			for range 2 { // a Caller reuses its buffers: the second call gives the same
				got, err := r.run(handler, []byte("m"), []byte("line\n\"quoted\""))
				if err != nil {
					t.Fatal(err)
				}
				var s []string
				for _, f := range got {
					s = append(s, string(f))
				}
				if !slices.Equal(s, want) {
					t.Fatalf("fields %q, want %q", s, want)
				}
				if !gjson.Valid(s[1]) {
					t.Fatalf("the member-built object is not JSON: %s", s[1])
				}
			}
			_, err := r.run(func(*In, *Out) error { return Error("deliberate") })
			if err == nil || err.Error() != "deliberate" {
				t.Fatalf("a handler's error came back as %v", err)
			}
		})
	}
}

// TestRunCopies: Run's fields are the caller's to keep: a later call does
// not change them.
func TestRunCopies(t *testing.T) {
	echo := func(in *In, out *Out) error { out.Field(in.Field(0)); return nil }
	var c Caller
	first, err := c.Call(echo, []byte("first"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Call(echo, []byte("later")); err != nil {
		t.Fatal(err)
	}
	if string(first[0]) != "first" {
		t.Fatalf("a kept output changed to %q", first[0])
	}
}

// TestUpstreamError: the gateway status and message an adapter's error
// hook reports for an upstream status (spec section 7).
func TestUpstreamError(t *testing.T) {
	cases := []struct {
		status   int
		msg      string
		wantCode string
		wantMsg  string
	}{
		{400, "bad field", "400", "bad field"},
		{401, "invalid key sk-123", "502", "the provider rejected the gateway's credentials"},
		// DeepSeek's documented 402 (api-docs.deepseek.com, "Error Codes"):
		// the operator's balance, never the caller's 402.
		{402, "Insufficient Balance", "503", "the provider refused for lack of credit on the gateway's account with it: Insufficient Balance"},
		{402, "", "503", "the provider refused for lack of credit on the gateway's account with it: upstream returned status 402"},
		{403, "", "502", "the provider rejected the gateway's credentials"},
		{404, "", "502", "the provider does not serve this model"},
		{404, "no such model", "502", "no such model"},
		{408, "", "524", "upstream returned status 408"},
		{413, "too big", "413", "too big"},
		{418, "teapot", "400", "teapot"},
		{422, "x", "422", "x"},
		{429, "slow down", "429", "slow down"},
		{500, "oops", "502", "oops"},
		{503, "busy", "503", "busy"},
		{504, "", "524", "upstream returned status 504"},
		{524, "", "524", "upstream returned status 524"},
		{529, "overloaded", "529", "overloaded"},
		{200, "", "502", "upstream returned status 200"},
	}
	for _, tc := range cases {
		got, err := Run(func(_ *In, out *Out) error { UpstreamError(out, tc.status, tc.msg); return nil })
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || string(got[0]) != tc.wantCode || string(got[1]) != tc.wantMsg {
			t.Errorf("UpstreamError(%d, %q) = %q, want %s %q", tc.status, tc.msg, got, tc.wantCode, tc.wantMsg)
		}
	}
}

// TestMapError: the error hook of a provider whose statuses mean the
// gateway's: the message found in the body, the status mapped.
func TestMapError(t *testing.T) {
	cases := []struct {
		status, body string
		want         []string
	}{
		{"429", `{"error":{"message":"rate limited","type":"x"}}`, []string{"429", "rate limited"}},
		{"500", `{"message":"top-level"}`, []string{"502", "top-level"}},
		{"502", `Bad Gateway`, []string{"502", "Bad Gateway"}},
		{"503", `{"detail":"nothing we read"}`, []string{"503", "upstream returned status 503"}},
		{"500", strings.Repeat("x", 400), []string{"502", "upstream returned status 500"}},
	}
	for _, tc := range cases {
		got, err := Run(MapError, []byte(`{}`), []byte(tc.status), []byte(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		var s []string
		for _, f := range got {
			s = append(s, string(f))
		}
		if !slices.Equal(s, tc.want) {
			t.Errorf("MapError(%s, %.40q) = %q, want %q", tc.status, tc.body, s, tc.want)
		}
	}
}

func TestContentText(t *testing.T) {
	cases := []struct{ content, want string }{
		{`"plain"`, "plain"},
		{`[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"x"}},{"type":"text","text":"b"}]`, "a\nb"},
		{`[]`, ""},
		{`null`, ""},
	}
	for _, tc := range cases {
		if got := ContentText(gjson.Parse(tc.content)); got != tc.want {
			t.Errorf("ContentText(%s) = %q, want %q", tc.content, got, tc.want)
		}
	}
}

func TestDataURL(t *testing.T) {
	cases := []struct {
		url, media, data string
		ok               bool
	}{
		{"data:image/png;base64,AAAA", "image/png", "AAAA", true},
		{"data:application/pdf;base64,", "application/pdf", "", true},
		{"data:text/plain,hello", "", "", false},
		{"https://example.com/a.png", "", "", false},
	}
	for _, tc := range cases {
		media, data, ok := DataURL(tc.url)
		if !tc.ok && !ok {
			continue // what else it returns is not promised
		}
		if media != tc.media || data != tc.data || ok != tc.ok {
			t.Errorf("DataURL(%q) = %q %q %v, want %q %q %v", tc.url, media, data, ok, tc.media, tc.data, tc.ok)
		}
	}
}

// TestParams: a parameter the host dropped for the endpoint, or null, reads
// as absent; the others as given. One Params serves call after call.
func TestParams(t *testing.T) {
	var p Params
	cases := []struct {
		ctx, body string
		name      string
		want      string // Raw; "" absent
		dropped   bool
	}{
		{`{"drop":["seed"]}`, `{"seed":7,"top_p":0.5}`, "seed", "", true},
		{`{"drop":["seed"]}`, `{"seed":7,"top_p":0.5}`, "top_p", "0.5", false},
		{`{}`, `{"seed":7}`, "seed", "7", false},
		{`{}`, `{"stop":null}`, "stop", "", false},
		{`{}`, `{}`, "stop", "", false},
		{`{"drop":["a","b"]}`, `{"b":{"x":1}}`, "b", "", true},
	}
	for _, tc := range cases {
		req := p.Load([]byte(tc.ctx), []byte(tc.body))
		if !req.IsObject() {
			t.Fatalf("Load returned %v", req)
		}
		if got := p.Get(tc.name).Raw; got != tc.want || p.Dropped(tc.name) != tc.dropped {
			t.Errorf("%s %s: Get(%q) = %q dropped %v, want %q dropped %v", tc.ctx, tc.body, tc.name, got, p.Dropped(tc.name), tc.want, tc.dropped)
		}
	}
}

func TestError(t *testing.T) {
	err := Error("plain message")
	if err.Error() != "plain message" || errors.Unwrap(err) != nil {
		t.Fatalf("Error gave %v", err)
	}
}

// A handler's panic is the hook's error, naming the value and the line of
// the handler it came from, instead of a trap.
func TestPanicBecomesError(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    Handler
		want string
	}{
		{"index", func(in *In, out *Out) error {
			var xs []int
			_ = xs[len(in.fields)+2]
			return nil
		}, "index out of range"},
		{"value", func(*In, *Out) error { panic("boom") }, "panic: boom (at sdk_test.go:"},
		{"nil map", func(*In, *Out) error {
			var m map[string]int
			m["x"] = 1
			return nil
		}, "assignment to entry in nil map"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Run(tc.h, []byte(`{}`))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "panic: ") {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), "sdk_test.go:") {
				t.Fatalf("error %v does not name the handler's line", err)
			}
		})
	}
}
