// Package bench compares etcdstore with redisstore in one run: the same
// requests through server.Middleware (etcdstore's internal/httpbench) on
// a three-member etcd cluster embedded in the test binary and on the
// Redis Cluster IDEM_TEST_REDIS names (the seeds scripts/redis-cluster.sh
// start prints). It is a module of its own, never tagged, because
// redisstore's module needs a newer Go than etcdstore's.
//
//	export IDEM_TEST_REDIS=$(scripts/redis-cluster.sh start | tail -n 1)
//	go test -run '^$' -bench . ./server/etcdstore/bench/
package bench
