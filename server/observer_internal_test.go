package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
)

// codeError is a store error type of its own, as a value.
type codeError struct{ code string }

func (e codeError) Error() string { return "code " + e.code }

func TestErrorType(t *testing.T) {
	t.Parallel()
	opErr := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("secret-host refused")}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"lease lost", fmt.Errorf("store: renew: %w", ErrLeaseLost), "lease_lost"},
		{"full", fmt.Errorf("teststore: store full: %w", ErrStoreFull), "store_full"},
		{"deadline", fmt.Errorf("store: %w", context.DeadlineExceeded), "timeout"},
		{"cancelled", context.Canceled, "canceled"},
		{"typed, wrapped", fmt.Errorf("store: claim: %w", opErr), "*net.OpError"},
		{"value type", codeError{"secret"}, "server.codeError"},
		{"joined", errors.Join(errors.New("a"), codeError{"b"}), "_OTHER"},
		{"text only", fmt.Errorf("store: %w", errors.New("secret detail")), "_OTHER"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, errorType(tt.err), tt.name)
		assert.NotContains(t, errorType(tt.err), "secret", tt.name)
	}
}

func TestRoute(t *testing.T) {
	t.Parallel()
	for pattern, want := range map[string]string{
		"":                          "",
		"/":                         "/",
		"/charges/{id}":             "/charges/{id}",
		"POST /charges/{id}":        "/charges/{id}",
		"POST\t  example.com/x/{$}": "example.com/x/{$}",
		"example.com/":              "example.com/",
	} {
		assert.Equal(t, want, route(pattern), "%q", pattern)
	}
}
