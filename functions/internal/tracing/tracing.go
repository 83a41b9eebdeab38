// Package tracing turns the template's Lambda functions' OpenTelemetry
// tracing on or off from the standard variable OTEL_TRACES_EXPORTER:
//
//   - unset or "none": off. Setup's provider is a no-op one and the
//     functions add no instrumentation at all: no span, no cost.
//   - "console": one JSON line per span on stdout, which Lambda sends to
//     CloudWatch Logs. Each span is written when it ends (a simple,
//     synchronous span processor), so nothing waits in a buffer when
//     Lambda freezes the sandbox between invocations.
//
// Anything else is a configuration error that stops the function at init.
// The spans' service.name is the function's name (AWS_LAMBDA_FUNCTION_NAME)
// unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES say otherwise, and
// the SDK's other variables (OTEL_TRACES_SAMPLER...) apply as usual.
package tracing

import (
	"context"
	"io"
	"os"
	"strings"

	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// EnvExporter is the standard variable that says where spans go.
const EnvExporter = "OTEL_TRACES_EXPORTER"

// The values of EnvExporter that Setup accepts (in any case).
const (
	ExporterNone    = "none"    // the default: no tracing
	ExporterConsole = "console" // JSON lines on stdout
)

// Setup returns the tracer provider EnvExporter asks for, and the function
// that flushes and stops it (spans are written as they end, so a Lambda
// function need not call it). With tracing off the provider is a no-op one,
// for which Enabled is false. The error is a *consumer.ConfigError naming
// the variable and the accepted values.
func Setup(ctx context.Context) (tp trace.TracerProvider, shutdown func(context.Context) error, err error) {
	return setup(ctx, os.Getenv, os.Stdout)
}

// Enabled reports whether tp records spans: false for the provider Setup
// returns when tracing is off. Callers then leave their instrumentation
// out altogether.
func Enabled(tp trace.TracerProvider) bool {
	_, off := tp.(noop.TracerProvider)
	return tp != nil && !off
}

func setup(ctx context.Context, getenv func(string) string, stdout io.Writer) (trace.TracerProvider, func(context.Context) error, error) {
	off := func(context.Context) error { return nil }
	env := consumer.NewEnv(func(name string) string { return strings.ToLower(getenv(name)) })
	exporter := env.OneOf(EnvExporter, ExporterNone, ExporterNone, ExporterConsole)
	if err := env.Err("tracing"); err != nil {
		return noop.NewTracerProvider(), off, err
	}
	if exporter == ExporterNone {
		return noop.NewTracerProvider(), off, nil
	}
	exp, err := stdouttrace.New(stdouttrace.WithWriter(stdout))
	if err != nil {
		return noop.NewTracerProvider(), off, err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithResource(newResource(ctx, getenv)))
	return tp, tp.Shutdown, nil
}

// newResource describes the function: service.name is its name, unless
// OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES (read last) say otherwise.
func newResource(ctx context.Context, getenv func(string) string) *resource.Resource {
	opts := []resource.Option{resource.WithTelemetrySDK()}
	if name := getenv("AWS_LAMBDA_FUNCTION_NAME"); name != "" {
		opts = append(opts, resource.WithAttributes(semconv.ServiceName(name)))
	}
	// A malformed OTEL_RESOURCE_ATTRIBUTES is a partial resource: what
	// could be read is kept, and tracing goes on.
	r, _ := resource.New(ctx, append(opts, resource.WithFromEnv())...)
	return r
}
