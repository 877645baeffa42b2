module github.com/idemhq/idem/grpcidem/internal/redistest

go 1.26.0

require (
	github.com/idemhq/idem/grpcidem v0.1.0
	github.com/idemhq/idem/server/redisstore v0.1.0
	github.com/redis/go-redis/v9 v9.23.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/hashicorp/go-cleanhttp v0.5.2 // indirect
	github.com/hashicorp/go-retryablehttp v0.7.8 // indirect
	github.com/idemhq/idem v0.1.0 // indirect
	github.com/oklog/ulid/v2 v2.1.1 // indirect
	go.etcd.io/bbolt v1.4.3 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/net v0.57.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.40.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260706201446-f0a921348800 // indirect
	google.golang.org/grpc v1.84.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

// This module is never published: it tests this repository's grpcidem and
// redisstore, as examples/ does.
replace (
	github.com/idemhq/idem => ../../..
	github.com/idemhq/idem/grpcidem => ../..
	github.com/idemhq/idem/server/redisstore => ../../../server/redisstore
)
