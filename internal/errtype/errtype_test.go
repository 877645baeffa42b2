package errtype

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"testing"
)

type custom struct{}

func (custom) Error() string { return "custom" }

func TestName(t *testing.T) {
	op := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("refused")}
	cases := []struct {
		err  error
		want string
	}{
		{nil, ""},
		{errors.New("text only"), Other},
		{fmt.Errorf("wrapped: %w", errors.New("text")), Other},
		{errors.Join(errors.New("a"), errors.New("b")), Other},
		{op, "*net.OpError"},
		{fmt.Errorf("call: %w", &url.Error{Op: "Post", URL: "http://x", Err: op}), "*net.OpError"},
		{fmt.Errorf("store: %w", custom{}), "errtype.custom"},
	}
	for _, c := range cases {
		if got := Name(c.err); got != c.want {
			t.Errorf("Name(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}
