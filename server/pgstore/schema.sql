-- Schema of the idem PostgreSQL store (package pgstore): the table of
-- idempotency records and the index Purge reads. Store.Migrate applies
-- it; pgstore.Schema renders it for a table, for psql. Every statement is
-- idempotent. Once it exists, the store's role needs SELECT, INSERT,
-- UPDATE and DELETE on the table, and no CREATE.

CREATE TABLE IF NOT EXISTS {{table}} (
    -- The caller's scope (tenant, account, credential) and the normalised
    -- Idempotency-Key. Compared byte for byte.
    scope       text COLLATE "C" NOT NULL,
    key         text COLLATE "C" NOT NULL,
    -- Fingerprint of the request that claimed the key.
    fingerprint text        NOT NULL,
    -- Lease token of the current owner; fences Renew, Complete, Release.
    token       text        NOT NULL,
    state       text        NOT NULL CHECK (state IN ('running', 'completed')),
    -- The stored outcome, set when state = 'completed'. The header is
    -- binary (see header.go), so that it round-trips byte for byte.
    status      integer,
    header      bytea,
    body        bytea,
    -- When the current claim was made.
    claimed_at  timestamptz NOT NULL DEFAULT statement_timestamp(),
    -- Running: when the lease lapses. Completed: when the record may be
    -- forgotten. Purge deletes rows past it.
    expires_at  timestamptz NOT NULL,
    PRIMARY KEY (scope, key)
);

CREATE INDEX IF NOT EXISTS {{index}} ON {{table}} (expires_at);
