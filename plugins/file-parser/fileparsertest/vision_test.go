//go:build !wasip1

package fileparsertest

import (
	"bufio"
	"net/http"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/host/config"
	"github.com/switchyard/switchyard/host/demo"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// visionYAML is the test catalog plus three vision models — test/vision
// on the OpenAI-format fake (upstream model echo-vision),
// test/claude-vision on a fake Anthropic upstream and test/gemini-vision on
// a fake Gemini one — each the demo's
// vision model, which answers with the text it reads in the images it
// received (host/demo/vision.go): a transcription in the file's text
// proves the page image went out. settings is module_settings.file-parser.
func visionYAML(settings string) string {
	yml := gatewaytest.DefaultYAML([]string{"alpha"}) +
		"  - id: test/vision\n    kind: chat\n    context_length: 32768\n    input_modalities: [text, image]\n    endpoints:\n" +
		"      - {provider: alpha, upstream_model: echo-vision, max_output: 4096, price: {prompt: 5, completion: 10}}\n" +
		"  - id: test/claude-vision\n    kind: chat\n    context_length: 200000\n    input_modalities: [text, image]\n    endpoints:\n" +
		"      - {provider: claude, upstream_model: claude-vision-test, max_output: 4096, price: {prompt: 3, completion: 15}}\n"
	yml += "  - id: test/gemini-vision\n    kind: chat\n    context_length: 1000000\n    input_modalities: [text, image]\n    endpoints:\n" +
		"      - {provider: gem, upstream_model: gemini-vision-test, max_output: 4096, price: {prompt: 0.3, completion: 2.5}}\n"
	yml = strings.Replace(yml, "models:\n", "  - {slug: claude, name: claude, adapter: anthropic, base_url: \"{{url:claude}}\", data_collection: deny, region: us}\n"+
		"  - {slug: gem, name: gem, adapter: gemini, base_url: \"{{url:gem}}\", api_key_env: GEM_KEY, data_collection: deny, region: us}\nmodels:\n", 1)
	if settings != "" {
		yml += "module_settings:\n  file-parser: " + settings + "\n"
	}
	return yml
}

func startVision(t testing.TB, settings string, mutate func(*config.Config)) *gatewaytest.Gateway {
	t.Helper()
	g, err := gatewaytest.Start(gatewaytest.Options{Quiet: true, ConfigYAML: visionYAML(settings), Anthropic: []string{"claude"}, Gemini: []string{"gem"},
		Env: map[string]string{"GEM_KEY": "AIza-test-key-0123456789"}, Mutate: mutate})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	return g
}

const vision = `{"id":"file-parser","pdf":{"engine":"vision"}}`

// Engine vision sends each scanned page's image to the operator's vision
// model — in OpenAI's format and in Anthropic's — and the model that
// answers receives the transcriptions in place of the PDF, page by page;
// the sub-requests are billed to the caller and show in usage.cost.
func TestFileParserVision(t *testing.T) {
	cases := []struct {
		model, file string
		pages       int
		want        []string
	}{
		{"test/vision", "scan-img2pdf.pdf", 2, []string{"--- page 1 ---\nACME Freight Ltd - scanned delivery note", "Note no. 4471, dated 2026-02-17", "--- page 2 ---\nPage 2 - handling instructions", "Fragile glass: total weight 2,340 kg"}},
		{"test/claude-vision", "scan-gs.pdf", 1, []string{"12 pallets of solar panels to Rotterdam"}},
		{"test/gemini-vision", "scan-img2pdf.pdf", 2, []string{"Received in good order by J. Okafor", "Keep dry. Stack at most 3 high."}},
		{"test/vision", "scan-mixed.pdf", 2, []string{"--- page 1 ---\nCover page: the delivery note follows", "--- page 2 ---\nAppendix B (scanned)", "Signed: M. Lindqvist, 2026-04-02"}},
	}
	// One gateway per vision model (a start costs seconds under -race).
	gws := map[string]*gatewaytest.Gateway{}
	parent := t
	gateway := func(model string) *gatewaytest.Gateway {
		if gws[model] == nil {
			gws[model] = startVision(parent, `{vision: {model: `+model+`}}`, nil)
		}
		return gws[model]
	}
	for _, tc := range cases {
		t.Run(tc.model+"/"+tc.file, func(t *testing.T) {
			g := gateway(tc.model)
			status, body := post(t, g, fileRequest(tc.file, dataURL(t, tc.file), vision))
			if status != 200 {
				t.Fatalf("status %d: %s", status, body.Raw)
			}
			// The main request went to test/chat (upstream model echo)
			// after the vision sub-requests.
			sent := gjson.ParseBytes(g.Upstreams["alpha"].Last().Body)
			if sent.Get("model").Str != "echo" {
				t.Fatalf("last upstream request was %s", sent.Get("model").Str)
			}
			text := sent.Get("messages.0.content.1.text").Str
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Fatalf("upstream got %q, want %q in it", text, w)
				}
			}
			if !strings.Contains(text, "transcribed by "+tc.model) || strings.Contains(string(g.Upstreams["alpha"].Last().Body), "base64") {
				t.Fatalf("upstream got %.400s", sent.Get("messages").Raw)
			}
			ann := body.Get(`choices.0.message.annotations.#(type=="file")`)
			if !strings.Contains(ann.Get("file.content.0.text").Str, tc.want[len(tc.want)-1]) {
				t.Fatalf("annotation %s", ann.Raw)
			}
			st := body.Get(`service_metadata.pipeline.#(name=="file-parser")`)
			scans := tc.pages
			if tc.file == "scan-mixed.pdf" {
				scans = 1
			}
			if st.Get("data.engine").Str != "vision" || st.Get("data.vision.model").Str != tc.model || st.Get("data.vision.calls").Int() != int64(scans) || st.Get("data.pages").Int() != int64(tc.pages) {
				t.Fatalf("stage %s", st.Raw)
			}
			// Each vision call is a sub-request charged to the caller:
			// listed in the metadata, and in usage.cost.
			subs := body.Get(`service_metadata.pipeline.#(type=="sub_requests")`)
			reqs := subs.Get("data.requests").Array()
			if len(reqs) != scans {
				t.Fatalf("%d sub-requests, want %d: %s", len(reqs), scans, subs.Raw)
			}
			for _, r := range reqs {
				if r.Get("model").Str != tc.model || r.Get("status").Str != "success" || r.Get("cost").Float() <= 0 {
					t.Fatalf("sub-request %s", r.Raw)
				}
			}
			subCost := subs.Get("data.cost").Float()
			if cost := body.Get("usage.cost").Float(); subCost <= 0 || cost <= subCost {
				t.Fatalf("usage.cost %v, sub-requests %v: %s", cost, subCost, body.Get("usage").Raw)
			}
		})
	}
	t.Run("stream and cache", func(t *testing.T) { visionStreamAndCache(t, gateway("test/vision")) })
}

// Without an engine, a PDF with no text layer goes to the vision model
// when the operator configured one; with engine pdf-text, or with no
// vision model, it is a 400 that says to use vision. Engine vision on a
// PDF without images reads its text layer and calls no model.
func TestFileParserVisionFallbacks(t *testing.T) {
	g := startVision(t, `{vision: {model: test/vision}}`, nil)
	up := g.Upstreams["alpha"]

	status, body := post(t, g, fileRequest("scan.pdf", dataURL(t, "scan-img2pdf.pdf"), `{"id":"file-parser"}`))
	st := body.Get(`service_metadata.pipeline.#(name=="file-parser")`)
	if status != 200 || st.Get("data.fallback").Str != "vision" || st.Get("data.vision.calls").Int() != 2 {
		t.Fatalf("%d stage %s", status, st.Raw)
	}
	if text := gjson.GetBytes(up.Last().Body, "messages.0.content.1.text").Str; !strings.Contains(text, "Fragile glass: total weight 2,340 kg") {
		t.Fatalf("upstream got %q", text)
	}
	// Again: the transcription comes from kv, no model call.
	status, body = post(t, g, fileRequest("scan.pdf", dataURL(t, "scan-img2pdf.pdf"), `{"id":"file-parser"}`))
	st = body.Get(`service_metadata.pipeline.#(name=="file-parser")`)
	if status != 200 || st.Get("data.cached").Int() != 1 || body.Get(`service_metadata.pipeline.#(type=="sub_requests")`).Exists() {
		t.Fatalf("%d %s", status, body.Get("service_metadata").Raw)
	}
	if text := gjson.GetBytes(up.Last().Body, "messages.0.content.1.text").Str; !strings.Contains(text, "Fragile glass: total weight 2,340 kg") {
		t.Fatalf("upstream got %q", text)
	}

	status, body = post(t, g, fileRequest("groff.pdf", dataURL(t, "groff.pdf"), vision))
	st = body.Get(`service_metadata.pipeline.#(name=="file-parser")`)
	if status != 200 || st.Get("data.fallback").Str != "text" || st.Get("data.vision.calls").Int() != 0 || body.Get(`service_metadata.pipeline.#(type=="sub_requests")`).Exists() {
		t.Fatalf("%d %s", status, body.Get("service_metadata").Raw)
	}
	if text := gjson.GetBytes(up.Last().Body, "messages.0.content.1.text").Str; !strings.Contains(text, "third quarter, with a median latency") {
		t.Fatalf("upstream got %q", text)
	}

	before := up.Count()
	status, body = post(t, g, fileRequest("scan.pdf", dataURL(t, "scan-img2pdf.pdf"), `{"id":"file-parser","pdf":{"engine":"pdf-text"}}`))
	if status != 400 || body.Get("error.metadata.reason").Str != "no_text" || !strings.Contains(body.Get("error.message").Str, `"engine": "vision"`) || !strings.Contains(body.Get("error.message").Str, "scan.pdf") {
		t.Fatalf("%d %s", status, body.Raw)
	}
	if up.Count() != before {
		t.Fatal("the upstream was called")
	}

	// No vision model configured.
	g2 := startVision(t, "", nil)
	for _, tc := range []struct{ plugin, reason string }{
		{`{"id":"file-parser"}`, "no_text"},
		{vision, "vision_unavailable"},
	} {
		status, body := post(t, g2, fileRequest("scan.pdf", dataURL(t, "scan-img2pdf.pdf"), tc.plugin))
		if status != 400 || body.Get("error.metadata.reason").Str != tc.reason || !strings.Contains(body.Get("error.message").Str, "scan.pdf") {
			t.Fatalf("%s: %d %s", tc.plugin, status, body.Raw)
		}
	}
}

// The limits of engine vision: images per file, bytes per image, the
// request's budget of model calls, and a vision model that fails — each a
// 400 naming the file, with the answering model never called.
func TestFileParserVisionLimits(t *testing.T) {
	budget := func(c *config.Config) { c.Modules.ChatCallsPerRequest = 1 }
	cases := []struct {
		name, settings string
		mutate         func(*config.Config)
		fault, shared  bool // shared: on the previous case's gateway
		reason, want   string
	}{
		{"images per file", `{vision: {model: test/vision, max_images: 1}}`, nil, false, false, "too_many_images", "at most 1 per file"},
		{"image bytes", `{vision: {model: test/vision, max_image_bytes: 2000}}`, nil, false, false, "image_too_large", "page 1: an image is 22227 bytes as sent, over the limit of 2000"},
		{"chat budget", `{vision: {model: test/vision}}`, budget, false, false, "budget", "page 2"},
		// The same gateway (a start costs seconds under -race): page 1's
		// call fails before the budget matters.
		{"vision model fails", `{vision: {model: test/vision}}`, budget, true, true, "vision_failed", "page 1"},
		{"no such vision model", `{vision: {model: test/nothing}}`, nil, false, false, "vision_failed", "test/nothing"},
	}
	var g *gatewaytest.Gateway
	parent := t
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.shared {
				g = startVision(parent, tc.settings, tc.mutate)
			}
			up := g.Upstreams["alpha"]
			if tc.fault {
				up.SetFaults(demoFault)
			}
			status, body := post(t, g, fileRequest("scan.pdf", dataURL(t, "scan-img2pdf.pdf"), vision))
			if status != 400 || body.Get("error.metadata.reason").Str != tc.reason || !strings.Contains(body.Get("error.message").Str, "scan.pdf") || !strings.Contains(body.Get("error.message").Str, tc.want) {
				t.Fatalf("%d %s", status, body.Raw)
			}
			if up.Count() > 0 && gjson.GetBytes(up.Last().Body, "model").Str == "echo" {
				t.Fatal("the answering model was called")
			}
		})
	}
}

// demoFault makes the fake upstream answer 500 (the vision model fails).
var demoFault = demo.Faults{Status: 500}

// In a stream, engine vision runs before the first byte: the upstream's
// prompt has the transcription and the finishing chunk the annotation. The
// same file again is read from the module's kv store: no model call.
func visionStreamAndCache(t *testing.T, g *gatewaytest.Gateway) {
	body, _ := sjson.Set(fileRequest("scan.pdf", dataURL(t, "scan-gs.pdf"), vision), "stream", true)
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
	var ann gjson.Result
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && d != "[DONE]" {
			if a := gjson.Get(d, `choices.0.delta.annotations.#(type=="file")`); a.Exists() {
				ann = a
			}
		}
	}
	if !strings.Contains(ann.Get("file.content.0.text").Str, "Received in good order by J. Okafor") {
		t.Fatalf("stream annotation %s", ann.Raw)
	}
	if text := gjson.GetBytes(g.Upstreams["alpha"].Last().Body, "messages.0.content.1.text").Str; !strings.Contains(text, "12 pallets of solar panels to Rotterdam") {
		t.Fatalf("upstream got %q", text)
	}

	calls := g.Upstreams["alpha"].Count()
	status, res := post(t, g, fileRequest("again.pdf", dataURL(t, "scan-gs.pdf"), vision))
	st := res.Get(`service_metadata.pipeline.#(name=="file-parser")`)
	if status != 200 || st.Get("data.cached").Int() != 1 || st.Get("data.vision.calls").Int() != 0 || g.Upstreams["alpha"].Count() != calls+1 {
		t.Fatalf("%d %s", status, res.Get("service_metadata").Raw)
	}
}
