package webhook_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/webhook"
)

// The example delivery that Standard Webhooks publishes with its
// specification: a receiver that accepts it computes signatures as every
// other implementation does.
const (
	specSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	specID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	specTS     = "1614265330"
	specBody   = `{"test": 2432232314}`
	specSig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

var specTime = time.Unix(1614265330, 0)

func header(id, ts, sig string) http.Header {
	h := http.Header{}
	if id != "" {
		h.Set(webhook.HeaderID, id)
	}
	if ts != "" {
		h.Set(webhook.HeaderTimestamp, ts)
	}
	if sig != "" {
		h.Set(webhook.HeaderSignature, sig)
	}
	return h
}

func at(t time.Time) func() time.Time { return func() time.Time { return t } }

func TestVerify(t *testing.T) {
	t.Parallel()
	other, err := webhook.NewSigner("whsec_" + "c2Vjb25kIHNlY3JldCBvZiBhbm90aGVyIHNlbmRlcg==")
	require.NoError(t, err)
	otherSig := other.Signature(specID, specTime, []byte(specBody))
	tests := []struct {
		name string
		h    http.Header
		body string
		now  time.Time
		tol  time.Duration
		want error
	}{
		{"the specification's example", header(specID, specTS, specSig), specBody, specTime, 0, nil},
		{"one of several", header(specID, specTS, otherSig+" "+specSig), specBody, specTime, 0, nil},
		{"other versions skipped", header(specID, specTS, "v1a,AAAA "+specSig), specBody, specTime, 0, nil},
		{"extra spaces", header(specID, specTS, "  "+specSig+"  "), specBody, specTime, 0, nil},
		{"only other versions", header(specID, specTS, "v2,"+strings.TrimPrefix(specSig, "v1,")), specBody, specTime, 0, webhook.ErrSignature},
		{"body changed", header(specID, specTS, specSig), `{"test": 2432232315}`, specTime, 0, webhook.ErrSignature},
		{"body reformatted", header(specID, specTS, specSig), `{"test":2432232314}`, specTime, 0, webhook.ErrSignature},
		{"id changed", header("msg_other", specTS, specSig), specBody, specTime, 0, webhook.ErrSignature},
		{"timestamp changed", header(specID, "1614265331", specSig), specBody, specTime.Add(time.Second), 0, webhook.ErrSignature},
		{"another secret", header(specID, specTS, otherSig), specBody, specTime, 0, webhook.ErrSignature},
		{"not base64", header(specID, specTS, "v1,!!!!"+strings.Repeat("A", 40)), specBody, specTime, 0, webhook.ErrSignature},
		{"short", header(specID, specTS, "v1,AAAA"), specBody, specTime, 0, webhook.ErrSignature},
		{"no comma", header(specID, specTS, "v1"), specBody, specTime, 0, webhook.ErrSignature},
		{"unsigned and stale: the signature decides", header(specID, specTS, "v1,AAAA"), specBody, specTime.Add(time.Hour), 0, webhook.ErrSignature},
		{"tolerance, past edge", header(specID, specTS, specSig), specBody, specTime.Add(5 * time.Minute), 0, nil},
		{"tolerance, future edge", header(specID, specTS, specSig), specBody, specTime.Add(-5 * time.Minute), 0, nil},
		{"too old", header(specID, specTS, specSig), specBody, specTime.Add(5*time.Minute + time.Second), 0, webhook.ErrTooOld},
		{"too new", header(specID, specTS, specSig), specBody, specTime.Add(-5*time.Minute - time.Second), 0, webhook.ErrTooNew},
		{"tolerance set", header(specID, specTS, specSig), specBody, specTime.Add(2 * time.Minute), time.Minute, webhook.ErrTooOld},
		{"no id", header("", specTS, specSig), specBody, specTime, 0, webhook.ErrMissingHeader},
		{"no timestamp", header(specID, "", specSig), specBody, specTime, 0, webhook.ErrMissingHeader},
		{"no signature", header(specID, specTS, ""), specBody, specTime, 0, webhook.ErrMissingHeader},
		{"negative timestamp", header(specID, "-1614265330", specSig), specBody, specTime, 0, webhook.ErrMalformedHeader},
		{"fractional timestamp", header(specID, specTS+".5", specSig), specBody, specTime, 0, webhook.ErrMalformedHeader},
		{"huge timestamp", header(specID, "99999999999999999999", specSig), specBody, specTime, 0, webhook.ErrMalformedHeader},
		{"id with a comma", header("msg,1", specTS, specSig), specBody, specTime, 0, webhook.ErrMalformedHeader},
		{"id quoted", header(`"msg"`, specTS, specSig), specBody, specTime, 0, webhook.ErrMalformedHeader},
		{"id not ASCII", header("msg_é", specTS, specSig), specBody, specTime, 0, webhook.ErrMalformedHeader},
		{"id too long", header(strings.Repeat("m", 256), specTS, specSig), specBody, specTime, 0, webhook.ErrMalformedHeader},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v, err := webhook.NewVerifier(specSecret, webhook.VerifyOptions{Now: at(tt.now), Tolerance: tt.tol})
			require.NoError(t, err)
			m, err := v.Verify(tt.h, []byte(tt.body))
			if tt.want != nil {
				require.ErrorIs(t, err, tt.want)
				for _, other := range []error{webhook.ErrSignature, webhook.ErrTooOld, webhook.ErrTooNew, webhook.ErrMissingHeader, webhook.ErrMalformedHeader} {
					if other != tt.want {
						assert.NotErrorIs(t, err, other, "one condition per error")
					}
				}
				assert.Zero(t, m)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.h.Get(webhook.HeaderID), m.ID)
			assert.Equal(t, specTime, m.Timestamp)
			assert.Equal(t, tt.body, string(m.Body))
		})
	}
}

func TestSecret(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "whsec_", "whsec_not base64!", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS"} {
		_, err := webhook.NewVerifier(s, webhook.VerifyOptions{})
		require.ErrorIs(t, err, webhook.ErrSecret, "%q", s)
		if len(s) > len("whsec_") {
			assert.NotContains(t, err.Error(), s[len("whsec_"):], "the error never quotes the secret")
		}
		_, err = webhook.NewSigner(s)
		require.ErrorIs(t, err, webhook.ErrSecret, "%q", s)
	}
	// The base64 alone is the same secret.
	v, err := webhook.NewVerifier(strings.TrimPrefix(specSecret, "whsec_"), webhook.VerifyOptions{Now: at(specTime)})
	require.NoError(t, err)
	_, err = v.Verify(header(specID, specTS, specSig), []byte(specBody))
	require.NoError(t, err)
}

// TestSign: the Signer's deliveries verify, and match the specification's
// example.
func TestSign(t *testing.T) {
	t.Parallel()
	s, err := webhook.NewSigner(specSecret)
	require.NoError(t, err)
	assert.Equal(t, specSig, s.Signature(specID, specTime.Add(900*time.Millisecond), []byte(specBody)), "the fraction of a second is not sent")
	h := http.Header{}
	s.Sign(h, specID, specTime, []byte(specBody))
	assert.Equal(t, specID, h.Get(webhook.HeaderID))
	assert.Equal(t, specTS, h.Get(webhook.HeaderTimestamp))
	assert.Equal(t, specSig, h.Get(webhook.HeaderSignature))

	v, err := webhook.NewVerifier(specSecret, webhook.VerifyOptions{Now: at(specTime)})
	require.NoError(t, err)
	_, err = v.Verify(h, []byte(specBody))
	require.NoError(t, err)
}

// FuzzVerify: Verify never panics, and accepts a delivery only if its
// signature field holds the delivery's own v1 signature.
func FuzzVerify(f *testing.F) {
	f.Add(specID, specTS, specSig, []byte(specBody))
	f.Add(specID, specTS, "v1a,xyz "+specSig+" v1,", []byte(specBody))
	f.Add("msg,1", "0", "v1,=", []byte{})
	s, err := webhook.NewSigner(specSecret)
	if err != nil {
		f.Fatal(err)
	}
	v, err := webhook.NewVerifier(specSecret, webhook.VerifyOptions{Now: at(specTime), Tolerance: 1 << 62})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, id, ts, sig string, body []byte) {
		h := http.Header{webhook.HeaderID: {id}, webhook.HeaderTimestamp: {ts}, webhook.HeaderSignature: {sig}}
		m, err := v.Verify(h, body)
		if err != nil {
			return
		}
		if m.ID != id {
			t.Fatalf("verified %q as %q", id, m.ID)
		}
		want := s.Signature(id, m.Timestamp, body)
		if !strings.Contains(" "+sig+" ", want) {
			t.Fatalf("verified %q without its signature %s", sig, want)
		}
	})
}
