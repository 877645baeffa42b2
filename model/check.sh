#!/usr/bin/env bash
# Checks the Promela model of idem's protocol with spin.
#
# First the real model: every property, exhaustively, in each server
# design (LEASE, LEASE_TX, ADVISORY, PIPELINED: ADVISORY's claim sent with
# the handler's first statement; REDIS in a section of its own). Then each
# mutant, a variant that brings back a known bug: spin must find a
# counterexample, and it must break the property the bug is about. Then
# the known limit (an effect outside the transaction), whose
# counterexample is printed, shortened to the steps of the story. The
# second hop (-DPROVIDER: the handler calls a provider B, itself behind
# idem, with a key derived from its own) is checked with the real model,
# and its mutants with the others.
#
# Exits non-zero if the real model has an error, a search is incomplete, or
# a mutant is not caught. Usage: model/check.sh [-v]  (-v prints every
# counterexample's story, not only the limits'). Environment: MAXF, faults
# per run (default 2); JOBS, searches at once (default 2); P2_WITH_OTHER=1
# checks P2 with the other client too (some thirty times the states).
set -euo pipefail
cd "$(dirname "$0")"

verbose=0
[ "${1:-}" = "-v" ] && verbose=1

if ! command -v spin >/dev/null 2>&1; then
	echo "installing spin"
	sudo=""
	[ "$(id -u)" -ne 0 ] && sudo=sudo
	$sudo apt-get update -qq >/dev/null
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq spin >/dev/null
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp ./*.pml "$work"/
cd "$work"

# Memory bound of each search, in MB; depth bound; faults in one run;
# searches run at once (one per core). Every search runs under nice: the
# machine may be shared.
MEMLIM=1024
DEPTH=10000
MAXF=${MAXF:-2}
JOBS=${JOBS:-2}
other=-DNO_OTHER
[ "${P2_WITH_OTHER:-}" = 1 ] && other=-DWITH_OTHER

# The text of the error each property reports, as pan prints it.
declare -A sign=(
	[P1]='assertion violated \(commits\[k\]==0\)'
	[P2]='acceptance cycle'
	[P3]='assertion violated \(\(a?fp==[01]?f?p?\)&&\(e==committed'
	[P4]='assertion violated \(sc=='
	[P5]='assertion violated.*(wtok\[\(1-w\)\]|lock\[k\]==\(w\+1\))'
	[LIMIT]='assertion violated \(ext\[k\]<=1\)'
	[P1B]='assertion violated \(bfx\[k\]<=1\)'
	[P2B]='assertion violated \(bfx\[k\]==1\)'
	[P6]='assertion violated \(fp==ffp\[k\]\)'
	[P1W]='assertion violated \(dbfx\[k\]<=1\)'
	[EXT1]='assertion violated \(ext\[k\]<=1\)'
)

# check N NAME EXPECT MODE DEFINES... runs one search in its own directory
# and writes its report to N.out, and N.fail if it failed.
#   EXPECT: pass, or the property whose counterexample must be found
#   MODE:   safety (assertions), liveness (P2 under weak fairness), or
#           shortest (assertions, breadth-first: the shortest trail)
check() {
	local n=$1 name=$2 expect=$3 mode=$4
	shift 4
	local defs=("$@" "-DMAXF=$MAXF") cc=(-O0 -w "-DMEMLIM=$MEMLIM") run=(-m"$DEPTH")
	local hash=-w18 t0 out="" cpu
	[ "$expect" = pass ] && hash=-w22   # a full search: room for millions of states
	mkdir "run$n"
	cd "run$n"
	cp ../*.pml .
	case $mode in
	safety) cc+=(-DNOCLAIM -DSAFETY); run+=("$hash") ;;
	shortest) cc+=(-DNOCLAIM -DSAFETY -DBFS); run+=("$hash") ;;
	liveness) defs+=(-DLIVENESS); cc+=(-DNFAIR=3); run+=(-a -f "$hash" -N no_op_lost) ;;
	esac
	t0=$(date +%s.%N)
	local TIMEFORMAT='%3U %3S'
	cpu=$( { time {
		if nice -n 10 spin -a "${defs[@]}" idem.pml >spin.log 2>&1 && nice -n 10 gcc "${cc[@]}" -o pan pan.c >gcc.log 2>&1; then
			nice -n 10 ./pan "${run[@]}" >pan.log 2>&1 || true
		fi
	} ; } 2>&1 | awk '{ printf "%.1f", $1 + $2 }')
	[ -f pan.log ] && out=$(cat pan.log)
	local secs states trans depth errors result ok=1
	secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	states=$(grep -Eo '^ *[0-9.e+]+ states, stored' <<<"$out" | awk '{print $1}')
	trans=$(grep -Eo '^ *[0-9.e+]+ transitions' <<<"$out" | awk '{print $1}')
	depth=$(grep -Eo 'depth reached [0-9]+' <<<"$out" | awk '{print $3}')
	errors=$(grep -Eo 'errors: [0-9]+' <<<"$out" | awk '{print $2}')
	if [ ! -f pan.log ]; then
		result="BROKEN"; ok=0   # the model or pan did not compile
		out=$(cat spin.log gcc.log 2>/dev/null | head -20)
	elif grep -Eq 'reached -DMEMLIM|depth too small|out of memory' <<<"$out"; then
		result="INCOMPLETE"; ok=0
	elif [ "$expect" = pass ]; then
		if [ "${errors:-1}" = 0 ]; then result="ok"; else result="ERROR"; ok=0; fi
	elif [ "${errors:-0}" = 0 ]; then
		result="MISSED"; ok=0
	elif grep -Eq "${sign[$expect]}" <<<"$out"; then
		result="caught"
	else
		result="OTHER"; ok=0   # a counterexample, but not to the property named
	fi
	{
		printf '%-62s %-8s %10s %12s %6s %6s %6s\n' "$name" "$result" "${states:-?}" "${trans:-?}" "${depth:-?}" "$cpu" "$secs"
		if [ $ok = 0 ]; then
			grep -E '^pan|errors:|Warning|rror' <<<"$out" | sed 's/^/    /'
		fi
		if [ -f idem.pml.trail ] && { [ $verbose = 1 ] || [ $ok = 0 ] || [ "$expect" = LIMIT ]; }; then
			echo "    counterexample ($(grep -Eo '^pan:1: .*\(at depth [0-9]+\)' <<<"$out" | head -1 | sed 's/^pan:1: //')):"
			spin -t "${defs[@]}" idem.pml 2>/dev/null |
				grep -Ev '^(spin:|ltl |#processes|[0-9]+ process|\s+[0-9]+:\s+proc|\s*$)|^\s+\S+ = |queue [0-9]' |
				sed 's/^ */      /'
		fi
	} >"../$n.out"
	[ $ok = 1 ] || touch "../$n.fail"
	cd ..
	rm -rf "run$n"
}

# Searches run in the background, JOBS at a time; reports are printed in
# order as they come in.
n=0
shown=0
show() {
	while [ -f "$((shown + 1)).done" ]; do
		shown=$((shown + 1))
		cat "$shown.out"
	done
}
queue() {
	n=$((n + 1))
	while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do
		wait -n || true
		show
	done
	(check "$n" "$@" || touch "$n.fail"; touch "$n.done") &
}
section() {
	n=$((n + 1))
	printf '\n%s\n' "$*" >"$n.out"
	touch "$n.done"
}

start=$SECONDS
echo "faults per run: $MAXF"
printf '%-62s %-8s %10s %12s %6s %6s %6s\n' "run" "result" "states" "transitions" "depth" "cpu s" "wall s"
section "The real model: P1 P3 P4 P5 (assertions) and P2 (no operation lost)"
for d in LEASE LEASE_TX ADVISORY; do
	queue "$d: P1 P3 P4 P5" pass safety "-DDESIGN=$d"
done
queue "PIPELINED: P1 P1W P3 P4 P5" pass safety -DDESIGN=PIPELINED
for d in LEASE LEASE_TX ADVISORY PIPELINED; do
	queue "$d: P2, weak fairness" pass liveness "-DDESIGN=$d" "$other"
	queue "$d: P2, weak fairness, time stands still" pass liveness "-DDESIGN=$d" "$other" -DNO_EXPIRY
done
queue "ADVISORY, lookup in the lock's statement: the key keeps P1" pass safety \
	-DDESIGN=ADVISORY -DMUT_SAME_STMT -DNO_P5
queue "ADVISORY, no connection lost: the outside call is made once" pass safety \
	-DDESIGN=ADVISORY -DOUTSIDE -DLIMIT -DNO_WCRASH -DNO_RESTART
queue "PIPELINED, no connection lost: call after statement made once" pass safety \
	-DDESIGN=PIPELINED -DOUTSIDE -DLIMIT -DNO_WCRASH -DNO_RESTART

section "Redis: a failover loses what the master had not replicated"
queue "REDIS, WaitReplicas: P1 P3 P4 P5 P6" pass safety -DDESIGN=REDIS -DWAIT_REPLICAS
queue "REDIS, WaitReplicas: P2, weak fairness" pass liveness -DDESIGN=REDIS -DWAIT_REPLICAS "$other"
queue "REDIS without WaitReplicas: an answered outcome lost -> P1" P1 safety -DDESIGN=REDIS

section "The second hop: the handler calls provider B with a key derived from its own"
for d in LEASE LEASE_TX ADVISORY PIPELINED; do
	queue "$d + B: P1B P2B, and P1 P3 P4 P5" pass safety "-DDESIGN=$d" -DPROVIDER
done
for d in LEASE LEASE_TX ADVISORY PIPELINED; do
	queue "$d + B: P2, weak fairness" pass liveness "-DDESIGN=$d" -DPROVIDER "$other"
	queue "$d + B: P2, weak fairness, time stands still" pass liveness "-DDESIGN=$d" -DPROVIDER "$other" -DNO_EXPIRY
done

section "Mutants: each must break the property named"
# Unfenced, a stale worker's outcome lands on another request's record
# too (P6): checked with P6 off, for the double commit.
queue "unfenced completion (LEASE_TX) -> P1" P1 safety -DDESIGN=LEASE_TX -DMUT_UNFENCED -DNO_P6
queue "unfenced completion (LEASE) -> P1" P1 safety -DDESIGN=LEASE -DMUT_UNFENCED -DNO_P6
queue "claim as check-then-insert (LEASE_TX) -> P1" P1 safety -DDESIGN=LEASE_TX -DMUT_CHECK_THEN_INSERT
queue "claim takes a live lease over (LEASE_TX) -> P5" P5 safety -DDESIGN=LEASE_TX -DMUT_NO_LEASE_CHECK
queue "journal written after the first attempt -> P2" P2 liveness -DDESIGN=LEASE_TX -DNO_OTHER -DMUT_JOURNAL_AFTER
queue "Resume re-sends an expired operation (LEASE_TX) -> P1" P1 safety -DDESIGN=LEASE_TX -DMUT_RESUME_EXPIRED
queue "Resume re-sends an expired operation (ADVISORY) -> P1" P1 safety -DDESIGN=ADVISORY -DMUT_RESUME_EXPIRED
queue "replay ignores the fingerprint (LEASE_TX) -> P3" P3 safety -DDESIGN=LEASE_TX -DMUT_REPLAY_NO_FP
queue "replay ignores the fingerprint (ADVISORY) -> P3" P3 safety -DDESIGN=ADVISORY -DMUT_REPLAY_NO_FP
queue "lookup in the lock's statement (ADVISORY) -> P5" P5 safety -DDESIGN=ADVISORY -DMUT_SAME_STMT
queue "lookup in the lock's statement, no primary key -> P1" P1 safety \
	-DDESIGN=ADVISORY -DMUT_SAME_STMT -DMUT_NO_PK -DNO_P5
queue "records keyed without the scope (LEASE_TX) -> P4" P4 safety -DDESIGN=LEASE_TX -DMUT_NO_SCOPE
queue "Release without the record's state check, a commit's reply lost (LEASE_TX) -> P1" P1 safety \
	-DDESIGN=LEASE_TX -DMUT_RELEASE_NO_STATE
queue "a takeover that ignores the fingerprint (LEASE) -> P6" P6 safety -DDESIGN=LEASE -DMUT_TAKEOVER_NO_FP
queue "a takeover that ignores the fingerprint (LEASE_TX) -> P6" P6 safety -DDESIGN=LEASE_TX -DMUT_TAKEOVER_NO_FP
for d in LEASE LEASE_TX ADVISORY; do
	queue "a fresh key for B on every run ($d + B) -> P1B" P1B safety "-DDESIGN=$d" -DPROVIDER -DMUT_FRESH_KEY
done
queue "the handler goes on without B's answer (LEASE_TX + B) -> P2B" P2B safety \
	-DDESIGN=LEASE_TX -DPROVIDER -DMUT_B_UNCHECKED
# The pipelined claim: its condition (no outside call before the first
# statement returned), and PostgreSQL's skip of a pipeline after an error.
queue "a call before the first statement (PIPELINED) -> EXT1" EXT1 safety \
	-DDESIGN=PIPELINED -DOUTSIDE -DLIMIT -DNO_WCRASH -DNO_RESTART -DMUT_OUTSIDE_FIRST
queue "the statement not skipped after a raise (PIPELINED) -> P5" P5 safety \
	-DDESIGN=PIPELINED -DMUT_NO_SKIP
queue "the same, P5 off: its write commits on its own -> P1W" P1W safety \
	-DDESIGN=PIPELINED -DMUT_NO_SKIP -DNO_P5
queue "guard in the lock's statement (PIPELINED) -> P5" P5 safety -DDESIGN=PIPELINED -DMUT_SAME_STMT
queue "replay ignores the fingerprint (PIPELINED) -> P3" P3 safety -DDESIGN=PIPELINED -DMUT_REPLAY_NO_FP

section "Known limit: a call the handler makes outside the transaction can repeat"
queue "LEASE, no crash, no restart: a worker paused past its lease" LIMIT shortest \
	-DDESIGN=LEASE -DLIMIT -DNO_WCRASH -DNO_RESTART -DNO_OTHER
queue "ADVISORY, no crash: a connection lost under a live worker" LIMIT shortest \
	-DDESIGN=ADVISORY -DOUTSIDE -DLIMIT -DNO_WCRASH -DNO_OTHER
queue "PIPELINED, no crash: a connection lost after the statement" LIMIT shortest \
	-DDESIGN=PIPELINED -DOUTSIDE -DLIMIT -DNO_WCRASH -DNO_OTHER

wait
show
echo
if [ "$shown" != "$n" ]; then
	echo "model: FAILED: $((n - shown)) runs gave no report"
	exit 1
fi
if ! ls ./*.fail >/dev/null 2>&1; then
	echo "model: all checks passed in $((SECONDS - start)) s"
else
	echo "model: FAILED (see above) after $((SECONDS - start)) s"
	exit 1
fi
