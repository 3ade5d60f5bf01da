package telemetry_test

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/switchyard/switchyard/host/demo"
	"github.com/switchyard/switchyard/host/gatewaytest"
	collector "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// spanStore keeps the spans a fake collector received.
type spanStore struct {
	mu    sync.Mutex
	spans []*tracepb.Span
}

// add keeps the spans of an export request; the caller holds mu.
func (st *spanStore) add(req *collector.ExportTraceServiceRequest) {
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			st.spans = append(st.spans, ss.Spans...)
		}
	}
}

// server is the last server span whose name ends in route; the caller
// holds mu. It fails the test when there is none.
func (st *spanStore) server(t *testing.T, route string) *tracepb.Span {
	t.Helper()
	var server *tracepb.Span
	for _, s := range st.spans {
		if s.Kind == tracepb.Span_SPAN_KIND_SERVER && strings.HasSuffix(s.Name, route) {
			server = s
		}
	}
	if server == nil {
		t.Fatalf("no server span for %s among %d spans", route, len(st.spans))
	}
	return server
}

// receiver is an OTLP/HTTP trace receiver on loopback: it decodes each
// export request (protobuf, gzip or not) and keeps the spans.
type receiver struct {
	spanStore
	bad []string
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		body = zr
	}
	raw, err := io.ReadAll(body)
	req := &collector.ExportTraceServiceRequest{}
	if err == nil {
		err = proto.Unmarshal(raw, req)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" || err != nil {
		rc.bad = append(rc.bad, fmt.Sprintf("%s %s %s: %v", r.Method, r.URL.Path, r.Header.Get("Content-Type"), err))
		http.Error(w, "bad export", 400)
		return
	}
	rc.add(req)
	out, _ := proto.Marshal(&collector.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func attr(s *tracepb.Span, key string) string {
	for _, a := range s.Attributes {
		if a.Key == key {
			v := a.Value
			switch {
			case v.GetStringValue() != "":
				return v.GetStringValue()
			case v.GetIntValue() != 0:
				return fmt.Sprint(v.GetIntValue())
			}
		}
	}
	return ""
}

// A streaming request with a plugin, whose first provider fails, is
// exported as one trace continuing the caller's: a server span with the
// caller's span as parent, and under it validation, the plugin call,
// routing, the hold, a failed attempt at alpha, the attempt at beta that
// served, and the settlement. beta received the trace context of its
// attempt's span.
func TestTraceOfStreamWithPluginAndFallback(t *testing.T) {
	rc := &receiver{}
	otlp := httptest.NewServer(rc)
	defer otlp.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", otlp.URL)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "10")
	t.Setenv("OTEL_SERVICE_NAME", "switchyard-test")
	g := start(t, gatewaytest.Options{Providers: []string{"alpha", "beta"}})

	mf, bin := testPluginFiles(t)
	resp, b, err := g.Request(http.MethodPost, "/modules", fmt.Sprintf(`{"manifest":%s,"wasm":%q,"scope":"global","activate":true}`, mf, base64.StdEncoding.EncodeToString(bin)))
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("publish: %v %s", err, b)
	}
	g.Upstreams["alpha"].SetFaults(demo.Faults{Status: 500})

	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	req, _ := http.NewRequest(http.MethodPost, g.URL+"/chat/completions",
		strings.NewReader(hello(`,"stream":true,"plugins":[{"id":"testplugin","mode":"shout"}]`+ordered)))
	req.Header.Set("Authorization", "Bearer "+g.Key)
	req.Header.Set("traceparent", "00-"+traceID+"-"+parentID+"-01")
	sresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	stream, _ := io.ReadAll(sresp.Body)
	sresp.Body.Close()
	if sresp.StatusCode != 200 || !bytes.Contains(stream, []byte("[DONE]")) {
		t.Fatalf("stream: %d %s", sresp.StatusCode, stream)
	}
	upstreamTP := g.Upstreams["beta"].Last().Header.Get("traceparent")
	// Closing the gateway flushes the spans still queued (after the
	// stream's end has been reported).
	g.Close()

	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.bad) > 0 {
		t.Fatalf("bad exports: %v", rc.bad)
	}
	server := rc.server(t, "/chat/completions")
	if hex.EncodeToString(server.TraceId) != traceID || hex.EncodeToString(server.ParentSpanId) != parentID {
		t.Fatalf("server span in trace %x under %x, want the caller's %s under %s", server.TraceId, server.ParentSpanId, traceID, parentID)
	}
	for k, want := range map[string]string{"gen_ai.request.model": "test/chat", "gen_ai.provider.name": "beta",
		"gen_ai.operation.name": "chat", "http.response.status_code": "200", "switchyard.upstream_attempts": "2"} {
		if got := attr(server, k); got != want {
			t.Errorf("server span %s = %q, want %q", k, got, want)
		}
	}
	if attr(server, "gen_ai.usage.output_tokens") == "" {
		t.Error("server span without gen_ai.usage.output_tokens")
	}
	// The children, in the order they started.
	var children []*tracepb.Span
	for _, s := range rc.spans {
		if bytes.Equal(s.ParentSpanId, server.SpanId) {
			children = append(children, s)
		}
	}
	for i := 1; i < len(children); i++ {
		for j := i; j > 0 && children[j].StartTimeUnixNano < children[j-1].StartTimeUnixNano; j-- {
			children[j], children[j-1] = children[j-1], children[j]
		}
	}
	var names []string
	for _, c := range children {
		if !bytes.Equal(c.TraceId, server.TraceId) {
			t.Errorf("span %s in another trace", c.Name)
		}
		names = append(names, c.Name)
	}
	want := []string{"validate", "plugin testplugin pre_request", "route", "billing.reserve", "upstream alpha", "upstream beta", "billing.settle"}
	if strings.Join(names, " | ") != strings.Join(want, " | ") {
		t.Fatalf("children of the server span:\n  %s\nwant\n  %s", strings.Join(names, " | "), strings.Join(want, " | "))
	}
	alpha, beta := children[4], children[5]
	if alpha.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || beta.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("attempt statuses: alpha %v, beta %v; want alpha failed, beta not", alpha.Status, beta.Status)
	}
	if attr(beta, "gen_ai.provider.name") != "beta" || attr(beta, "switchyard.attempt") != "2" || beta.Kind != tracepb.Span_SPAN_KIND_CLIENT {
		t.Errorf("beta attempt span: %v", beta)
	}
	// The stream's attempt lasts until the stream ends: after settlement began.
	if beta.EndTimeUnixNano < children[6].StartTimeUnixNano {
		t.Error("the streaming attempt's span ended before the stream was settled")
	}
	if wantTP := "00-" + traceID + "-" + hex.EncodeToString(beta.SpanId) + "-01"; upstreamTP != wantTP {
		t.Errorf("beta received traceparent %q, want %q", upstreamTP, wantTP)
	}
}
