package otelidem_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/idemhq/idem"
	"github.com/idemhq/idem/otelidem"
	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/memstore"
)

// discardWriter is a reusable ResponseWriter that keeps the last status.
type discardWriter struct {
	h      http.Header
	status int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) WriteHeader(code int)        { w.status = code }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }

var benchPayload = []byte(`{"amount":1000,"currency":"EUR","customer":"cus_42","description":"tea"}`)

var benchHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	w.Write([]byte(`{"id":"ch_1","status":"succeeded"}`))
})

// BenchmarkMiddleware measures the middleware on memstore, as the server
// package's benchmark of the same name does, on a first execution and a
// replay, with no observer, with the OpenTelemetry observer recording
// metrics into the SDK (spans off: a no-op tracer), and with metrics and
// spans (the SDK's tracer, sampling every span, exporting none), all in
// one run:
//
//	go test -run '^$' -bench BenchmarkMiddleware -benchmem ./otelidem/
func BenchmarkMiddleware(b *testing.B) {
	metricsOnly, err := otelidem.NewServerObserver(otelidem.Options{
		MeterProvider:  sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader())),
		TracerProvider: noop.NewTracerProvider(),
	})
	if err != nil {
		b.Fatal(err)
	}
	traced, err := otelidem.NewServerObserver(otelidem.Options{
		MeterProvider:  sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader())),
		TracerProvider: sdktrace.NewTracerProvider(),
	})
	if err != nil {
		b.Fatal(err)
	}
	observers := []struct {
		name string
		obs  *server.Observer
	}{{"none", nil}, {"metrics", metricsOnly}, {"metrics+spans", traced}}
	runs := 0
	for _, kind := range []string{"first", "replay"} {
		for _, o := range observers {
			opts := server.Options{SingleTenant: true, Observer: o.obs}
			if kind == "first" {
				opts.Retention = time.Millisecond // the store never fills up
			}
			h := server.Middleware(memstore.New(memstore.Options{}), opts)(benchHandler)
			b.Run(kind+"/"+o.name, func(b *testing.B) {
				runs++
				keys := make([][]string, b.N)
				for i := range keys {
					keys[i] = []string{"bench-" + strconv.Itoa(runs) + "-" + strconv.Itoa(i)}
					if kind == "replay" {
						keys[i] = keys[0]
					}
				}
				body := bytes.NewReader(benchPayload)
				req := httptest.NewRequest(http.MethodPost, "/charges", io.NopCloser(body))
				req.Header.Set("Content-Type", "application/json")
				req.ContentLength = int64(len(benchPayload))
				w := &discardWriter{h: make(http.Header)}
				serve := func(i int) {
					body.Reset(benchPayload)
					req.Header["Idempotency-Key"] = keys[i]
					clear(w.h)
					h.ServeHTTP(w, req)
				}
				if kind == "replay" {
					serve(0)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					serve(i)
				}
				b.StopTimer()
				if w.status != http.StatusCreated {
					b.Fatalf("the last answer was %d, not the handler's 201", w.status)
				}
			})
		}
	}
}

// BenchmarkClient measures one POST by the idem client to a loopback
// server, with no observer, with the OpenTelemetry client observer
// recording metrics into the SDK (spans off: a no-op tracer), and with
// metrics and spans (the SDK's tracer, sampling every span, exporting
// none), all in one run:
//
//	go test -run '^$' -bench BenchmarkClient -benchmem ./otelidem/
func BenchmarkClient(b *testing.B) {
	srv := httptest.NewServer(benchHandler)
	defer srv.Close()
	newObserver := func(tp trace.TracerProvider) *idem.Observer {
		obs, err := otelidem.NewClientObserver(otelidem.Options{
			MeterProvider:  sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader())),
			TracerProvider: tp,
		})
		if err != nil {
			b.Fatal(err)
		}
		return obs
	}
	for _, o := range []struct {
		name string
		obs  *idem.Observer
	}{{"none", nil}, {"metrics", newObserver(noop.NewTracerProvider())}, {"metrics+spans", newObserver(sdktrace.NewTracerProvider())}} {
		b.Run(o.name, func(b *testing.B) {
			c, err := idem.New(idem.Options{Observer: o.obs})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				req, _ := http.NewRequest(http.MethodPost, srv.URL+"/charges", bytes.NewReader(benchPayload))
				req.Header.Set("Content-Type", "application/json")
				resp, err := c.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				if resp.StatusCode != http.StatusCreated {
					b.Fatalf("answered %d, not the handler's 201", resp.StatusCode)
				}
			}
		})
	}
}

// BenchmarkClientEvents measures the client observer alone, without the
// network: the events of one operation answered on its first attempt
// (start, attempt, end), and of one retry, with metrics only and with
// metrics and spans:
//
//	go test -run '^$' -bench BenchmarkClientEvents -benchmem ./otelidem/
func BenchmarkClientEvents(b *testing.B) {
	for _, tp := range []struct {
		name string
		tp   trace.TracerProvider
	}{{"metrics", noop.NewTracerProvider()}, {"metrics+spans", sdktrace.NewTracerProvider()}} {
		obs, err := otelidem.NewClientObserver(otelidem.Options{
			MeterProvider:  sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader())),
			TracerProvider: tp.tp,
		})
		if err != nil {
			b.Fatal(err)
		}
		start := idem.OperationStartInfo{Method: http.MethodPost, ServerAddress: "api.example.com"}
		attempt := idem.AttemptInfo{Method: http.MethodPost, N: 1, Sent: 1, StatusCode: http.StatusCreated}
		end := idem.OperationEndInfo{Method: http.MethodPost, ServerAddress: "api.example.com", Outcome: idem.OutcomeCompleted,
			StatusCode: http.StatusCreated, Attempts: 1, Duration: time.Millisecond}
		retry := idem.RetryInfo{Method: http.MethodPost, Attempt: 1, StatusCode: http.StatusServiceUnavailable, Delay: time.Millisecond}
		b.Run("operation/"+tp.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ctx := obs.OperationStart(b.Context(), start)
				obs.Attempt(ctx, attempt)
				obs.OperationEnd(ctx, end)
			}
		})
		b.Run("retry/"+tp.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				obs.Retry(b.Context(), retry)
			}
		})
	}
}
