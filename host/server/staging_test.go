package server

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/switchyard/switchyard/host/bodyread"
	"github.com/switchyard/switchyard/host/config"
)

// readBody grows its buffer through pooled staging buffers: whatever size
// a body has, declared or chunked, the handler gets it whole, and a body
// kept past its request is not overwritten by the ones read after it (a
// staging buffer the pool handed out again would be).
func TestReadBodyStaging(t *testing.T) {
	s := &Server{Deps: Deps{Config: &config.Config{MaxBodyBytes: 4 << 20}}}
	s.Config.Limits.BodyTimeout = config.Duration(10 * time.Second)
	app := fiber.New(fiber.Config{StreamRequestBody: true, DisableStartupMessage: true})
	type got struct {
		body  []byte // a copy: fasthttp reuses its own buffer
		owned []byte // the handler's body itself
	}
	seen := make(chan got, 1)
	app.Post("/", s.readBody, func(c *fiber.Ctx) error {
		b := c.Body()
		seen <- got{body: append([]byte(nil), b...), owned: b}
		return c.SendStatus(http.StatusNoContent)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = app.Listener(ln) }()
	defer app.Shutdown()
	var kept [][]byte
	for _, size := range []int{100, bodyread.FirstChunk - 1, bodyread.FirstChunk, bodyread.FirstChunk + 1, 100 << 10, 128 << 10, 1 << 20, 1<<20 + 7} {
		for _, chunked := range []bool{false, true} {
			body := bytes.Repeat([]byte{byte('a' + len(kept)%26)}, size)
			var r io.Reader = bytes.NewReader(body)
			if chunked {
				r = io.MultiReader(r) // no length: sent chunked
			}
			req, _ := http.NewRequest(http.MethodPost, "http://"+ln.Addr().String()+"/", r)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			g := <-seen
			name := fmt.Sprintf("size %d chunked %v", size, chunked)
			if !bytes.Equal(g.body, body) {
				t.Fatalf("%s: the handler got %d bytes, not the body sent", name, len(g.body))
			}
			kept = append(kept, g.owned)
		}
	}
	// readBody's buffers are the handlers' to keep; fasthttp's own buffer
	// (a body that arrived with the headers) is reused, and keptBody
	// copies it.
	for i, b := range kept {
		if want := byte('a' + i%26); len(b) > 0 && (b[0] != want || b[len(b)-1] != want) {
			t.Fatalf("body %d was overwritten after its request (starts %q)", i, b[0])
		}
	}
}
