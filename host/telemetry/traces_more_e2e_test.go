package telemetry_test

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/switchyard/switchyard/host/telemetry"
	collector "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
)

// grpcReceiver is an OTLP/gRPC trace collector on loopback.
type grpcReceiver struct {
	collector.UnimplementedTraceServiceServer
	spanStore
}

func (rc *grpcReceiver) Export(_ context.Context, req *collector.ExportTraceServiceRequest) (*collector.ExportTraceServiceResponse, error) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.add(req)
	return &collector.ExportTraceServiceResponse{}, nil
}

// With OTEL_EXPORTER_OTLP_PROTOCOL=grpc the spans go to an OTLP/gRPC
// collector (4317 is what most collectors listen on by default).
func TestTracesOverGRPC(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rc := &grpcReceiver{}
	srv := grpc.NewServer()
	collector.RegisterTraceServiceServer(srv, rc)
	go func() { _ = srv.Serve(ln) }()
	defer srv.Stop()
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+ln.Addr().String())
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "10")
	g := start(t, gatewaytest.Options{})
	resp, b, err := g.Request(http.MethodPost, "/chat/completions", hello(""))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("chat: %v %d %s", err, resp.StatusCode, b)
	}
	g.Close() // flushes the queued spans

	rc.mu.Lock()
	defer rc.mu.Unlock()
	server := rc.server(t, "/chat/completions")
	if got := attr(server, "gen_ai.request.model"); got != "test/chat" {
		t.Fatalf("server span gen_ai.request.model %q, want test/chat", got)
	}
}

// A protocol the gateway cannot speak is refused at start, naming the ones
// it can, rather than exporting nowhere.
func TestTracesUnknownProtocol(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
	_, _, err := telemetry.Tracing(context.Background())
	if err == nil || !strings.Contains(err.Error(), "http/protobuf") || !strings.Contains(err.Error(), "grpc") {
		t.Fatalf("Tracing with http/json: %v", err)
	}
}

// An embeddings request's trace has the same shape as a chat request's:
// validation, routing, the hold, the attempt and the settlement under the
// server span.
func TestTraceOfEmbeddings(t *testing.T) {
	rc := &receiver{}
	otlp := httptest.NewServer(rc)
	defer otlp.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", otlp.URL)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "10")
	g := start(t, gatewaytest.Options{})
	resp, b, err := g.Request(http.MethodPost, "/embeddings", `{"model":"test/embed","input":"x"}`)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("embeddings: %v %d %s", err, resp.StatusCode, b)
	}
	g.Close()

	rc.mu.Lock()
	defer rc.mu.Unlock()
	server := rc.server(t, "/embeddings")
	names := map[string]bool{}
	for _, s := range rc.spans {
		if bytes.Equal(s.ParentSpanId, server.SpanId) {
			names[s.Name] = true
		}
	}
	for _, want := range []string{"validate", "route", "billing.reserve", "billing.settle"} {
		if !names[want] {
			t.Errorf("no %q span under the embeddings server span (children: %v)", want, names)
		}
	}
}
