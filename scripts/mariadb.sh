#!/usr/bin/env bash
# mariadb.sh: a MariaDB server of idem's own on loopback, for the tests and
# CI runs that kill and restart their database (server/mysqlstore's chaos
# run), never touching the machine's own server.
#
#   scripts/mariadb.sh start    start it (installing its data directory on first use), print its DSN
#   scripts/mariadb.sh status   exit 0 only if it answers
#   scripts/mariadb.sh kill     SIGKILL it: no shutdown, no flush (start brings it back through crash recovery)
#   scripts/mariadb.sh stop     shut it down and remove its directory
#
# The server is the machine's mariadbd (MARIADBD, MARIADB_INSTALL_DB,
# MARIADB_ADMIN override the binaries), on 127.0.0.1 port IDEM_MARIADB_PORT
# (default 3307), with its files in IDEM_MARIADB_DIR (default
# $TMPDIR/idem-mariadb-<port>): data/, the socket, the pid file and the
# error log. MariaDB refuses to run as root, so as root the script runs it
# as the mysql user (IDEM_MARIADB_USER), otherwise as the caller. Commits
# are durable (innodb_flush_log_at_trx_commit=1) and the binary log is off,
# as on the machine's server; root has no password, on loopback only.
#
# start is idempotent: a server already answering is left alone and its DSN
# printed again. The pid file and the data directory in /proc are how kill
# and stop find exactly the process start launched. Every wait is bounded
# (IDEM_MARIADB_WAIT seconds, default 60). The DSN, for IDEM_TEST_MYSQL or
# the chaos command, is the last line of start's standard output:
#
#   export IDEM_CHAOS_MYSQL=$(scripts/mariadb.sh start | tail -n 1)
set -euo pipefail

MARIADBD=${MARIADBD:-mariadbd}
MARIADB_INSTALL_DB=${MARIADB_INSTALL_DB:-mariadb-install-db}
MARIADB_ADMIN=${MARIADB_ADMIN:-mariadb-admin}
MARIADB=${MARIADB:-mariadb}
PORT=${IDEM_MARIADB_PORT:-3307}
WAIT=${IDEM_MARIADB_WAIT:-60}
DIR=${IDEM_MARIADB_DIR:-${TMPDIR:-/tmp}/idem-mariadb-$PORT}
HOST=127.0.0.1
RUN_AS=${IDEM_MARIADB_USER:-mysql}

say() { printf 'mariadb: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

[ "$PORT" != 3306 ] || die "port 3306 is the machine's own server: pick another IDEM_MARIADB_PORT"

# as CMD...: run CMD as the server's user (as the caller when not root).
as() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u "$RUN_AS" -- "$@"
	else
		"$@"
	fi
}

dsn() { printf 'root@tcp(%s:%s)/test\n' "$HOST" "$PORT"; }

admin() { timeout 10 "$MARIADB_ADMIN" --no-defaults -h "$HOST" -P "$PORT" -u root --connect-timeout=2 "$@" >/dev/null 2>&1; }

up() { admin ping; }

# pid prints the pid recorded in the pid file if that process is still the
# mariadbd serving this directory's data, not a recycled pid.
pid() {
	local f="$DIR/mariadbd.pid" p
	[ -f "$f" ] || return 1
	p=$(<"$f")
	[ -n "$p" ] && [ -r "/proc/$p/cmdline" ] || return 1
	grep -q -E '^(mariadbd|mysqld)' "/proc/$p/comm" 2>/dev/null || return 1
	tr '\0' '\n' <"/proc/$p/cmdline" | grep -qx -- "--datadir=$DIR/data" || return 1
	printf '%s\n' "$p"
}

# until_ok SECONDS DESCRIPTION COMMAND...: poll COMMAND every 0.2 s.
until_ok() {
	local secs=$1 what=$2; shift 2
	local deadline=$((SECONDS + secs))
	until "$@"; do
		[ "$SECONDS" -lt "$deadline" ] || { say "timed out after ${secs}s waiting for $what"; return 1; }
		sleep 0.2
	done
}

gone() { ! pid >/dev/null; }

install_data() {
	mkdir -p "$DIR"
	[ "$(id -u)" != 0 ] || chown "$RUN_AS" "$DIR"
	as "$MARIADB_INSTALL_DB" --no-defaults --datadir="$DIR/data" \
		--auth-root-authentication-method=normal --skip-test-db >"$DIR/install.log" 2>&1 ||
		die "mariadb-install-db failed; see $DIR/install.log"
}

start() {
	if up; then
		dsn
		return
	fi
	if p=$(pid); then
		die "pid $p serves $DIR/data but does not answer on port $PORT"
	fi
	if (exec 3<>"/dev/tcp/$HOST/$PORT") 2>/dev/null; then
		die "port $PORT is taken by another process"
	fi
	[ -d "$DIR/data/mysql" ] || install_data
	# setsid: an interrupt of the caller does not reach the server.
	as setsid "$MARIADBD" --no-defaults --datadir="$DIR/data" \
		--port="$PORT" --bind-address="$HOST" --skip-name-resolve \
		--socket="$DIR/mariadbd.sock" --pid-file="$DIR/mariadbd.pid" --log-error="$DIR/error.log" \
		--innodb-flush-log-at-trx-commit=1 --skip-log-bin --max-connections=300 \
		--innodb-buffer-pool-size=64M </dev/null >/dev/null 2>&1 &
	until_ok "$WAIT" "mariadbd on port $PORT (see $DIR/error.log)" up
	# The data directory's root is root@localhost; loopback TCP connects
	# as root@127.0.0.1, and the tests want a database named test.
	timeout 10 "$MARIADB" --no-defaults -S "$DIR/mariadbd.sock" -u root -e \
		"CREATE USER IF NOT EXISTS 'root'@'127.0.0.1'; GRANT ALL ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION; CREATE DATABASE IF NOT EXISTS test" ||
		die "could not create root@127.0.0.1 and the test database"
	dsn
}

kill9() {
	local p
	p=$(pid) || die "no mariadbd of $DIR is running"
	kill -KILL "$p"
	until_ok "$WAIT" "pid $p to die" gone
}

stop() {
	local p
	if p=$(pid); then
		kill -TERM "$p"
		until_ok "$WAIT" "pid $p to shut down" gone || { kill -KILL "$p"; until_ok "$WAIT" "pid $p to die" gone; }
	fi
	rm -rf "$DIR"
}

case "${1:-}" in
start) start ;;
status) up ;;
kill) kill9 ;;
stop) stop ;;
*) die "usage: $0 start|status|kill|stop" ;;
esac
