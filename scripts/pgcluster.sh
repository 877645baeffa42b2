#!/usr/bin/env bash
# pgcluster.sh: a PostgreSQL cluster of its own on loopback, for idem's
# crash and settings tests: they kill it, restart it, turn it into a
# standby and change its settings, which the shared test server must never
# see.
#
#   scripts/pgcluster.sh start    initdb if needed, start, print the DSN of its database "test"
#   scripts/pgcluster.sh status   exit 0 only if the cluster this script started answers
#   scripts/pgcluster.sh kill     SIGKILL the postmaster and every process of the cluster at once (a crash)
#   scripts/pgcluster.sh standby  restart it as a hot standby with no primary (read-only, in recovery)
#   scripts/pgcluster.sh promote  end the standby's recovery: a primary again
#   scripts/pgcluster.sh stop     stop exactly the cluster this script started, remove its directory
#
# The cluster runs the binaries in IDEM_PGCLUSTER_BIN (default
# /usr/lib/postgresql/15/bin) on 127.0.0.1, port IDEM_PGCLUSTER_PORT
# (default 5442), with trust authentication for the user postgres.
# PostgreSQL refuses to run as root: when started by root it runs as
# IDEM_PGCLUSTER_RUN_AS (default postgres). Its data, socket and log live
# in IDEM_PGCLUSTER_DIR (default $TMPDIR/idem-pgcluster-<port>); the
# postmaster's pid file there is how stop and kill find exactly the
# processes start launched.
#
# The settings make a crash lose what it can lose and nothing else:
# wal_writer_delay is 10 s, the longest PostgreSQL allows, so that WAL of
# commits made with synchronous_commit off stays in wal_buffers, unwritten,
# until the WAL writer's next round or until a later commit flushes it; a
# SIGKILL of every process of the cluster (kill) then loses it, as a crash
# of the server's machine would lose WAL written but not flushed. (pg_ctl
# stop -m immediate is no such crash: its WAL writer, and every backend,
# is told to quit and the WAL already written survives in the operating
# system's cache, so a later start replays it.) autovacuum is off, so
# nothing else writes WAL behind a test's back. fsync stays on.
#
# start is idempotent: a cluster of this script already answering is left
# alone and its DSN printed again; one that was killed is started again,
# through crash recovery. Every wait is bounded (IDEM_PGCLUSTER_WAIT
# seconds, default 60). The DSN is the last line of start's standard
# output:
#
#   export IDEM_TEST_PGCLUSTER_DSN=$(scripts/pgcluster.sh start | tail -n 1)
set -euo pipefail

BIN=${IDEM_PGCLUSTER_BIN:-/usr/lib/postgresql/15/bin}
PORT=${IDEM_PGCLUSTER_PORT:-5442}
RUN_AS=${IDEM_PGCLUSTER_RUN_AS:-postgres}
WAIT=${IDEM_PGCLUSTER_WAIT:-60}
DIR=${IDEM_PGCLUSTER_DIR:-${TMPDIR:-/tmp}/idem-pgcluster-$PORT}
DATA=$DIR/data
HOST=127.0.0.1

say() { printf 'pgcluster: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

dsn() { printf 'postgres://postgres@%s:%s/test?sslmode=disable\n' "$HOST" "$PORT"; }

# as_owner COMMAND...: run COMMAND as the user that owns the cluster.
as_owner() {
	if [ "$(id -u)" -eq 0 ]; then
		runuser -u "$RUN_AS" -- "$@"
	else
		"$@"
	fi
}

pgctl() { as_owner "$BIN/pg_ctl" -D "$DATA" "$@"; }

# psql_run DATABASE SQL: one statement, bounded by a timeout.
psql_run() {
	timeout 10 "$BIN/psql" -X -q -A -t -h "$HOST" -p "$PORT" -U postgres -d "$1" -c "$2"
}

# postmaster: the pid in the cluster's pid file, if that process is still
# the postmaster of this data directory.
postmaster() {
	local f="$DATA/postmaster.pid" pid
	[ -f "$f" ] || return 1
	pid=$(head -n 1 "$f")
	[ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
	grep -qE '^(postgres|postmaster)$' "/proc/$pid/comm" 2>/dev/null || return 1
	[ "$(readlink -f "/proc/$pid/cwd" 2>/dev/null)" = "$(readlink -f "$DATA")" ] || return 1
	printf '%s\n' "$pid"
}

gone() { local p; for p in "$@"; do kill -0 "$p" 2>/dev/null && return 1; done; return 0; }

port_busy() { (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null; }

# until_ok SECONDS DESCRIPTION COMMAND...: poll COMMAND every 0.2 s.
until_ok() {
	local secs=$1 what=$2; shift 2
	local deadline=$((SECONDS + secs))
	until "$@"; do
		[ "$SECONDS" -lt "$deadline" ] || { say "timed out after ${secs}s waiting for $what"; return 1; }
		sleep 0.2
	done
}

answers() { psql_run postgres 'SELECT 1' 2>/dev/null | grep -qx 1; }

init_cluster() {
	mkdir -p "$DIR"
	if [ "$(id -u)" -eq 0 ]; then chown "$RUN_AS" "$DIR"; fi
	chmod 0700 "$DIR"
	as_owner "$BIN/initdb" -D "$DATA" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 --no-sync >"$DIR/initdb.log" 2>&1 ||
		{ cat "$DIR/initdb.log" >&2; die "initdb failed"; }
	cat >>"$DATA/postgresql.conf" <<EOF

# scripts/pgcluster.sh
listen_addresses = '$HOST'
port = $PORT
unix_socket_directories = '$DIR'
max_connections = 100
shared_buffers = 32MB
wal_writer_delay = 10s
autovacuum = off
fsync = on
synchronous_commit = on
EOF
}

start_cluster() {
	pgctl -l "$DIR/postgres.log" -w -t "$WAIT" start >/dev/null ||
		{ tail -n 30 "$DIR/postgres.log" >&2; die "PostgreSQL did not start"; }
	until_ok "$WAIT" "PostgreSQL to answer on $HOST:$PORT" answers
}

cmd_status() {
	local pid
	pid=$(postmaster) || { say "not running (no postmaster of $DATA)"; return 1; }
	answers || { say "postmaster $pid does not answer on $HOST:$PORT"; return 1; }
	say "postmaster $pid on $HOST:$PORT, data in $DATA"
}

cmd_start() {
	[ -x "$BIN/initdb" ] || die "no initdb in $BIN"
	if postmaster >/dev/null && answers; then
		say "already running in $DIR"
		dsn
		return 0
	fi
	if ! postmaster >/dev/null; then
		port_busy "$PORT" && die "port $PORT is in use"
	fi
	[ -f "$DATA/PG_VERSION" ] || init_cluster
	postmaster >/dev/null || start_cluster
	until_ok "$WAIT" "PostgreSQL to answer on $HOST:$PORT" answers
	if [ "$(psql_run postgres "SELECT count(*) FROM pg_database WHERE datname = 'test'")" = 0 ]; then
		psql_run postgres 'CREATE DATABASE test' >/dev/null
	fi
	say "running in $DIR: $HOST:$PORT (wal_writer_delay 10s, autovacuum off)"
	dsn
}

cmd_kill() {
	local pid children
	pid=$(postmaster) || die "no postmaster of $DATA runs"
	children=$(ps -o pid= --ppid "$pid" | tr -s ' \n' ' ')
	# One kill for all of them: none is left to write or flush WAL.
	# shellcheck disable=SC2086
	kill -KILL "$pid" $children 2>/dev/null || true
	# shellcheck disable=SC2086
	until_ok 10 "the killed processes to exit" gone "$pid" $children
	say "killed postmaster $pid and its processes:$children"
}

cmd_standby() {
	postmaster >/dev/null || die "no postmaster of $DATA runs: run start"
	pgctl -m fast -w -t "$WAIT" stop >/dev/null
	as_owner touch "$DATA/standby.signal"
	start_cluster
	[ "$(psql_run postgres 'SELECT pg_is_in_recovery()')" = t ] || die "the restarted cluster is not in recovery"
	say "a hot standby (no primary) on $HOST:$PORT"
}

cmd_promote() {
	postmaster >/dev/null || die "no postmaster of $DATA runs: run start"
	pgctl -w -t "$WAIT" promote >/dev/null
	until_ok "$WAIT" "recovery to end" sh -c "[ \"\$(\"$BIN/psql\" -X -q -A -t -h $HOST -p $PORT -U postgres -d postgres -c 'SELECT pg_is_in_recovery()')\" = f ]"
	say "promoted: a primary on $HOST:$PORT"
}

cmd_stop() {
	local pid
	[ -d "$DIR" ] || return 0
	if pid=$(postmaster); then
		pgctl -m fast -w -t 30 stop >/dev/null 2>&1 || kill -KILL "$pid" 2>/dev/null || true
		until_ok 10 "postmaster $pid to exit" gone "$pid" || true
	fi
	rm -rf -- "$DIR"
	say "stopped; removed $DIR"
}

case "${1:-}" in
start) cmd_start ;;
stop) cmd_stop ;;
status) cmd_status ;;
kill) cmd_kill ;;
standby) cmd_standby ;;
promote) cmd_promote ;;
*) die "usage: $0 start|status|kill|standby|promote|stop" ;;
esac
