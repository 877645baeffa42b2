package otelidem_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/idemhq/idem/otelidem"
	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/memstore"
)

// A charge sent twice with one key runs once and is replayed once; the
// server's requests counter says so.
func ExampleNewServerObserver() {
	reader := sdkmetric.NewManualReader() // a service would use a Prometheus or OTLP exporter
	obs, err := otelidem.NewServerObserver(otelidem.Options{
		MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
	})
	if err != nil {
		panic(err)
	}
	once := server.Middleware(memstore.New(memstore.Options{}), server.Options{SingleTenant: true, Observer: obs})
	mux := http.NewServeMux()
	mux.Handle("POST /charges", once(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
	})))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for range 2 {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/charges", strings.NewReader(`{"amount":1000}`))
		req.Header.Set("Idempotency-Key", "order-1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		panic(err)
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if m.Name != otelidem.ServerRequests {
			continue
		}
		for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
			result, _ := dp.Attributes.Value(otelidem.ResultKey)
			route, _ := dp.Attributes.Value("http.route")
			fmt.Printf("%s %s %s: %d\n", m.Name, route.AsString(), result.AsString(), dp.Value)
		}
	}
	// Unordered output:
	// idem.server.requests /charges executed: 1
	// idem.server.requests /charges replayed: 1
}
