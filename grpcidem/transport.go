// This file holds Transport: the http.RoundTripper under idem's client
// that makes the requests the client interceptor builds for gRPC calls as
// gRPC calls, so that idem's retry rules, budget, journal, observer and
// Resume serve gRPC calls as they serve HTTP requests.

package grpcidem

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	spb "google.golang.org/genproto/googleapis/rpc/status"

	"github.com/idemhq/idem"
)

// Scheme is the URL scheme of the requests that stand for gRPC calls in
// idem's client and its journal: "grpc:///package.Service/Method", with
// the call's target (as given to grpc.NewClient) as the request's Host.
const Scheme = "grpc"

// The response headers through which Transport hands a call's answer to
// idem's client. Every answer's HTTP status is 200 but for the codes idem
// retries (see statusFor), as a gRPC answer's own HTTP/2 status is; its
// gRPC code is StatusHeader, and the body is the reply's protobuf
// encoding (code OK) or the encoded google.rpc.Status with its details.
const (
	// StatusHeader holds the answer's gRPC code, in decimal.
	StatusHeader = "Grpc-Status"
)

// The Content-Type of the requests that stand for gRPC calls, and its
// parameter that marks a call whose key travels in a request field: the
// metadata key it names is not sent, though idem's client sets it.
// Content-Type is the header the journal always keeps (a credential-like
// header name, or one JournalHeaders does not list, would be withheld),
// so a resumed call keeps the mark; gRPC sets its own content-type, so it
// is never metadata.
const (
	contentType     = "application/grpc"
	keyInFieldParam = "idem-key-in-field"
)

// keyInField returns the metadata key that a request's Content-Type says
// is not sent (the key travels in a field), or "".
func keyInField(h http.Header) string {
	typ, params, err := mime.ParseMediaType(h.Get("Content-Type"))
	if err != nil || typ != contentType {
		return ""
	}
	return strings.ToLower(params[keyInFieldParam])
}

// ErrNoConn is the error of a journaled call, resumed, whose target has no
// connection registered with [Transport.Register]. The call stays pending;
// register the connection and resume again.
var ErrNoConn = errors.New("grpcidem: no connection registered for the call's target")

// ErrNotGRPCTransport is the error of a call made through an idem.Client
// whose Options.Transport is not a [*Transport]: nothing was sent.
var ErrNotGRPCTransport = errors.New("grpcidem: the idem.Client's Options.Transport is not a grpcidem.Transport")

// Transport is an http.RoundTripper, for idem.Options.Transport, that makes
// the requests of gRPC calls (URL scheme [Scheme]) as gRPC calls and
// passes every other request to Next, so one idem.Client, with one retry
// budget and one journal, serves both. A call the client interceptor makes
// is sent on its own connection, through the interceptors after it in its
// chain; a journaled call that Client.Resume sends after a restart is
// sent on the connection registered for its target, through that
// connection's interceptors ([Transport.Register]). It is safe for
// concurrent use.
type Transport struct {
	// Next sends the requests that are not gRPC calls. Default
	// http.DefaultTransport.
	Next http.RoundTripper

	mu    sync.RWMutex
	conns map[string]grpc.ClientConnInterface
}

// NewTransport returns a Transport that sends other requests through next
// (nil: http.DefaultTransport).
func NewTransport(next http.RoundTripper) *Transport { return &Transport{Next: next} }

// Register names the connection that resumed calls to target are sent on:
// target is the string given to grpc.NewClient, as conn.Target() returns
// it, which the journal keeps with each call. Register the connections
// before Client.Resume. A later Register for the same target replaces the
// earlier; nil removes it.
func (t *Transport) Register(target string, conn grpc.ClientConnInterface) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if conn == nil {
		delete(t.conns, target)
		return
	}
	if t.conns == nil {
		t.conns = make(map[string]grpc.ClientConnInterface)
	}
	t.conns[target] = conn
}

func (t *Transport) conn(target string) grpc.ClientConnInterface {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.conns[target]
}

// liveCall is the call the client interceptor is making, in the context
// of the requests it hands to idem's client: its own invoker and
// connection, and its call options.
type liveCall struct {
	invoker grpc.UnaryInvoker
	cc      *grpc.ClientConn
	opts    []grpc.CallOption
	reached atomic.Bool // a Transport made an attempt of it
}

type liveCallKey struct{}

// attemptKey marks the context of an attempt Transport sends, live or
// resumed, with its pre-encoded message: a client interceptor of this
// package that sees that message under it (one after the interceptor
// making the call, installed twice, or on the connection a resumed call
// is sent on) lets it through as it is, keyed already. Another call made
// with the same context is not let through.
type attemptKey struct{}

// RoundTrip makes one attempt. For a gRPC call it never returns an error
// for an answer the server gave: the answer is the response (see
// StatusHeader); an error is a context's end, or a call that could not be
// sent (ErrNoConn).
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != Scheme {
		next := t.Next
		if next == nil {
			next = http.DefaultTransport
		}
		return next.RoundTrip(req)
	}
	ctx := req.Context()
	body, err := readAll(req)
	if err != nil {
		return nil, err
	}
	in := &emptypb.Empty{}
	in.ProtoReflect().SetUnknown(body) // sent verbatim by any protobuf codec
	ctx = context.WithValue(metadata.NewOutgoingContext(ctx, outgoing(req.Header)), attemptKey{}, in)
	var header, trailer metadata.MD
	out := &emptypb.Empty{} // the reply's fields, all unknown to it, kept as bytes
	method := req.URL.Path
	if lc, ok := ctx.Value(liveCallKey{}).(*liveCall); ok {
		lc.reached.Store(true)
		opts := append(lc.opts[:len(lc.opts):len(lc.opts)], grpc.Header(&header), grpc.Trailer(&trailer))
		err = lc.invoker(ctx, method, in, out, lc.cc, opts...)
	} else {
		cc := t.conn(req.Host)
		if cc == nil {
			return nil, fmt.Errorf("%w: %q (%s)", ErrNoConn, req.Host, method)
		}
		err = cc.Invoke(ctx, method, in, out, grpc.Header(&header), grpc.Trailer(&trailer))
	}
	if cerr := req.Context().Err(); cerr != nil {
		// The attempt's end, not an answer: its cause, which must still
		// say canceled or deadline (a caller's own cause does not).
		cause := context.Cause(req.Context())
		if !errors.Is(cause, cerr) {
			cause = fmt.Errorf("%w: %w", cerr, cause)
		}
		return nil, cause
	}
	st, isStatus := status.FromError(err)
	if !isStatus {
		return nil, err
	}
	return response(req, st, out, header)
}

// readAll returns the request's body, the call's encoded request.
func readAll(req *http.Request) ([]byte, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	defer req.Body.Close()
	return io.ReadAll(req.Body)
}

// outgoing returns the metadata a request's header stands for: every
// field, its name in lowercase, but those gRPC sets itself and, for a call
// whose key is in a request field, the key's.
func outgoing(h http.Header) metadata.MD {
	md := make(metadata.MD, len(h))
	skip := keyInField(h)
	for name, vals := range h {
		n := strings.ToLower(name)
		if reserved(n) || n == skip {
			continue
		}
		md[n] = append(md[n], vals...)
	}
	return md
}

// reserved reports the header names gRPC sets itself (those its
// transport drops from a call's metadata), or that are HTTP's own, which
// a call's metadata must not carry. Other grpc- keys (grpc-trace-bin,
// grpc-tags-bin, grpc-previous-rpc-attempts) are metadata gRPC sends as
// the caller gave them, and so are they here.
func reserved(n string) bool {
	switch n {
	case "content-type", "content-length", "user-agent", "te", "connection", "host",
		"accept-encoding", "transfer-encoding", "keep-alive", "upgrade", "trailer",
		"grpc-message-type", "grpc-encoding", "grpc-accept-encoding", "grpc-message",
		"grpc-status", "grpc-status-details-bin", "grpc-timeout":
		return true
	}
	return strings.HasPrefix(n, ":")
}

// response is the HTTP response that stands for a call's answer st: its
// status (statusFor), StatusHeader, the header metadata, a Retry-After
// for a RetryInfo, and the reply's or the status's encoding as the body.
func response(req *http.Request, st *status.Status, reply *emptypb.Empty, md metadata.MD) (*http.Response, error) {
	h := make(http.Header, len(md)+3)
	for k, vals := range md {
		for _, v := range vals {
			h.Add(k, v)
		}
	}
	h.Set(StatusHeader, strconv.Itoa(int(st.Code())))
	var body []byte
	if st.Code() == codes.OK {
		body = reply.ProtoReflect().GetUnknown()
	} else {
		b, err := proto.Marshal(st.Proto())
		if err != nil {
			return nil, err
		}
		body = b
		if d, ok := hint(st, math.MaxInt64); ok {
			// Retry-After is whole seconds: a RetryInfo is rounded up, so
			// the wait is never shorter than asked.
			secs := d / time.Second
			if d%time.Second != 0 {
				secs++
			}
			h.Set("Retry-After", strconv.FormatInt(int64(secs), 10))
		}
	}
	code := statusFor(st)
	switch code {
	case http.StatusConflict, http.StatusTooManyRequests, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		// A status the client retries is never a recorded outcome: the
		// server interceptor records none of them. A replay marker beside
		// one came in the header of a call that then failed on its way
		// back (the connection reset after the server's header was sent),
		// and would have the client take that failure for the recorded
		// answer, and stop.
		h.Del(ReplayedHeader)
	case http.StatusUnprocessableEntity:
		// The signal idem's client reads as key reuse.
		h.Set("Link", `<https://idem.dev/problems/idempotency-key-reused>; rel="describedby"`)
	}
	return &http.Response{
		Status:        strconv.Itoa(code) + " " + http.StatusText(code),
		StatusCode:    code,
		Proto:         "HTTP/2.0",
		ProtoMajor:    2,
		Header:        h,
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}, nil
}

// statusFor is the HTTP status that stands for answer st in idem's
// client, which decides on statuses: the codes the package documentation
// says are retried (# Retries) get the statuses idem retries, key reuse
// the status idem reads as such, authentication and permission refusals
// idem's refusals (kept pending, not replayed), and every other answer is
// final.
//
//	OK and other final codes    200
//	Aborted                     409 (the first call still runs)
//	ResourceExhausted           429
//	Unavailable                 503
//	DeadlineExceeded            504
//	FailedPrecondition          422, with KEY_REUSED
//	Unauthenticated             401
//	PermissionDenied            403
func statusFor(st *status.Status) int {
	switch st.Code() {
	case codes.Aborted:
		return http.StatusConflict
	case codes.ResourceExhausted:
		return http.StatusTooManyRequests
	case codes.Unavailable:
		return http.StatusServiceUnavailable
	case codes.DeadlineExceeded:
		return http.StatusGatewayTimeout
	case codes.Unauthenticated:
		return http.StatusUnauthorized
	case codes.PermissionDenied:
		return http.StatusForbidden
	case codes.FailedPrecondition:
		if reasonOf(st) == ReasonKeyReused {
			return http.StatusUnprocessableEntity
		}
	}
	return http.StatusOK
}

// Answer returns what a gRPC call's answer, as idem's client returns it
// (Client.Do's or a Client.Resume result's Response), says: nil, with the
// reply decoded into reply (which may be nil to skip it), or the call's
// final status as an error (status.FromError reads it). It is how a caller
// reads the calls Client.Resume finished after a restart. An answer the
// journal kept only in part (Response.Truncated: its first MaxJournalBody
// bytes) is an error wrapping idem.ErrBodyTooLarge, never decoded as if
// whole; a response that is not a gRPC call's answer is an error.
func Answer(r *idem.Response, reply proto.Message) error {
	if r.Truncated {
		return fmt.Errorf("%w: the journal kept only the first %d bytes of the call's answer (MaxJournalBody)", idem.ErrBodyTooLarge, len(r.Body))
	}
	st, err := statusOf(r.Header, r.Body)
	if err != nil {
		return err
	}
	if st != nil {
		return st.Err()
	}
	if reply == nil {
		return nil
	}
	return proto.Unmarshal(r.Body, reply)
}

// statusOf returns the final status an answer carries, nil for code OK.
func statusOf(header http.Header, body []byte) (*status.Status, error) {
	v := header.Get(StatusHeader)
	code, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("grpcidem: the response is not a gRPC call's answer (%s %q)", StatusHeader, v)
	}
	if codes.Code(code) == codes.OK {
		return nil, nil
	}
	var p spb.Status
	if err := proto.Unmarshal(body, &p); err != nil {
		return nil, fmt.Errorf("grpcidem: the answer's status cannot be read: %w", err)
	}
	if p.GetCode() != int32(code) {
		return nil, fmt.Errorf("grpcidem: the answer's status says code %d, its %s %d", p.GetCode(), StatusHeader, code)
	}
	return status.FromProto(&p), nil
}
