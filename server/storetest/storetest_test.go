package storetest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/memstore"
	"github.com/idemhq/idem/server/storetest"
)

// unitStore is memstore made a WorkClaimer the plainest way: a unit of
// work holds a lease claim long enough to outlast any test, ends it once
// with Complete or Release, and hides the token from its caller.
type unitStore struct{ *memstore.Store }

func (s unitStore) ClaimWork(ctx context.Context, k server.Key, fp string) (server.Claim, context.Context, server.Work, error) {
	c, err := s.Claim(ctx, k, fp, time.Hour)
	if err != nil || !c.Acquired {
		return c, nil, nil, err
	}
	return server.Claim{Acquired: true, TakenOver: c.TakenOver}, ctx, &unit{s: s.Store, k: k, token: c.Token}, nil
}

type unit struct {
	s     *memstore.Store
	k     server.Key
	token string
	ended bool
}

var errEnded = errors.New("the work has ended")

func (u *unit) Commit(ctx context.Context, resp server.StoredResponse, retention time.Duration) error {
	if u.ended {
		return errEnded
	}
	u.ended = true
	return u.s.Complete(ctx, u.k, u.token, resp, retention)
}

func (u *unit) Rollback(ctx context.Context) error {
	if u.ended {
		return nil
	}
	u.ended = true
	return u.s.Release(ctx, u.k, u.token)
}

// TestRun runs the suite, its WorkClaimer cases included, on a conforming
// store.
func TestRun(t *testing.T) {
	storetest.Run(t, func(*testing.T) server.Store { return unitStore{memstore.New(memstore.Options{})} })
}
