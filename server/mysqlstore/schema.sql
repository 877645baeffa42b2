-- Schema of the idem MySQL/MariaDB store, applied by (*Store).Migrate and
-- printed by mysqlstore.Schema. {{table}} is the quoted name given in
-- Options.Table. One statement, idempotent: it creates what is missing
-- and never alters what exists.
CREATE TABLE IF NOT EXISTS {{table}} (
    -- SHA-256 of the scope's length in bytes (decimal), a colon, the scope
    -- and the key: a fixed 32-byte primary key whatever the scope's
    -- length. Every statement finds its row by it alone.
    id          BINARY(32)      NOT NULL,
    -- The caller's scope (tenant, account, credential) and the normalised
    -- Idempotency-Key, for people reading the table. Bytes, compared byte
    -- for byte.
    scope       BLOB            NOT NULL,
    idem_key    VARBINARY(255)  NOT NULL,
    -- Fingerprint of the request that claimed the key.
    fingerprint VARBINARY(255)  NOT NULL,
    -- Lease token of the current owner; fences Renew, Complete, Release.
    token       VARBINARY(64)   NOT NULL,
    state       ENUM('running', 'completed') NOT NULL,
    -- The stored outcome, set when state = 'completed'. The header is
    -- binary (see header.go), so that it round-trips byte for byte.
    status      SMALLINT        NULL,
    header      MEDIUMBLOB      NULL,
    body        LONGBLOB        NULL,
    -- Incremented by every write, so that a write that succeeds always
    -- changes the row and is counted in the affected rows.
    version     BIGINT UNSIGNED NOT NULL DEFAULT 0,
    -- When the current claim was made, UTC.
    claimed_at  DATETIME(6)     NOT NULL,
    -- UTC. Running: when the lease lapses. Completed: when the record may
    -- be forgotten. Purge deletes rows past it.
    expires_at  DATETIME(6)     NOT NULL,
    PRIMARY KEY (id),
    KEY expires_at_idx (expires_at)
) ENGINE = InnoDB DEFAULT CHARSET = ascii COLLATE = ascii_bin
