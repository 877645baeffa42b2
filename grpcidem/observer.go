// This file holds the server interceptor's use of server.Observer.

package grpcidem

import (
	"context"
	"strings"

	"github.com/idemhq/idem/server"
)

// methodKey is the context key of the full method name of the call a
// RunOnce's events are about (see observerFor).
type methodKey struct{}

// withMethod returns ctx naming fullMethod for the Request hook, if there
// is one to tell.
func (c *serverConfig) withMethod(ctx context.Context, fullMethod string) context.Context {
	if c.obs == nil || c.obs.Request == nil {
		return ctx
	}
	return context.WithValue(ctx, methodKey{}, fullMethod)
}

// observerFor returns the Observer the interceptor runs with: o, with its
// Request hook given the call's full method name as the Route and, without
// its leading slash, as the RPCMethod, which server.RunOnce leaves empty; nil if o is nil. The hooks are o's, called
// as server.Observer documents.
func observerFor(o *server.Observer) *server.Observer {
	if o == nil {
		return nil
	}
	cp := *o
	if req := o.Request; req != nil {
		cp.Request = func(ctx context.Context, info server.RequestInfo) {
			if m, ok := ctx.Value(methodKey{}).(string); ok && info.Route == "" {
				info.Route, info.RPCMethod = m, strings.TrimPrefix(m, "/")
			}
			req(ctx, info)
		}
	}
	return &cp
}

// observe reports a call the interceptor answered itself, before any
// claim, with outcome res.
func (c *serverConfig) observe(ctx context.Context, fullMethod string, res server.Outcome) {
	if c.obs == nil || c.obs.Request == nil {
		return
	}
	c.obs.Request(ctx, server.RequestInfo{Route: fullMethod, RPCMethod: strings.TrimPrefix(fullMethod, "/"), Outcome: res})
}
