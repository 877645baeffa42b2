package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/idemhq/idem/internal/charges"
	"github.com/idemhq/idem/internal/faultproxy"
	"github.com/idemhq/idem/otelidem"
)

// withMetrics gives cfg's middleware otelidem's observer, whose
// instruments a manual reader collects, and returns the reader.
func withMetrics(cfg *charges.Config) (*sdkmetric.ManualReader, error) {
	reader := sdkmetric.NewManualReader()
	obs, err := otelidem.NewServerObserver(otelidem.Options{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	if err != nil {
		return nil, err
	}
	cfg.Observer = obs
	return reader, nil
}

// requestsByResult reads idem.server.requests from reader, summed by
// idem.result.
func requestsByResult(ctx context.Context, reader *sdkmetric.ManualReader) (map[string]int64, error) {
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			sum, ok := m.Data.(metricdata.Sum[int64])
			if m.Name != otelidem.ServerRequests || !ok {
				continue
			}
			for _, dp := range sum.DataPoints {
				v, _ := dp.Attributes.Value("idem.result")
				out[v.AsString()] += dp.Value
			}
		}
	}
	return out, nil
}

// printServerCounts writes what the service's metrics say it did, beside
// what the proxy saw of its replays.
func printServerCounts(ctx context.Context, reader *sdkmetric.ManualReader, st faultproxy.Stats) {
	byResult, err := requestsByResult(ctx, reader)
	check(err)
	var parts []string
	for _, r := range slices.Sorted(maps.Keys(byResult)) {
		parts = append(parts, fmt.Sprintf("%s %d", r, byResult[r]))
	}
	fmt.Printf("\nThe service's own count (idem.server.requests, through otelidem): %s.\n", strings.Join(parts, ", "))
	fmt.Printf("Of its %d replays, the proxy passed %d on and dropped %d.\n", byResult["replayed"], st.Replayed, st.DroppedReplayed)
}
