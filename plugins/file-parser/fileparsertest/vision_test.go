//go:build !wasip1

package fileparsertest

import (
	"strings"
	"testing"

	"github.com/switchyard/switchyard/host/config"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/gjson"
)

// visionYAML is the test catalog plus two vision models — test/vision on
// the OpenAI-format fake (upstream model echo-vision) and
// test/claude-vision on a fake Anthropic upstream — both the demo's
// vision model, which answers with the text it reads in the images it
// received (host/demo/vision.go): a transcription in the file's text
// proves the page image went out. settings is module_settings.file-parser.
func visionYAML(settings string) string {
	yml := gatewaytest.DefaultYAML([]string{"alpha"}) +
		"  - id: test/vision\n    kind: chat\n    context_length: 32768\n    input_modalities: [text, image]\n    endpoints:\n" +
		"      - {provider: alpha, upstream_model: echo-vision, max_output: 4096, price: {prompt: 5, completion: 10}}\n" +
		"  - id: test/claude-vision\n    kind: chat\n    context_length: 200000\n    input_modalities: [text, image]\n    endpoints:\n" +
		"      - {provider: claude, upstream_model: claude-vision-test, max_output: 4096, price: {prompt: 3, completion: 15}}\n"
	yml = strings.Replace(yml, "models:\n", "  - {slug: claude, name: claude, adapter: anthropic, base_url: \"{{url:claude}}\", data_collection: deny, region: us}\nmodels:\n", 1)
	if settings != "" {
		yml += "module_settings:\n  file-parser: " + settings + "\n"
	}
	return yml
}

func startVision(t testing.TB, settings string, mutate func(*config.Config)) *gatewaytest.Gateway {
	t.Helper()
	g, err := gatewaytest.Start(gatewaytest.Options{Quiet: true, ConfigYAML: visionYAML(settings), Anthropic: []string{"claude"}, Mutate: mutate})
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
		{"test/vision", "scan-mixed.pdf", 2, []string{"--- page 1 ---\nCover page: the delivery note follows", "--- page 2 ---\nAppendix B (scanned)", "Signed: M. Lindqvist, 2026-04-02"}},
	}
	for _, tc := range cases {
		t.Run(tc.model+"/"+tc.file, func(t *testing.T) {
			g := startVision(t, `{vision: {model: `+tc.model+`}}`, nil)
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
}
