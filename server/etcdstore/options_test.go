package etcdstore_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server/etcdstore"
)

func TestNewRefuses(t *testing.T) {
	_, err := etcdstore.New(nil, etcdstore.Options{})
	assert.ErrorIs(t, err, etcdstore.ErrInvalidOptions, "a nil client")
	cli := connect(t)
	for name, opts := range map[string]etcdstore.Options{
		"negative Abandon":     {Abandon: -time.Second},
		"negative MaxResponse": {MaxResponse: -1},
		"negative TryTimeout":  {TryTimeout: -time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := etcdstore.New(cli, opts)
			assert.ErrorIs(t, err, etcdstore.ErrInvalidOptions)
		})
	}
	s, err := etcdstore.New(cli, etcdstore.Options{})
	require.NoError(t, err, "the zero Options are the defaults")
	assert.Equal(t, "etcd", s.StoreSystem())
}
