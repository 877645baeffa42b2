// This file tests which request headers the journal keeps: credentials
// never, by name or by list, down to the bytes of the file.

package idem

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHeadersThatLookLikeCredentials(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"X-Api-Key": true, "Api-Key": true, "Apikey": true, "X-API-KEY": true, "Ocp-Apim-Subscription-Key": true,
		"X-Auth-Token": true, "Authentication": true, "X-Amz-Security-Token": true, "X-Csrf-Token": true,
		"X-Hub-Signature-256": true, "Stripe-Signature": true, "X-Session-Id": true, "X-Client-Secret": true,
		"X-Password": true, "X-Jwt-Assertion": true, "X-Shopify-Hmac-Sha256": true, "X-Xsrf-Token": true,
		"X-Api-Pass": true, "X-Pwd": true, "X-Sig": true, "X-Otp": true, "X-Pin": true, "X-Passcode": true,
		"Dd-Application-Key": true, "X-Access-Key": true, "Private-Token": true, "Key": true, "Set-Cookie": true,
		"X-Subject-Token": true, "XApiKey": true, "apiKey": true, "access_token": true, "client_secret": true,
		"X-Amz-Signature": true, "X-Amz-Credential": true, "Sig": true,
		"Content-Type": false, "Accept": false, "User-Agent": false, "X-Request-Id": false,
		"Stripe-Version": false, "X-Trace": false, "Content-Length": false,
		"X-Partition-Key": false, "X-Author": false, "X-Routing-Key": false, "Cache-Key": false,
		"X-Signal": false, "X-Pinned": false, "X-Passenger": false, "X-Monkey": false, "X-Keyword": false,
	} {
		assert.Equal(t, want, looksLikeCredential(name), name)
	}
}

func TestHeaderRule(t *testing.T) {
	t.Parallel()
	h := http.Header{
		"Authorization":     {"Bearer a"},
		"Cookie":            {"s=1"},
		"Idempotency-Key":   {"k"},
		"X-Api-Key":         {"key-value"},
		"X-Internal-Tenant": {"t1"},
		"Content-Type":      {"application/json"},
		"X-Trace":           {"tr"},
	}
	cases := []struct {
		name string
		opts Options
		kept []string
	}{
		{"default", Options{}, []string{"Content-Type", "X-Internal-Tenant", "X-Trace"}},
		{"SecretHeaders", Options{SecretHeaders: []string{"x-internal-tenant"}}, []string{"Content-Type", "X-Trace"}},
		{"JournalHeaders", Options{JournalHeaders: []string{"content-type", "X-Api-Key"}}, []string{"Content-Type", "X-Api-Key"}},
		{"JournalHeaders without Content-Type", Options{JournalHeaders: []string{"X-Trace"}}, []string{"Content-Type", "X-Trace"}},
	}
	for _, tc := range cases {
		c := newClient(t, tc.opts)
		var kept []string
		for k := range c.secrets.safeHeader(h) {
			kept = append(kept, k)
		}
		assert.ElementsMatch(t, tc.kept, kept, tc.name)
	}
	for name, o := range map[string]Options{
		"Authorization listed":   {JournalHeaders: []string{"authorization"}},
		"the key header listed":  {JournalHeaders: []string{"Idempotency-Key"}},
		"a secret header listed": {JournalHeaders: []string{"X-Tenant"}, SecretHeaders: []string{"x-tenant"}},
	} {
		_, err := New(o)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "Options.JournalHeaders", name)
	}
	_, err := New(Options{SecretHeaders: []string{"content-type"}})
	require.Error(t, err, "Content-Type is always journaled")
	assert.Contains(t, err.Error(), "Options.SecretHeaders")
}

// TestResumeWithJournalHeaders: with a JournalHeaders list that leaves
// Content-Type out, a JSON operation resumed after a restart is the same
// request: it goes out with its Content-Type, and is not refused as key
// reuse (its fingerprint is the record's, not one taken again from the
// journaled header). A record an earlier release wrote without the
// Content-Type resumes too.
func TestResumeWithJournalHeaders(t *testing.T) {
	t.Parallel()
	for _, earlier := range []bool{false, true} {
		s, up := downUntilUp(t)
		path := filepath.Join(t.TempDir(), "j")
		j, err := OpenJournal(path, JournalOptions{})
		require.NoError(t, err)
		o := Options{Journal: j, MaxAttempts: 1, ResumeJitter: -1, JournalHeaders: []string{"X-Request-Source"}}
		req := post(t, s.srv.URL, `{"amount": 5}`)
		req.Header.Set("X-Request-Source", "batch")
		_, err = newClient(t, o).Do(req)
		require.ErrorIs(t, err, ErrRetriesExhausted)
		k := s.seen()[0].Key
		if earlier {
			op, _, err := j.Lookup(k)
			require.NoError(t, err)
			require.Equal(t, "application/json", op.Header.Get("Content-Type"), "journaled whatever the list says")
			op.Header.Del("Content-Type")
			require.NoError(t, j.updateNow(op))
		}
		require.NoError(t, j.Close())

		up.Store(true)
		o.Journal = openJournal(t, path)
		res, err := newClient(t, o).Resume(context.Background())
		require.NoError(t, err)
		require.Len(t, res, 1)
		require.NoError(t, res[0].Err, "earlier %v: the resumed operation is its own request", earlier)
		resent := s.seen()[1]
		assert.Equal(t, k, resent.Key)
		assert.Equal(t, `{"amount": 5}`, string(resent.Body))
		assert.Equal(t, "batch", resent.Header.Get("X-Request-Source"))
		if !earlier {
			assert.Equal(t, "application/json", resent.Header.Get("Content-Type"), "the body's media type goes with it")
		}
	}
}

// TestResumeKeepsDataKeyHeaders: headers whose names only look like
// credentials to a substring match (X-Partition-Key, X-Author) are
// journaled, and a resumed operation goes out with them.
func TestResumeKeepsDataKeyHeaders(t *testing.T) {
	t.Parallel()
	s, up := downUntilUp(t)
	path := filepath.Join(t.TempDir(), "j")
	j, err := OpenJournal(path, JournalOptions{})
	require.NoError(t, err)
	req := post(t, s.srv.URL, `{"amount":5}`)
	req.Header.Set("X-Partition-Key", "tenant-7")
	req.Header.Set("X-Author", "alice")
	req.Header.Set("X-Api-Pass", "hunter2")
	_, err = newClient(t, quickOptions(Options{Journal: j, MaxAttempts: 1})).Do(req)
	require.ErrorIs(t, err, ErrRetriesExhausted)
	require.NoError(t, j.Close())

	up.Store(true)
	res, err := newClient(t, Options{Journal: openJournal(t, path), ResumeJitter: -1}).Resume(context.Background())
	require.NoError(t, err)
	require.Len(t, res, 1)
	require.NoError(t, res[0].Err)
	resent := s.seen()[1].Header
	assert.Equal(t, "tenant-7", resent.Get("X-Partition-Key"))
	assert.Equal(t, "alice", resent.Get("X-Author"))
	assert.Empty(t, resent.Get("X-Api-Pass"), "a credential is not journaled")
}

// TestJournalHoldsNoAPIKey: a journal written with an X-Api-Key header
// holds no byte of its value; the header goes on the wire on every
// attempt, and PrepareRequest puts it back on a resumed operation.
func TestJournalHoldsNoAPIKey(t *testing.T) {
	t.Parallel()
	const apiKey = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"
	s := newScripted(t, statuses(503, 503, 201))
	j := openJournal(t, "")
	c := newClient(t, quickOptions(Options{Journal: j, MaxAttempts: 2}))
	req := post(t, s.srv.URL, `{"amount":5}`)
	req.Header.Set("X-Api-Key", apiKey)
	req.Header.Set("X-Trace", "kept-header-value")
	_, err := c.Do(req)
	require.ErrorIs(t, err, ErrRetriesExhausted, "left pending")
	for _, r := range s.seen() {
		assert.Equal(t, apiKey, r.Header.Get("X-Api-Key"), "the header is sent on every attempt")
	}
	path := j.Path()
	require.NoError(t, j.Close())
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, string(raw), "kept-header-value", "the file is readable as written")
	// No byte of the value: not whole, and not in any piece of 4 bytes.
	for i := 0; i+4 <= len(apiKey); i++ {
		require.NotContains(t, string(raw), apiKey[i:i+4], "a piece of the API key is in the file")
	}

	c = newClient(t, Options{Journal: openJournal(t, path), ResumeJitter: -1, PrepareRequest: func(r *http.Request) error {
		r.Header.Set("X-Api-Key", apiKey)
		return nil
	}})
	res, err := c.Resume(context.Background())
	require.NoError(t, err)
	require.Len(t, res, 1)
	require.NoError(t, res[0].Err)
	assert.Equal(t, apiKey, s.seen()[2].Header.Get("X-Api-Key"), "PrepareRequest re-applies it")
	assert.Equal(t, "kept-header-value", s.seen()[2].Header.Get("X-Trace"))
}

func TestRedactQuery(t *testing.T) {
	t.Parallel()
	rule, err := newSecretRule(&Options{Header: "Idempotency-Key", SecretQueryParams: []string{"Tenant_Pass"}})
	require.NoError(t, err)
	for in, want := range map[string]string{
		"":                                   "",
		"amount=5&currency=usd":              "amount=5&currency=usd",
		"api_key=sk_1&amount=5":              "api_key=&amount=5",
		"amount=5&access_token=t&apiKey=k":   "amount=5&access_token=&apiKey=",
		"token=a&token=b&x=%20":              "token=&token=&x=%20",
		"api%5Fkey=sk_1":                     "api%5Fkey=",
		"X-Amz-Signature=ab&X-Amz-Date=2026": "X-Amz-Signature=&X-Amz-Date=2026",
		"tenant_pass=p&monkey=1&author=a":    "tenant_pass=&monkey=1&author=a",
		"sig":                                "sig",
		"key=1&partition_key=2":              "key=&partition_key=2",
	} {
		got, _ := rule.redactQuery(in)
		assert.Equal(t, want, got, in)
	}
}

// TestJournalHoldsNoURLOrResponseCredentials: a credential in the URL's
// query and one in a response header reach neither the journal's file,
// nor an Error, nor the log; the request goes out with its query whole,
// a resumed one with what PrepareRequest puts back, and an answer from the
// journal carries the response's other headers.
func TestJournalHoldsNoURLOrResponseCredentials(t *testing.T) {
	t.Parallel()
	const querySecret, respSecret = "QUERY-SECRET-1234", "RESP-SECRET-5678"
	s := newScripted(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n < 2 {
			w.WriteHeader(503)
			return
		}
		w.Header().Set("X-Subject-Token", respSecret)
		w.Header().Set("Set-Cookie", "session="+respSecret)
		w.Header().Set("X-Charge-Id", "ch_1")
		w.WriteHeader(201)
	})
	path := filepath.Join(t.TempDir(), "j")
	j, err := OpenJournal(path, JournalOptions{})
	require.NoError(t, err)
	var logs bytes.Buffer
	o := quickOptions(Options{Journal: j, MaxAttempts: 2, Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	req := post(t, s.srv.URL+"/v1/charges?api_key="+querySecret+"&amount=5", `{}`)
	req.Header.Set("Idempotency-Key", "k1")
	_, err = newClient(t, o).Do(req)
	require.ErrorIs(t, err, ErrRetriesExhausted)
	assert.NotContains(t, err.Error(), querySecret)
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, s.srv.URL+"/v1/charges?api_key=&amount=5", e.URL)
	assert.NotContains(t, logs.String(), querySecret)
	for _, r := range s.seen() {
		assert.Equal(t, querySecret, r.Query.Get("api_key"), "the live request goes out whole")
	}
	require.NoError(t, j.Close())

	o.Journal = openJournal(t, path)
	o.ResumeJitter = -1
	o.PrepareRequest = func(r *http.Request) error {
		q := r.URL.Query()
		q.Set("api_key", querySecret)
		r.URL.RawQuery = q.Encode()
		return nil
	}
	c := newClient(t, o)
	res, err := c.Resume(context.Background())
	require.NoError(t, err)
	require.Len(t, res, 1)
	require.NoError(t, res[0].Err)
	assert.Equal(t, respSecret, res[0].Response.Header.Get("X-Subject-Token"), "the caller gets the answer whole")
	resumed := s.seen()[2]
	assert.Equal(t, querySecret, resumed.Query.Get("api_key"), "PrepareRequest put it back")
	assert.Equal(t, "5", resumed.Query.Get("amount"))

	again := post(t, s.srv.URL+"/v1/charges?api_key="+querySecret+"&amount=5", `{}`)
	again.Header.Set("Idempotency-Key", "k1")
	resp, err := c.Do(again)
	require.NoError(t, err)
	require.True(t, resp.FromJournal)
	assert.Equal(t, "ch_1", resp.Header.Get("X-Charge-Id"))
	assert.Empty(t, resp.Header.Get("X-Subject-Token"))
	assert.Empty(t, resp.Header.Get("Set-Cookie"))
	require.NoError(t, o.Journal.Close())
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.False(t, bytes.Contains(raw, []byte(querySecret)), "the query's credential is in the journal")
	assert.False(t, bytes.Contains(raw, []byte(respSecret)), "the response's credential is in the journal")
}

// TestSecretQueryInEarlierJournals: an operation journaled, by an earlier
// release, with a credential in its URL's query is the same request as
// the call that continues it now.
func TestSecretQueryInEarlierJournals(t *testing.T) {
	t.Parallel()
	s := newScripted(t, statuses(201))
	j := openJournal(t, "")
	u := s.srv.URL + "/v1/charges?api_key=sk_1&amount=5"
	now := time.Now()
	op := &Operation{Key: "k-earlier", Method: http.MethodPost, URL: u, Header: http.Header{"Content-Type": {"application/json"}},
		Body: []byte(`{"a":1}`), Fingerprint: fingerprint(http.MethodPost, u, "application/json", []byte(`{"a":1}`)),
		State: Pending, CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(time.Hour)}
	_, err := j.begin(op)
	require.NoError(t, err)
	req := post(t, u, `{"a":1}`)
	req.Header.Set("Idempotency-Key", "k-earlier")
	resp, err := newClient(t, Options{Journal: j}).Do(req)
	require.NoError(t, err, "not key reuse")
	assert.Equal(t, 201, resp.StatusCode)
}
