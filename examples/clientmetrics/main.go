// Command clientmetrics shows what the idem client reports, in the
// Prometheus text format. It starts the example charges service on
// loopback behind a proxy that resets connections, answers 503 and drops
// answers after the service acted, then sends -n charges through an idem
// client with a journal, whose observers (package otelidem) feed
// OpenTelemetry's Prometheus exporter, and prints the idem_client_ lines
// of the scrape:
//
//	go run ./examples/clientmetrics
//	go run ./examples/clientmetrics -serve 127.0.0.1:9464   # then keep serving /metrics
//
// A Prometheus server scrapes a client's /metrics as it does a service's:
// examples/charges/prometheus.yml names both.
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/idemhq/idem"
	"github.com/idemhq/idem/internal/charges"
	"github.com/idemhq/idem/internal/faultproxy"
	"github.com/idemhq/idem/otelidem"
)

func main() {
	n := flag.Int("n", 50, "charges to send")
	seed := flag.Uint64("seed", 1, "the proxy's faults")
	serve := flag.String("serve", "", "after the run, serve /metrics on this address until interrupted")
	flag.Parse()
	metrics, err := run(context.Background(), os.Stdout, *n, *seed)
	if err != nil {
		log.Fatal(err)
	}
	if *serve == "" {
		return
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics)
	log.Printf("clientmetrics: serving http://%s/metrics", *serve)
	srv := &http.Server{Addr: *serve, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.ListenAndServe())
}

// run sends n charges through a lossy proxy with an observed idem client,
// writes the client's lines of a scrape to out, and returns the handler
// that serves the scrape.
func run(ctx context.Context, out io.Writer, n int, seed uint64) (http.Handler, error) {
	svc, err := charges.New(ctx, charges.Config{})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: svc.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	proxy, err := faultproxy.Start(faultproxy.Config{
		Upstream: "http://" + ln.Addr().String(), Seed: seed,
		Reset: 0.1, Unavailable: 0.1, Drop: 0.1,
	})
	if err != nil {
		return nil, err
	}
	defer proxy.Close()

	// The client's instruments go to a registry of their own, read by
	// OpenTelemetry's Prometheus exporter.
	reg := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo())
	if err != nil {
		return nil, err
	}
	otelOpts := otelidem.Options{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))}
	obs, err := otelidem.NewClientObserver(otelOpts)
	if err != nil {
		return nil, err
	}
	jobs, err := otelidem.NewJournalObserver(otelOpts)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "clientmetrics")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	journal, err := idem.OpenJournal(filepath.Join(dir, "journal"), idem.JournalOptions{Observer: jobs})
	if err != nil {
		return nil, err
	}
	defer journal.Close() // after the Close below, a no-op
	client, err := idem.New(idem.Options{Journal: journal, Observer: obs, BaseDelay: time.Millisecond, MaxDelay: 10 * time.Millisecond, MaxAttempts: 10})
	if err != nil {
		return nil, err
	}

	for i := range n {
		body := fmt.Sprintf(`{"amount": %d, "currency": "usd"}`, 100+i)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, proxy.URL()+"/charges", strings.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("X-Client-Id", "acme")
		req.Header.Set("Content-Type", "application/json")
		if _, err := client.Do(req); err != nil {
			fmt.Fprintf(out, "# charge %d: %v\n", i, err)
		}
	}

	// Closing the journal commits the answers it writes lazily, so the
	// pending gauge is read after the last of them.
	if err := journal.Close(); err != nil {
		return nil, err
	}
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	rec := &scrape{header: http.Header{}}
	h.ServeHTTP(rec, httptest(ctx))
	sc := bufio.NewScanner(&rec.body)
	for sc.Scan() {
		if l := sc.Text(); strings.HasPrefix(l, "idem_client_") && !strings.Contains(l, "_bucket") {
			fmt.Fprintln(out, l)
		}
	}
	return h, sc.Err()
}

// scrape is the least http.ResponseWriter that keeps a scrape's body.
type scrape struct {
	header http.Header
	body   bytes.Buffer
}

func (s *scrape) Header() http.Header         { return s.header }
func (s *scrape) Write(b []byte) (int, error) { return s.body.Write(b) }
func (s *scrape) WriteHeader(int)             {}

func httptest(ctx context.Context) *http.Request {
	r, _ := http.NewRequestWithContext(ctx, http.MethodGet, "/metrics", nil)
	return r
}
