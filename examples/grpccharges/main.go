// Command grpccharges is a gRPC payment service and its client, made safe
// to retry by grpcidem from both ends, and a harness that proves it: the
// client process is SIGKILLed again and again while its calls are at the
// service, and every call still charges exactly once.
//
// It runs two kinds of processes, this same binary in another role:
//
//   - the harness (the parent): the Charges service, a gRPC server whose
//     unary calls go through grpcidem's server interceptor on memstore (or
//     pgstore with -database, the charge a row in the record's
//     transaction). Every charge is counted per operation. At random
//     executions (-kills of them, seeded by -seed) the handler SIGKILLs
//     the client, half of the time before it takes the charge and half
//     after, before it answers; the work goes on without the client.
//   - the client (GRPCCHARGES_ROLE=client): an idem client with a bbolt
//     journal, whose transport is grpcidem.Transport, under grpcidem's
//     client interceptor. At start it resumes the calls its predecessor
//     left pending (Client.Resume, on the connection registered for their
//     target), then makes operation i's call under the key bound to the
//     name "charge/<i>" in the journal, for every i: a call done already
//     is answered from the journal, one that is not is sent (again) with
//     its key.
//
// At the end the harness prints
//
//	kills=<k> resumed=<r>
//	operations=<n> charges=<c> duplicates=<d> lost=<l>
//
// and exits non-zero unless every operation was charged exactly once.
// With -naive the client has no journal and mints new keys in each
// process (it notes which operations it saw answered): each kill after a
// charge makes it charge again, and -expect-duplicates makes that the
// pass condition, for CI.
//
// The service has no generated code: its request and reply are
// google.protobuf.Struct messages and its grpc.ServiceDesc is written by
// hand, so the example needs no protoc. The interceptors work the same on
// generated services.
//
//	go run ./grpccharges -ops 200 -kills 10
//	go run ./grpccharges -ops 200 -kills 10 -database "$IDEM_TEST_DATABASE"
//	go run ./grpccharges -ops 200 -kills 10 -naive -expect-duplicates
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"
)

func main() {
	if os.Getenv("GRPCCHARGES_ROLE") == "client" {
		if err := runClient(); err != nil {
			fmt.Fprintln(os.Stderr, "grpccharges client:", err)
			os.Exit(1)
		}
		return
	}
	var cfg config
	flag.IntVar(&cfg.ops, "ops", 200, "operations the client makes")
	flag.IntVar(&cfg.kills, "kills", 10, "how many times the client is SIGKILLed")
	flag.Int64Var(&cfg.seed, "seed", 1203, "seed of the executions the client is killed at")
	flag.StringVar(&cfg.database, "database", "", "PostgreSQL DSN: pgstore in transactional mode, the charge a row in the record's transaction (default memstore)")
	flag.BoolVar(&cfg.naive, "naive", false, "a client without a journal, minting new keys in each process")
	flag.BoolVar(&cfg.expectDuplicates, "expect-duplicates", false, "pass only if duplicates were found (with -naive)")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "grpccharges:", err)
		os.Exit(1)
	}
}
