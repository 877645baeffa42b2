package natsidem_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/memstore"
	"github.com/idemhq/idem/server/pgstore"
)

// fakeMsg is a jetstream.Msg that records how it was settled.
type fakeMsg struct {
	subject string
	data    []byte
	header  nats.Header
	meta    *jetstream.MsgMetadata // nil: not a JetStream message

	mu      sync.Mutex
	settled []string
	delay   time.Duration
}

func newFakeMsg(stream string, seq uint64, id, data string) *fakeMsg {
	m := &fakeMsg{subject: "orders.created", data: []byte(data), header: nats.Header{},
		meta: &jetstream.MsgMetadata{Stream: stream, Sequence: jetstream.SequencePair{Stream: seq, Consumer: seq}, NumDelivered: 1}}
	if id != "" {
		m.header.Set(jetstream.MsgIDHeader, id)
	}
	return m
}

func (m *fakeMsg) Metadata() (*jetstream.MsgMetadata, error) {
	if m.meta == nil {
		return nil, errors.New("message is not bound to a JetStream subscription")
	}
	c := *m.meta
	return &c, nil
}
func (m *fakeMsg) Data() []byte         { return m.data }
func (m *fakeMsg) Headers() nats.Header { return m.header }
func (m *fakeMsg) Subject() string      { return m.subject }
func (m *fakeMsg) Reply() string        { return "" }

func (m *fakeMsg) record(s string, d time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.meta == nil {
		return jetstream.ErrMsgNotBound
	}
	m.settled = append(m.settled, s)
	m.delay = d
	return nil
}

func (m *fakeMsg) Ack() error                         { return m.record("ack", 0) }
func (m *fakeMsg) DoubleAck(context.Context) error    { return m.record("ack", 0) }
func (m *fakeMsg) Nak() error                         { return m.record("nak", 0) }
func (m *fakeMsg) NakWithDelay(d time.Duration) error { return m.record("nak", d) }
func (m *fakeMsg) InProgress() error                  { return nil }
func (m *fakeMsg) Term() error                        { return m.record("term", 0) }
func (m *fakeMsg) TermWithReason(string) error        { return m.record("term", 0) }

func (m *fakeMsg) settlements() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.settled...)
}

// target is a NATS server the integration tests run on.
type target struct {
	name, url string
}

// targets returns the servers to test on: a current NATS Server embedded
// in the test, always, and the one IDEM_TEST_NATS names (the machine's
// NATS Server 2.9, say), when it is set. Under CI=true an unset
// IDEM_TEST_NATS fails the run, so the older server is never skipped
// there by accident.
func targets(t *testing.T) []target {
	t.Helper()
	ts := []target{{"embedded " + natsserver.VERSION, embedded(t)}}
	if u := os.Getenv("IDEM_TEST_NATS"); u != "" {
		ts = append(ts, target{"IDEM_TEST_NATS", u})
	} else if os.Getenv("CI") == "true" {
		t.Fatal("IDEM_TEST_NATS is not set under CI=true")
	} else {
		t.Log("IDEM_TEST_NATS not set: testing on the embedded server only")
	}
	return ts
}

var (
	embedOnce sync.Once
	embedURL  string
	embedErr  error
)

// embedded returns the URL of a JetStream server run in this test
// process, started once for all tests, on a free loopback port.
func embedded(t testing.TB) string {
	t.Helper()
	url, err := embeddedURL()
	require.NoError(t, err)
	return url
}

func embeddedURL() (string, error) {
	embedOnce.Do(func() {
		dir, err := os.MkdirTemp("", "natsidem-js-")
		if err != nil {
			embedErr = err
			return
		}
		s, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true})
		if err != nil {
			embedErr = err
			return
		}
		go s.Start()
		if !s.ReadyForConnections(30 * time.Second) {
			embedErr = errors.New("embedded NATS server not ready")
			return
		}
		embedURL = s.ClientURL()
	})
	return embedURL, embedErr
}

var uniq atomic.Int64

// stream connects to url and creates a stream of its own, with a subject
// space of its own and a durable pull consumer with ackWait; both go when
// the test ends.
func stream(t testing.TB, url string, ackWait time.Duration) (jetstream.JetStream, jetstream.Consumer, string) {
	t.Helper()
	nc, err := nats.Connect(url)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	ctx := context.Background()
	name := fmt.Sprintf("NATSIDEM_TEST_%d_%d", os.Getpid(), uniq.Add(1))
	subject := "natsidem-test." + name
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{subject + ".>"}, Storage: jetstream.MemoryStorage})
	require.NoError(t, err)
	t.Cleanup(func() { _ = js.DeleteStream(context.Background(), name) })
	cons, err := js.CreateOrUpdateConsumer(ctx, name, jetstream.ConsumerConfig{
		Durable: "worker", AckPolicy: jetstream.AckExplicitPolicy, AckWait: ackWait, MaxAckPending: 64,
	})
	require.NoError(t, err)
	return js, cons, subject
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// database returns IDEM_TEST_DATABASE, or skips the test when it is unset;
// under CI=true an unset one fails it.
func database(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv("IDEM_TEST_DATABASE")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("IDEM_TEST_DATABASE is not set and CI=true: the PostgreSQL tests must run")
		}
		t.Skip("set IDEM_TEST_DATABASE, e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable")
	}
	return dsn
}

// pgStore returns a pool on IDEM_TEST_DATABASE and a transactional
// pgstore on a table of its own; the table is dropped when the test ends.
func pgStore(t testing.TB) (*pgxpool.Pool, *pgstore.Store) {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, database(t))
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	table := fmt.Sprintf("natsidem_test_%d_%d", os.Getpid(), uniq.Add(1))
	store, err := pgstore.New(pool, pgstore.Options{Table: table, Transactional: true})
	require.NoError(t, err)
	t.Cleanup(func() {
		store.Close()
		_, _ = pool.Exec(context.Background(), "DROP TABLE IF EXISTS "+pgx.Identifier{table}.Sanitize())
	})
	require.NoError(t, store.Migrate(ctx))
	return pool, store
}

// stores returns the stores the integration tests run on: memstore
// always, and transactional pgstore with IDEM_TEST_DATABASE.
func stores(t *testing.T) map[string]func(*testing.T) server.Store {
	t.Helper()
	m := map[string]func(*testing.T) server.Store{
		"memstore": func(*testing.T) server.Store { return memstore.New(memstore.Options{}) },
	}
	if os.Getenv("IDEM_TEST_DATABASE") != "" || os.Getenv("CI") == "true" {
		m["pgstore"] = func(t *testing.T) server.Store { _, s := pgStore(t); return s }
	}
	return m
}
