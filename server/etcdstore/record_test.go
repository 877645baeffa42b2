package etcdstore

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/idemhq/idem/server"
)

func TestRecordRoundTrip(t *testing.T) {
	at := time.UnixMilli(1_760_000_000_123)
	cases := map[string]record{
		"running":                    {state: stateRunning, fingerprint: "fp", claimNonce: "N1", lapse: at},
		"running, empty fingerprint": {state: stateRunning, claimNonce: "N1", lapse: at},
		"completed": {state: stateCompleted, fingerprint: "fp", claimNonce: "N1", completeNonce: "N2", expires: at,
			resp: server.StoredResponse{Status: 201, Header: http.Header{"X-Multi": {"a", "", "c"}, "Location": {"/x"}}, Body: []byte{0, 1, 2, 255}}},
		"completed, empty": {state: stateCompleted, claimNonce: "N1", completeNonce: "N2", expires: at,
			resp: server.StoredResponse{Status: 204}},
	}
	for name, want := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := decodeRecord(want.encode())
			require.NoError(t, err)
			assert.Equal(t, want, *got)
		})
	}
}

func TestDecodeRecordRefuses(t *testing.T) {
	valid := (&record{state: stateCompleted, fingerprint: "fp", claimNonce: "N", completeNonce: "M", expires: time.UnixMilli(1),
		resp: server.StoredResponse{Status: 200, Header: http.Header{"A": {"b"}}, Body: []byte("body")}}).encode()
	cases := map[string][]byte{
		"empty":            nil,
		"other version":    append([]byte{2}, valid[1:]...),
		"unknown state":    {recordVersion, 'x', 0, 0},
		"trailing bytes":   append(append([]byte(nil), valid...), 0),
		"status 0":         (&record{state: stateCompleted, expires: time.UnixMilli(1)}).encode(),
		"header count lie": {recordVersion, 'c', 0, 0, 0, 2, 0xc8, 0x01, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"length past end":  {recordVersion, 'r', 0x7f, 'a'},
		"long-form varint": {recordVersion, 'r', 0x80, 0x00, 0, 0},
	}
	for i := 1; i < len(valid); i++ {
		cases[fmt.Sprintf("truncated to %d bytes", i)] = valid[:i]
	}
	for name, v := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := decodeRecord(v)
			assert.ErrorIs(t, err, errMalformed)
		})
	}
}

// FuzzDecodeRecord: decoding never panics, and what decodes encodes back
// to the same bytes when its header has one field at most (a map's order
// is not kept): a record has one encoding.
func FuzzDecodeRecord(f *testing.F) {
	f.Add((&record{state: stateRunning, fingerprint: "fp", claimNonce: "N", lapse: time.UnixMilli(5)}).encode())
	f.Add((&record{state: stateCompleted, fingerprint: "fp", claimNonce: "N", completeNonce: "M", expires: time.UnixMilli(5),
		resp: server.StoredResponse{Status: 201, Header: http.Header{"A": {"b", "c"}}, Body: []byte("x")}}).encode())
	f.Fuzz(func(t *testing.T, v []byte) {
		r, err := decodeRecord(v)
		if err != nil {
			return
		}
		if len(r.resp.Header) <= 1 {
			assert.Equal(t, v, r.encode())
		}
	})
}

func TestToken(t *testing.T) {
	tok := token{rev: 42, nonce: "ABC", fingerprint: "fp.with.dots"}
	got, ok := parseToken(tok.String())
	require.True(t, ok)
	assert.Equal(t, tok, got)
	for _, bad := range []string{"", "token", "not-42.ABC.fp", "42", "42.ABC", "42..fp", "0.ABC.fp", "-1.ABC.fp"} {
		_, ok := parseToken(bad)
		assert.False(t, ok, "%q", bad)
	}
}

func TestRecordKey(t *testing.T) {
	assert.Equal(t, "p/2:abkey", recordKey("p/", server.Key{Scope: "ab", Key: "key"}))
	assert.NotEqual(t, recordKey("p/", server.Key{Scope: "ab", Key: "c"}), recordKey("p/", server.Key{Scope: "a", Key: "bc"}))
}

func TestWindowFor(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	cases := []struct {
		name      string
		at        time.Time
		end, wide int64
	}{
		{"100 ms away: 1 s windows", now.Add(100 * time.Millisecond), 1_000_001, 1},
		{"a whole second is its own end", now.Add(time.Second), 1_000_001, 1},
		{"a minute away: 1 s windows", now.Add(time.Minute), 1_000_060, 1},
		{"an hour away: 64 s windows", now.Add(time.Hour), 1_003_648, 64},
		{"a day away: 2048 s windows", now.Add(24 * time.Hour), 1_087_488, 2048},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := windowFor(now, c.at)
			assert.Equal(t, window{end: c.end, width: c.wide}, w)
			assert.False(t, time.Unix(w.end, 0).Before(c.at), "the window ends before the expiry")
			assert.Zero(t, w.end%w.width, "windows are aligned")
		})
	}
}

func TestDecide(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	abandon := time.Hour
	kv := func(r record) *mvccpb.KeyValue {
		return &mvccpb.KeyValue{Key: []byte("k"), Value: r.encode(), ModRevision: 7}
	}
	running := func(fp string, lapse time.Duration) *mvccpb.KeyValue {
		return kv(record{state: stateRunning, fingerprint: fp, claimNonce: "N", lapse: now.Add(lapse)})
	}
	completed := func(expires time.Duration) *mvccpb.KeyValue {
		return kv(record{state: stateCompleted, fingerprint: "fp", claimNonce: "N", completeNonce: "M", expires: now.Add(expires), resp: server.StoredResponse{Status: 200}})
	}
	cases := []struct {
		name     string
		cur      *mvccpb.KeyValue
		fp       string
		report   bool
		takeover bool
	}{
		{"no record: claim", nil, "fp", false, false},
		{"completed, kept: report", completed(time.Second), "fp", true, false},
		{"completed, other fingerprint: report", completed(time.Second), "other", true, false},
		{"completed, retention over: claim afresh", completed(0), "other", false, false},
		{"running: report", running("fp", time.Second), "fp", true, false},
		{"running, lease lapses now: report", running("fp", 0), "fp", true, false},
		{"lapsed, same fingerprint: take over", running("fp", -time.Millisecond), "fp", false, true},
		{"lapsed, other fingerprint: report", running("fp", -time.Millisecond), "other", true, false},
		{"abandoned: claim afresh by anyone", running("fp", -abandon), "other", false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := decide(c.cur, c.fp, now, abandon)
			require.NoError(t, err)
			assert.Equal(t, c.report, d.report != nil, "report")
			assert.Equal(t, c.takeover, d.takeover, "takeover")
		})
	}
	_, err := decide(&mvccpb.KeyValue{Key: []byte("k"), Value: []byte("not a record")}, "fp", now, abandon)
	assert.ErrorIs(t, err, errMalformed, "a value the store cannot read is never overwritten")
}
