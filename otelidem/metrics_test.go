package otelidem_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/idemhq/idem"
	"github.com/idemhq/idem/otelidem"
	"github.com/idemhq/idem/server"
)

// telemetry is an OpenTelemetry SDK that keeps what it is given: metrics
// read on demand through a manual reader, and ended spans.
type telemetry struct {
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
	meters *sdkmetric.MeterProvider
	traces *sdktrace.TracerProvider
}

func newTelemetry() *telemetry {
	tel := &telemetry{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder()}
	tel.meters = sdkmetric.NewMeterProvider(sdkmetric.WithReader(tel.reader))
	tel.traces = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tel.spans))
	return tel
}

// observer returns a server observer recording to tel.
func (tel *telemetry) observer(t testing.TB, keyOnSpans bool) *server.Observer {
	t.Helper()
	obs, err := otelidem.NewServerObserver(otelidem.Options{MeterProvider: tel.meters, TracerProvider: tel.traces, KeyOnSpans: keyOnSpans})
	require.NoError(t, err)
	return obs
}

// clientObservers returns a client and a journal observer recording to
// tel.
func (tel *telemetry) clientObservers(t testing.TB) (*idem.Observer, *idem.JournalObserver) {
	t.Helper()
	o := otelidem.Options{MeterProvider: tel.meters, TracerProvider: tel.traces}
	obs, err := otelidem.NewClientObserver(o)
	require.NoError(t, err)
	jobs, err := otelidem.NewJournalObserver(o)
	require.NoError(t, err)
	return obs, jobs
}

// points is one instrument's data: the value of each attribute set (a
// sum's or gauge's value, a float64 histogram's count, an int64
// histogram's sum), by the set's encoding
// ("a=1,b=2"; "" for no attributes).
type points map[string]int64

// collect reads every instrument's points.
func (tel *telemetry) collect(t testing.TB) map[string]points {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, tel.reader.Collect(context.Background(), &rm))
	out := map[string]points{}
	enc := attribute.DefaultEncoder()
	for _, sm := range rm.ScopeMetrics {
		require.Equal(t, otelidem.ScopeName, sm.Scope.Name)
		for _, m := range sm.Metrics {
			p := points{}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					p[dp.Attributes.Encoded(enc)] = dp.Value
				}
			case metricdata.Histogram[float64]:
				for _, dp := range d.DataPoints {
					p[dp.Attributes.Encoded(enc)] = int64(dp.Count)
				}
			case metricdata.Histogram[int64]:
				for _, dp := range d.DataPoints {
					p[dp.Attributes.Encoded(enc)] = dp.Sum
				}
			case metricdata.Gauge[int64]:
				for _, dp := range d.DataPoints {
					p[dp.Attributes.Encoded(enc)] = dp.Value
				}
			default:
				t.Fatalf("%s: unexpected data %T", m.Name, m.Data)
			}
			out[m.Name] = p
		}
	}
	return out
}

// counts returns the count of each data point of the histogram name,
// where collect gives an int64 histogram's sum.
func (tel *telemetry) counts(t testing.TB, name string) points {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, tel.reader.Collect(context.Background(), &rm))
	enc := attribute.DefaultEncoder()
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			d, ok := m.Data.(metricdata.Histogram[int64])
			require.True(t, ok, "%s: %T is no int64 histogram", name, m.Data)
			p := points{}
			for _, dp := range d.DataPoints {
				p[dp.Attributes.Encoded(enc)] = int64(dp.Count)
			}
			return p
		}
	}
	return nil
}

// sum adds up the values of p.
func sum(p points) int64 {
	var n int64
	for _, v := range p {
		n += v
	}
	return n
}

// with sums the points whose attributes include attr ("key=value"),
// whatever other attributes they carry.
func (p points) with(attr string) int64 {
	var n int64
	for attrs, v := range p {
		if slices.Contains(strings.Split(attrs, ","), attr) {
			n += v
		}
	}
	return n
}
