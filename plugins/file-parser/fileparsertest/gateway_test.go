//go:build !wasip1

// Package fileparsertest runs the built file-parser module in a real
// gateway over loopback (host/gatewaytest): what the fake upstream receives
// and what the client gets back.
package fileparsertest

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/switchyard/switchyard/host/demo"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

func start(t testing.TB) *gatewaytest.Gateway {
	t.Helper()
	g, err := gatewaytest.Start(gatewaytest.Options{Quiet: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	return g
}

func dataURL(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(gatewaytest.Root(), "plugins", "file-parser", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return "data:application/pdf;base64," + base64.StdEncoding.EncodeToString(b)
}

// fileRequest is a chat request with one user message: a question and a
// file part, and the file-parser plugin with the given options.
func fileRequest(name, url, plugin string) string {
	b := `{"model":"test/chat","messages":[{"role":"user","content":[{"type":"text","text":"Summarise the file."},{"type":"file","file":{}}]}],"plugins":[` + plugin + `]}`
	b, _ = sjson.Set(b, "messages.0.content.1.file.filename", name)
	b, _ = sjson.Set(b, "messages.0.content.1.file.file_data", url)
	return b
}

func post(t testing.TB, g *gatewaytest.Gateway, body string) (int, gjson.Result) {
	t.Helper()
	resp, b, err := g.Request("POST", "/chat/completions", body, "X-Service-Metadata", "enabled")
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, gjson.ParseBytes(b)
}

// The upstream receives the extracted text in place of the file part, for
// PDFs of three producers; the client gets a file annotation with the
// file's hash and the text, and the pipeline stage says what was parsed.
func TestFileParserExtractsText(t *testing.T) {
	g := start(t)
	up := g.Upstreams["alpha"]
	cases := []struct {
		file, want string
		pages      int
	}{
		{"groff.pdf", "third quarter, with a median latency", 2},
		{"ghostscript.pdf", "alpha, beta and gamma", 2},
		{"fpdf-multilingual.pdf", "Шлюз обработал сорок два миллиона запросов", 2},
		// Standard fonts without /Widths (as ReportLab writes them): a
		// table's cells and rows apart, lines apart.
		{"eval/hand-weather.pdf", "Station Rainfall (mm) Max temp (°C) Min temp (°C)\nAberdeen 61.2 9.8 2.1\n", 1},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			name := filepath.Base(tc.file)
			status, body := post(t, g, fileRequest(name, dataURL(t, tc.file), `{"id":"file-parser","pdf":{"engine":"pdf-text"}}`))
			if status != 200 {
				t.Fatalf("status %d: %s", status, body.Raw)
			}
			sent := gjson.ParseBytes(up.Last().Body)
			part := sent.Get("messages.0.content.1")
			if part.Get("type").Str != "text" || !strings.Contains(part.Get("text").Str, tc.want) || !strings.Contains(part.Get("text").Str, fmt.Sprintf("--- page %d ---", tc.pages)) {
				t.Fatalf("upstream got %s", sent.Get("messages").Raw)
			}
			if strings.Contains(string(up.Last().Body), "base64") {
				t.Fatal("the PDF itself reached the upstream")
			}
			ann := body.Get(`choices.0.message.annotations.#(type=="file")`)
			if len(ann.Get("file.hash").Str) != 64 || ann.Get("file.name").Str != name || !strings.Contains(ann.Get("file.content.0.text").Str, tc.want) {
				t.Fatalf("annotation %s", body.Get("choices.0.message").Raw)
			}
			st := body.Get(`service_metadata.pipeline.#(name=="file-parser")`)
			if st.Get("data.parsed").Int() != 1 || st.Get("data.pages").Int() != int64(tc.pages) {
				t.Fatalf("stage %s", st.Raw)
			}
		})
	}
}

// A hostile or broken file is a 400 naming the file and the reason, never
// a hang or a 5xx, and the upstream is not called; the gateway keeps
// serving.
func TestFileParserRefusesBadFiles(t *testing.T) {
	g := start(t)
	up := g.Upstreams["alpha"]
	cases := []struct{ file, url, reason string }{
		{"bomb.pdf", dataURL(t, "bomb.pdf"), "decompressed_too_large"},
		{"encrypted.pdf", dataURL(t, "encrypted.pdf"), "encrypted"},
		{"malformed.pdf", dataURL(t, "malformed.pdf"), "malformed"},
		{"cycle.pdf", dataURL(t, "cycle.pdf"), "malformed"},
		{"operands.pdf", dataURL(t, "operands.pdf"), "malformed"},
		{"not-base64.pdf", "data:application/pdf;base64,%%%", "malformed"},
		{"photo.png", "data:image/png;base64," + base64.StdEncoding.EncodeToString([]byte{0x89, 'P', 'N', 'G', 0, 0, 0xff}), "unsupported"},
		{"remote.pdf", "http://example.com/remote.pdf", "insecure_url"},
		{"ftp.pdf", "ftp://example.com/remote.pdf", "malformed"},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			before := up.Count()
			status, body := post(t, g, fileRequest(tc.file, tc.url, `{"id":"file-parser"}`))
			if status != 400 {
				t.Fatalf("status %d: %s", status, body.Raw)
			}
			msg := body.Get("error.message").Str
			if !strings.Contains(msg, tc.file) || !strings.Contains(msg, "messages[0].content[1]") || body.Get("error.metadata.reason").Str != tc.reason {
				t.Fatalf("%s", body.Raw)
			}
			if up.Count() != before {
				t.Fatal("the upstream was called")
			}
		})
	}
	if status, body := post(t, g, fileRequest("groff.pdf", dataURL(t, "groff.pdf"), `{"id":"file-parser"}`)); status != 200 {
		t.Fatalf("after the bad files: %d %s", status, body.Raw)
	}
}

// A client that echoes the annotations on the assistant message gets the
// file skipped (reused, not parsed); a new conversation with the same file
// finds its text in the module's kv store.
func TestFileParserReusesAnnotations(t *testing.T) {
	g := start(t)
	url := dataURL(t, "groff.pdf")
	status, first := post(t, g, fileRequest("groff.pdf", url, `{"id":"file-parser"}`))
	if status != 200 {
		t.Fatalf("%d %s", status, first.Raw)
	}
	ann := first.Get("choices.0.message.annotations")
	next := fileRequest("groff.pdf", url, `{"id":"file-parser"}`)
	next, _ = sjson.SetRaw(next, "messages.-1", `{"role":"assistant","content":"It is a report.","annotations":`+ann.Raw+`}`)
	next, _ = sjson.SetRaw(next, "messages.-1", `{"role":"user","content":"And page two?"}`)
	status, body := post(t, g, next)
	if status != 200 {
		t.Fatalf("%d %s", status, body.Raw)
	}
	st := body.Get(`service_metadata.pipeline.#(name=="file-parser")`)
	if st.Get("data.parsed").Int() != 0 || st.Get("data.reused").Int() != 1 {
		t.Fatalf("stage %s", st.Raw)
	}
	sent := gjson.ParseBytes(g.Upstreams["alpha"].Last().Body)
	if !strings.Contains(sent.Get("messages.0.content.1.text").Str, "Second page") {
		t.Fatalf("upstream got %s", sent.Get("messages").Raw)
	}
	// Same file, no echo: the kv cache.
	status, body = post(t, g, fileRequest("again.pdf", url, `{"id":"file-parser"}`))
	st = body.Get(`service_metadata.pipeline.#(name=="file-parser")`)
	if status != 200 || st.Get("data.parsed").Int() != 0 || st.Get("data.cached").Int() != 1 {
		t.Fatalf("%d stage %s", status, st.Raw)
	}
}

// In a stream the annotations arrive on the delta of the finishing chunk.
func TestFileParserStream(t *testing.T) {
	g := start(t)
	body, _ := sjson.Set(fileRequest("groff.pdf", dataURL(t, "groff.pdf"), `{"id":"file-parser"}`), "stream", true)
	req, _ := http.NewRequest("POST", g.URL+"/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+g.Key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	found := false
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		d, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || d == "[DONE]" {
			continue
		}
		if a := gjson.Get(d, `choices.0.delta.annotations.#(type=="file")`); a.Exists() && len(a.Get("file.hash").Str) == 64 {
			found = true
		}
	}
	if !found {
		t.Fatal("no file annotation in the stream")
	}
}

// Options the module does not know are a 400 naming them.
func TestFileParserOptions(t *testing.T) {
	g := start(t)
	cases := []struct{ plugin, want string }{
		{`{"id":"file-parser","pdf":{"engine":"mistral-ocr"}}`, "pdf.engine"},
		{`{"id":"file-parser","pdf":{"colour":"red"}}`, "colour"},
	}
	for _, tc := range cases {
		status, body := post(t, g, fileRequest("groff.pdf", dataURL(t, "groff.pdf"), tc.plugin))
		if status != 400 || !strings.Contains(body.Get("error.message").Str, tc.want) {
			t.Fatalf("%s: %d %s", tc.plugin, status, body.Raw)
		}
	}
}

// capture records the bodies a fake upstream receives.
type capture struct {
	mu     sync.Mutex
	bodies [][]byte
	next   http.Handler
}

func (c *capture) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	c.mu.Lock()
	c.bodies = append(c.bodies, b)
	c.mu.Unlock()
	r.Body = io.NopCloser(bytes.NewReader(b))
	c.next.ServeHTTP(w, r)
}

func (c *capture) last() gjson.Result {
	c.mu.Lock()
	defer c.mu.Unlock()
	return gjson.ParseBytes(c.bodies[len(c.bodies)-1])
}

// Engine native hands the PDF to the provider: an OpenAI-format upstream
// gets the file part as it came, an Anthropic one a document block with the
// same bytes; nothing is parsed.
func TestFileParserNative(t *testing.T) {
	anth := &capture{next: demo.NewAnthropic()}
	srv := httptest.NewServer(anth)
	defer srv.Close()
	yml := gatewaytest.DefaultYAML([]string{"alpha"}) +
		"  - id: test/claude\n    kind: chat\n    context_length: 200000\n    endpoints:\n" +
		"      - {provider: claude, upstream_model: claude-test, max_output: 1024, price: {prompt: 1, completion: 2}}\n"
	yml = strings.Replace(yml, "models:\n", "  - {slug: claude, name: claude, adapter: anthropic, base_url: \""+srv.URL+"/v1\", data_collection: deny, region: us}\nmodels:\n", 1)
	g, err := gatewaytest.Start(gatewaytest.Options{Quiet: true, ConfigYAML: yml})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	url := dataURL(t, "groff.pdf")
	native := `{"id":"file-parser","pdf":{"engine":"native"}}`

	status, body := post(t, g, fileRequest("groff.pdf", url, native))
	if status != 200 {
		t.Fatalf("%d %s", status, body.Raw)
	}
	part := gjson.ParseBytes(g.Upstreams["alpha"].Last().Body).Get("messages.0.content.1")
	if part.Get("type").Str != "file" || part.Get("file.file_data").Str != url {
		t.Fatalf("openai upstream got %.300s", part.Raw)
	}

	req, _ := sjson.Set(fileRequest("groff.pdf", url, native), "model", "test/claude")
	status, body = post(t, g, req)
	if status != 200 {
		t.Fatalf("%d %s", status, body.Raw)
	}
	doc := anth.last().Get(`messages.0.content.#(type=="document")`)
	if doc.Get("source.media_type").Str != "application/pdf" || "data:application/pdf;base64,"+doc.Get("source.data").Str != url {
		t.Fatalf("anthropic upstream got %.300s", anth.last().Get("messages").Raw)
	}
}
