package server

import (
	"bytes"
	"compress/gzip"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// keptBody hands out readBody's own buffer as it is and copies anything
// else: fasthttp's pooled buffer is the connection's next request once the
// handler returns, and a decoded body is not the buffer readBody owns.
func TestKeptBody(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write([]byte(`{"a":1}`))
	_ = zw.Close()
	cases := []struct {
		name     string
		body     []byte
		state    any
		encoding string
		shared   bool
		want     string
	}{
		{name: "owned", body: []byte(`{"a":1}`), state: bodyOwned, shared: true, want: `{"a":1}`},
		{name: "pooled", body: []byte(`{"a":1}`), state: bodyPooled, want: `{"a":1}`},
		{name: "not read", body: []byte(`{"a":1}`), state: nil, want: `{"a":1}`},
		{name: "owned but compressed", body: gz.Bytes(), state: bodyOwned, encoding: "gzip", want: `{"a":1}`},
		{name: "owned and empty", body: []byte{}, state: bodyOwned, want: ``},
	}
	app := fiber.New()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := app.AcquireCtx(&fasthttp.RequestCtx{})
			defer app.ReleaseCtx(c)
			c.Request().SetBodyRaw(tc.body)
			if tc.encoding != "" {
				c.Request().Header.Set(fiber.HeaderContentEncoding, tc.encoding)
			}
			if tc.state != nil {
				c.Locals(bodyReadKey, tc.state)
			}
			got := keptBody(c)
			if string(got) != tc.want {
				t.Fatalf("body %q, want %q", got, tc.want)
			}
			shared := len(got) > 0 && len(tc.body) > 0 && &got[0] == &tc.body[0]
			if shared != tc.shared {
				t.Fatalf("shares the request's buffer: %v, want %v", shared, tc.shared)
			}
		})
	}
}
