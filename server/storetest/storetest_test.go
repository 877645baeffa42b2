package storetest_test

import (
	"context"
	"testing"
	"time"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/memstore"
	"github.com/idemhq/idem/server/storetest"
)

// unitStore is memstore made a WorkClaimer the plainest way: a unit of
// work holds a lease claim long enough to outlast any test, ends it with
// Complete or Release, and hides the token from its caller.
type unitStore struct{ *memstore.Store }

func (s unitStore) ClaimWork(ctx context.Context, k server.Key, fp string) (server.Claim, context.Context, server.Work, error) {
	c, err := s.Claim(ctx, k, fp, time.Hour)
	if err != nil || !c.Acquired {
		return c, nil, nil, err
	}
	return server.Claim{Acquired: true}, ctx, unit{s.Store, k, c.Token}, nil
}

type unit struct {
	s     *memstore.Store
	k     server.Key
	token string
}

func (u unit) Commit(ctx context.Context, resp server.Response, retention time.Duration) error {
	return u.s.Complete(ctx, u.k, u.token, resp, retention)
}

func (u unit) Rollback(ctx context.Context) error { return u.s.Release(ctx, u.k, u.token) }

// TestRun runs the suite, its WorkClaimer cases included, on a conforming
// store.
func TestRun(t *testing.T) {
	storetest.Run(t, func(*testing.T) server.Store { return unitStore{memstore.New(memstore.Options{})} })
}
