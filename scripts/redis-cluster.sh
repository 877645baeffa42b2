#!/usr/bin/env bash
# redis-cluster.sh: a local Redis Cluster on loopback for idem's tests and CI.
#
#   scripts/redis-cluster.sh start    start 6 nodes (3 masters, 3 replicas), print the seed addresses
#   scripts/redis-cluster.sh status   one line per node; exit 0 only if the cluster is healthy
#   scripts/redis-cluster.sh stop     stop exactly the nodes this script started, remove their directory
#   scripts/redis-cluster.sh kill PORT   SIGKILL the node on PORT (a failover drill)
#   scripts/redis-cluster.sh pause PORT  SIGSTOP the node on PORT (it falls behind; resume it)
#   scripts/redis-cluster.sh resume PORT SIGCONT the node on PORT
#   scripts/redis-cluster.sh heal     resume paused nodes, restart dead ones, wait until every master has its replica
#
# The nodes run the machine's redis-server (REDIS_SERVER, REDIS_CLI override
# the binaries) on 127.0.0.1, ports IDEM_REDIS_PORTS (default 7101-7106; the
# cluster bus uses each port + 10000), with no persistence and a short
# cluster-node-timeout (IDEM_REDIS_NODE_TIMEOUT ms, default 1000), so that a
# killed master's replica is promoted within a few seconds. Their files live
# in IDEM_REDIS_CLUSTER_DIR (default $TMPDIR/idem-redis-cluster-<first port>);
# each node's pid file there is how stop and kill find exactly the processes
# start launched.
#
# start is idempotent: a healthy cluster already running is left alone and
# its seeds printed again. Every wait is bounded (IDEM_REDIS_WAIT seconds,
# default 30). The seed addresses, comma-separated, are the last line of
# start's standard output, ready for IDEM_TEST_REDIS:
#
#   export IDEM_TEST_REDIS=$(scripts/redis-cluster.sh start | tail -n 1)
set -euo pipefail

REDIS_SERVER=${REDIS_SERVER:-redis-server}
REDIS_CLI=${REDIS_CLI:-redis-cli}
read -r -a PORTS <<<"${IDEM_REDIS_PORTS:-7101 7102 7103 7104 7105 7106}"
NODE_TIMEOUT=${IDEM_REDIS_NODE_TIMEOUT:-1000}
WAIT=${IDEM_REDIS_WAIT:-30}
DIR=${IDEM_REDIS_CLUSTER_DIR:-${TMPDIR:-/tmp}/idem-redis-cluster-${PORTS[0]}}
HOST=127.0.0.1

say() { printf 'redis-cluster: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

cli() { # cli PORT ARGS...: one command to one node, bounded by a timeout
	local port=$1; shift
	timeout 5 "$REDIS_CLI" -h "$HOST" -p "$port" "$@" 2>/dev/null
}

seeds() {
	local out="" p
	for p in "${PORTS[@]}"; do out+="${out:+,}$HOST:$p"; done
	printf '%s\n' "$out"
}

pidof_node() { # the pid recorded for PORT, if that process is still our redis-server
	local port=$1 f="$DIR/$1/redis.pid" pid
	[ -f "$f" ] || return 1
	pid=$(<"$f")
	[ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
	# The pid must still be the redis-server started in this node's
	# directory (redis-server makes its dir its working directory), not a
	# recycled pid of something else.
	grep -q '^redis-server' "/proc/$pid/comm" 2>/dev/null || return 1
	[ "$(readlink -f "/proc/$pid/cwd" 2>/dev/null)" = "$(readlink -f "$DIR/$port")" ] || return 1
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

write_config() {
	local port=$1 d="$DIR/$1"
	mkdir -p "$d"
	cat >"$d/redis.conf" <<EOF
port $port
bind $HOST
protected-mode yes
dir $d
pidfile $d/redis.pid
logfile $d/redis.log
daemonize yes
cluster-enabled yes
cluster-config-file $d/nodes.conf
cluster-node-timeout $NODE_TIMEOUT
# A replica takes over however long ago it last heard from its master: the
# point is to see failovers.
cluster-replica-validity-factor 0
save ""
appendonly no
maxmemory-policy noeviction
EOF
}

start_node() {
	local port=$1
	"$REDIS_SERVER" "$DIR/$port/redis.conf" >/dev/null
	until_ok "$WAIT" "node $port to answer" node_up "$port"
}

node_up() { [ "$(cli "$1" ping)" = PONG ]; }

node_healthy() { # cluster_state ok, every slot assigned and ok
	local info
	info=$(cli "$1" cluster info | tr -d '\r') || return 1
	grep -q '^cluster_state:ok$' <<<"$info" &&
		grep -q '^cluster_slots_assigned:16384$' <<<"$info" &&
		grep -q '^cluster_slots_ok:16384$' <<<"$info"
}

# replicated: 3 masters and each has a replica whose link is up, as every
# node sees it, and the nodes agree on their roles.
replicated() {
	local p nodes masters
	for p in "${PORTS[@]}"; do
		node_healthy "$p" || return 1
		nodes=$(cli "$p" cluster nodes) || return 1
		grep -q 'fail' <<<"$nodes" && return 1
		masters=$(awk '$3 ~ /master/ && $8 == "connected" {print $1}' <<<"$nodes")
		[ "$(wc -l <<<"$masters")" -eq $((${#PORTS[@]} / 2)) ] || return 1
		for m in $masters; do
			awk -v m="$m" '$4 == m && $8 == "connected"' <<<"$nodes" | grep -q . || return 1
		done
	done
	for p in "${PORTS[@]}"; do
		if cli "$p" role | head -n 1 | grep -q slave; then
			cli "$p" info replication | tr -d '\r' | grep -q '^master_link_status:up$' || return 1
		fi
	done
}

# failed_over PORT: a surviving node's view lists no slots for PORT.
failed_over() {
	local port=$1 p nodes
	for p in "${PORTS[@]}"; do
		[ "$p" = "$port" ] && continue
		nodes=$(cli "$p" cluster nodes) || continue
		awk -v a="$HOST:$port@" 'index($2, a) == 1 && NF > 8 { found = 1 } END { exit found }' <<<"$nodes"
		return
	done
	return 1
}

cmd_status() {
	local p pid role state ok=0
	for p in "${PORTS[@]}"; do
		if pid=$(pidof_node "$p"); then
			role=$(cli "$p" role | head -n 1) || role="?"
			state=$(cli "$p" cluster info | tr -d '\r' | sed -n 's/^cluster_state://p') || state="?"
			printf '%s:%s pid=%s role=%s cluster_state=%s\n' "$HOST" "$p" "$pid" "${role:-?}" "${state:-?}"
		else
			printf '%s:%s not running\n' "$HOST" "$p"
			ok=1
		fi
	done
	[ "$ok" -eq 0 ] && replicated
}

cmd_stop() {
	local p pid
	[ -d "$DIR" ] || return 0
	for p in "${PORTS[@]}"; do
		pid=$(pidof_node "$p") || continue
		kill -TERM "$pid" 2>/dev/null || true
		if ! until_ok 10 "node $p to exit" gone "$pid"; then
			kill -KILL "$pid" 2>/dev/null || true
		fi
	done
	rm -rf -- "$DIR"
	say "stopped; removed $DIR"
}

cmd_start() {
	[ "${#PORTS[@]}" -eq 6 ] || die "IDEM_REDIS_PORTS must name 6 ports"
	command -v "$REDIS_SERVER" >/dev/null || die "no $REDIS_SERVER on PATH"
	command -v "$REDIS_CLI" >/dev/null || die "no $REDIS_CLI on PATH"
	if [ -d "$DIR" ]; then
		if cmd_status >/dev/null 2>&1; then
			say "already running in $DIR"
			seeds
			return 0
		fi
		say "a previous cluster in $DIR is not healthy: stopping it"
		cmd_stop
	fi
	local p
	for p in "${PORTS[@]}"; do
		port_busy "$p" && die "port $p is in use"
		port_busy $((p + 10000)) && die "port $((p + 10000)) (cluster bus of $p) is in use"
	done
	mkdir -p "$DIR"
	for p in "${PORTS[@]}"; do
		write_config "$p"
		start_node "$p"
	done
	local addrs=()
	for p in "${PORTS[@]}"; do addrs+=("$HOST:$p"); done
	timeout "$WAIT" "$REDIS_CLI" --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes >"$DIR/create.log" 2>&1 ||
		{ cat "$DIR/create.log" >&2; die "redis-cli --cluster create failed"; }
	until_ok "$WAIT" "every node to report cluster_state:ok and every master a replica" replicated
	say "running in $DIR (cluster-node-timeout ${NODE_TIMEOUT} ms)"
	seeds
}

cmd_kill() {
	local port=${1:?kill needs a port} pid
	pid=$(pidof_node "$port") || die "no node of this cluster runs on port $port"
	kill -KILL "$pid"
	say "killed node $port (pid $pid)"
}

cmd_signal() { # cmd_signal SIGNAL VERB PORT
	local sig=$1 verb=$2 port=${3:?$2 needs a port} pid
	pid=$(pidof_node "$port") || die "no node of this cluster runs on port $port"
	kill "-$sig" "$pid"
	say "$verb node $port (pid $pid)"
}

cmd_heal() {
	[ -d "$DIR" ] || die "no cluster in $DIR: run start"
	local p pid
	for p in "${PORTS[@]}"; do
		if pid=$(pidof_node "$p"); then
			kill -CONT "$pid" # a node left paused
		else
			port_busy "$p" && die "port $p is in use by a process this script did not start"
			# Without persistence a restarted node is empty: restarted while
			# it still owns slots, it would keep them, and its replica would
			# resynchronise from it and lose the shard. Wait for the failover.
			until_ok "$WAIT" "another node to take over the slots of node $p" failed_over "$p"
			start_node "$p"
			say "restarted node $p"
		fi
	done
	until_ok "$WAIT" "every node to report cluster_state:ok and every master a replica" replicated
	seeds
}

case "${1:-}" in
start) cmd_start ;;
stop) cmd_stop ;;
status) cmd_status ;;
kill) cmd_kill "${2:-}" ;;
pause) cmd_signal STOP paused "${2:-}" ;;
resume) cmd_signal CONT resumed "${2:-}" ;;
heal) cmd_heal ;;
*) die "usage: $0 start|status|stop|kill PORT|pause PORT|resume PORT|heal" ;;
esac
