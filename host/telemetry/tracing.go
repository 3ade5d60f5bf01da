package telemetry

import (
	"context"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
)

// TracingEnabled reports whether the standard OpenTelemetry environment
// asks for traces: an OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), OTEL_TRACES_EXPORTER is unset or
// "otlp", and OTEL_SDK_DISABLED is not "true".
func TracingEnabled(getenv func(string) string) bool {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	if e := getenv("OTEL_TRACES_EXPORTER"); e != "" && e != "otlp" {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Tracing starts an OTLP trace exporter (HTTP/protobuf, or gRPC when
// OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL is "grpc") configured by the OTEL_*
// environment variables (endpoint, headers, timeout, compression, the
// batch processor's OTEL_BSP_*, the sampler's OTEL_TRACES_SAMPLER and the
// resource's OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES), or returns a
// nil tracer when TracingEnabled is false. shutdown flushes the spans
// still queued.
func Tracing(ctx context.Context) (tr trace.Tracer, shutdown func(context.Context) error, err error) {
	if !TracingEnabled(os.Getenv) {
		return nil, func(context.Context) error { return nil }, nil
	}
	proto := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if proto == "" {
		proto = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	// Both exporters read the same OTEL_EXPORTER_OTLP_* variables
	// (endpoint, headers, timeout, compression, certificates; for gRPC also
	// OTEL_EXPORTER_OTLP_INSECURE, or an http:// endpoint, for plaintext).
	var exp sdktrace.SpanExporter
	switch proto {
	case "", "http/protobuf":
		exp, err = otlptracehttp.New(ctx)
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	default:
		return nil, nil, fmt.Errorf("tracing: OTLP protocol %q is not supported; use OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf (the default) or grpc", proto)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("tracing: %w", err)
	}
	// The service is "switchyard" unless OTEL_SERVICE_NAME or
	// OTEL_RESOURCE_ATTRIBUTES name it otherwise (WithFromEnv comes last).
	res, err := resource.New(ctx, resource.WithAttributes(semconv.ServiceName("switchyard")), resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil {
		return nil, nil, fmt.Errorf("tracing: resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return tp.Tracer("github.com/switchyard/switchyard"), tp.Shutdown, nil
}
