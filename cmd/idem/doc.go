// Command idem looks at and resumes an idem journal, sends one keyed and
// retried request, derives keys, and checks whether an HTTP API honours
// idempotency keys.
//
//	go install github.com/idemhq/idem/cmd/idem@latest
//
//	idem derive payout 2026-12-25 417          # the key idem.DeriveKey gives
//	idem send -X POST https://api.example.com/charges -d @charge.json \
//	     -H 'Authorization: Bearer ...' --journal app.journal
//	idem check -d '{"amount": 1000}' https://api.example.com/charges
//	idem check --profile square -d @payment.json \
//	     -H "Authorization: Bearer $TOKEN" https://connect.squareupsandbox.com/v2/payments
//	idem ls --journal app.journal --state pending
//	idem show --journal app.journal 0193...
//	idem resume --journal app.journal --header-from-env Authorization=API_AUTH
//	idem forget --journal app.journal payout/2026-12-25/417
//	idem purge --journal app.journal               # finished over 7 days ago
//	idem compact --journal app.journal             # give the free space back
//	idem keys ls --database postgres://idem@db:5432/app --state running
//	idem keys purge --database postgres://idem@db:5432/app
//	idem keys ls --redis 10.0.0.1:6379,10.0.0.2:6379,10.0.0.3:6379
//	idem keys schema --table billing.idem_keys | psql "$ADMIN_DSN" -f -
//	idem version
//
// check, send and resume take --profile NAME (stripe, adyen, paypal,
// square, gocardless) to follow that API's conventions, as idem.Options'
// Profile does: where the key goes (square's in the JSON body), how long
// it may be, the required headers and how key reuse and replays are said.
//
// idem keys reads the records a server keeps with server/pgstore
// (--database) or server/redisstore (--redis): counts by state, the
// running keys and their leases; and purges a pgstore's (Redis expires its
// records itself). idem keys schema prints a pgstore table's DDL for an
// administrator to apply.
//
// Every command has --help, and --json prints one JSON document on standard
// output for scripts instead of a table. The journal is named by --journal
// or the IDEM_JOURNAL environment variable; a journal a running process
// holds is reported as such at once, never waited on.
//
// Exit status: 0 on success; 1 on an error (the message on standard error
// starts with "idem:"); 2 on a usage error (an unknown flag, a missing
// argument); 3 when idem check finds that the API can execute one keyed
// request more than once; 130 when interrupted. idem resume exits 1 when it
// leaves operations pending or finds expired ones.
package main
