#!/usr/bin/env bash
# pgbouncer.sh: a PgBouncer in transaction pooling on loopback, in front of
# the test PostgreSQL, for idem's tests and CI.
#
#   scripts/pgbouncer.sh start    start PgBouncer, print the DSN of the test database through it
#   scripts/pgbouncer.sh status   exit 0 only if the PgBouncer this script started answers
#   scripts/pgbouncer.sh stop     stop exactly the PgBouncer this script started, remove its directory
#
# PgBouncer (PGBOUNCER overrides the binary) listens on 127.0.0.1, port
# IDEM_PGBOUNCER_PORT (default 6432), with pool_mode transaction: a server
# connection serves a client for one transaction only, as in most
# production deployments. Every database is forwarded to the PostgreSQL at
# IDEM_PGBOUNCER_UPSTREAM (host:port, default 127.0.0.1:5432) with
# auth_type trust, for the users in IDEM_PGBOUNCER_USERS (default
# "postgres"). PgBouncer refuses to run as root: when started by root it
# runs as IDEM_PGBOUNCER_RUN_AS (default postgres). Its configuration, log
# and pid file live in IDEM_PGBOUNCER_DIR (default
# $TMPDIR/idem-pgbouncer-<port>); the pid file there is how stop finds
# exactly the process start launched.
#
# start is idempotent: a PgBouncer of this script already answering is left
# alone and its DSN printed again. Every wait is bounded (IDEM_PGBOUNCER_WAIT
# seconds, default 30). The DSN is the last line of start's standard output:
#
#   export IDEM_TEST_PGBOUNCER=$(scripts/pgbouncer.sh start | tail -n 1)
set -euo pipefail

PGBOUNCER=${PGBOUNCER:-pgbouncer}
PORT=${IDEM_PGBOUNCER_PORT:-6432}
UPSTREAM=${IDEM_PGBOUNCER_UPSTREAM:-127.0.0.1:5432}
read -r -a USERS <<<"${IDEM_PGBOUNCER_USERS:-postgres}"
RUN_AS=${IDEM_PGBOUNCER_RUN_AS:-postgres}
WAIT=${IDEM_PGBOUNCER_WAIT:-30}
DIR=${IDEM_PGBOUNCER_DIR:-${TMPDIR:-/tmp}/idem-pgbouncer-$PORT}
HOST=127.0.0.1

say() { printf 'pgbouncer: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

dsn() { printf 'postgres://%s@%s:%s/test?sslmode=disable\n' "${USERS[0]}" "$HOST" "$PORT"; }

# as_runner COMMAND...: run COMMAND as the user PgBouncer runs as.
as_runner() {
	if [ "$(id -u)" -eq 0 ]; then
		runuser -u "$RUN_AS" -- "$@"
	else
		"$@"
	fi
}

# our_pid: the pid recorded in the pid file, if that process is still the
# PgBouncer started with this directory's configuration.
our_pid() {
	local f="$DIR/pgbouncer.pid" pid
	[ -f "$f" ] || return 1
	pid=$(<"$f")
	[ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
	grep -q '^pgbouncer' "/proc/$pid/comm" 2>/dev/null || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF "$DIR/pgbouncer.ini" || return 1
	printf '%s\n' "$pid"
}

gone() { ! kill -0 "$1" 2>/dev/null; }

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

# answers: a query through PgBouncer reaches PostgreSQL.
answers() {
	timeout 5 psql -X -q -A -t -h "$HOST" -p "$PORT" -U "${USERS[0]}" -d test -c 'SELECT 1' 2>/dev/null | grep -qx 1
}

write_config() {
	local u
	mkdir -p "$DIR"
	: >"$DIR/userlist.txt"
	for u in "${USERS[@]}"; do printf '"%s" ""\n' "$u" >>"$DIR/userlist.txt"; done
	cat >"$DIR/pgbouncer.ini" <<EOF
[databases]
* = host=${UPSTREAM%:*} port=${UPSTREAM##*:}

[pgbouncer]
listen_addr = $HOST
listen_port = $PORT
unix_socket_dir =
pool_mode = transaction
auth_type = trust
auth_file = $DIR/userlist.txt
max_client_conn = 500
default_pool_size = 20
logfile = $DIR/pgbouncer.log
pidfile = $DIR/pgbouncer.pid
admin_users = ${USERS[0]}
EOF
	if [ "$(id -u)" -eq 0 ]; then chown -R "$RUN_AS" "$DIR"; fi
}

cmd_status() {
	local pid
	pid=$(our_pid) || { say "not running (no PgBouncer of $DIR)"; return 1; }
	answers || { say "pid $pid does not answer on $HOST:$PORT"; return 1; }
	say "pid $pid on $HOST:$PORT, pool_mode transaction, in front of $UPSTREAM"
}

cmd_stop() {
	local pid
	[ -d "$DIR" ] || return 0
	if pid=$(our_pid); then
		kill -TERM "$pid" 2>/dev/null || true
		if ! until_ok 10 "PgBouncer (pid $pid) to exit" gone "$pid"; then
			kill -KILL "$pid" 2>/dev/null || true
		fi
	fi
	rm -rf -- "$DIR"
	say "stopped; removed $DIR"
}

cmd_start() {
	command -v "$PGBOUNCER" >/dev/null || die "no $PGBOUNCER on PATH (apt-get install pgbouncer)"
	command -v psql >/dev/null || die "no psql on PATH"
	if [ -d "$DIR" ]; then
		if cmd_status 2>/dev/null; then
			say "already running in $DIR"
			dsn
			return 0
		fi
		say "a previous PgBouncer in $DIR does not answer: stopping it"
		cmd_stop
	fi
	port_busy "$PORT" && die "port $PORT is in use"
	write_config
	as_runner "$PGBOUNCER" -d "$DIR/pgbouncer.ini" >/dev/null ||
		{ cat "$DIR/pgbouncer.log" >&2 2>/dev/null; die "PgBouncer did not start"; }
	until_ok "$WAIT" "PgBouncer to answer on $HOST:$PORT" answers ||
		{ tail -n 20 "$DIR/pgbouncer.log" >&2 2>/dev/null; die "PgBouncer does not answer"; }
	say "running in $DIR: $HOST:$PORT, pool_mode transaction, in front of $UPSTREAM"
	dsn
}

case "${1:-}" in
start) cmd_start ;;
stop) cmd_stop ;;
status) cmd_status ;;
*) die "usage: $0 start|status|stop" ;;
esac
