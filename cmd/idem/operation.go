package main

import (
	"encoding/hex"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/idemhq/idem"
)

// operationJSON is a journaled operation in --json output.
type operationJSON struct {
	Key         string      `json:"key"`
	Name        string      `json:"name,omitempty"`
	Method      string      `json:"method"`
	URL         string      `json:"url"`
	Host        string      `json:"host,omitempty"`
	State       string      `json:"state"`
	CreatedAt   time.Time   `json:"created_at"`
	UpdatedAt   time.Time   `json:"updated_at"`
	ExpiresAt   time.Time   `json:"expires_at"`
	Attempts    *int        `json:"attempts,omitempty"` // nil: not counted (see attempts)
	LastStatus  int         `json:"last_status,omitempty"`
	Fingerprint string      `json:"fingerprint,omitempty"`
	Header      http.Header `json:"header,omitempty"`
	Body        *string     `json:"body,omitempty"`
	BodyBase64  []byte      `json:"body_base64,omitempty"`
	Result      *resultJSON `json:"result,omitempty"`
}

// resultJSON is an operation's final answer in --json output.
type resultJSON struct {
	Status     int         `json:"status"`
	Replayed   bool        `json:"replayed"`
	Truncated  bool        `json:"truncated"`
	Header     http.Header `json:"header,omitempty"`
	Body       *string     `json:"body,omitempty"`
	BodyBase64 []byte      `json:"body_base64,omitempty"`
}

// operationToJSON converts op; full adds the headers, bodies and answer.
func operationToJSON(op *idem.Operation, full bool) operationJSON {
	o := operationJSON{
		Key: op.Key, Name: op.Name, Method: op.Method, URL: op.URL, Host: op.Host,
		State: stateOf(op), CreatedAt: op.CreatedAt, UpdatedAt: op.UpdatedAt, ExpiresAt: op.ExpiresAt,
	}
	if n, ok := attempts(op); ok {
		o.Attempts = &n
	}
	if op.Response != nil {
		o.LastStatus = op.Response.StatusCode
	}
	if !full {
		return o
	}
	o.Fingerprint = hex.EncodeToString(op.Fingerprint[:])
	o.Header = op.Header
	o.Body, o.BodyBase64 = textOrBytes(op.Body)
	if r := op.Response; r != nil {
		o.Result = &resultJSON{Status: r.StatusCode, Replayed: r.Replayed, Truncated: r.Truncated, Header: r.Header}
		o.Result.Body, o.Result.BodyBase64 = textOrBytes(r.Body)
	}
	return o
}

// attempts returns how many attempts op took, if the journal knows: it
// counts them with the final answer (or refusal), and holds no count for
// an operation without one.
func attempts(op *idem.Operation) (int, bool) {
	return op.Attempts, op.Response != nil
}

// textOrBytes returns b as a string if it is UTF-8, else as bytes (which
// encoding/json writes in base64). Both are nil for an empty b.
func textOrBytes(b []byte) (*string, []byte) {
	if len(b) == 0 {
		return nil, nil
	}
	if utf8.Valid(b) {
		s := string(b)
		return &s, nil
	}
	return nil, b
}
