#!/usr/bin/env bash
# Named sequences at scale (make bench-sequences; make bench runs it too).
#
# On its own pair of ticket servers (scripts/db.sh, free ports, data in
# $OUT/seqvar), for N in BENCH_SEQ_COUNTS (100, 10,000, 100,000): the catalog
# is grown to N sequences s000001 … (block size 1000) with
# `ticketd sequence create -file`, then
#
#   seq_create_s_N          that create (the sequences added since the last N)
#   seq_start_s_N           ticketd start to /readyz 200
#   seq_first_value_ms_N    `ticketd sequence create` of a new sequence to its
#                           first value over HTTP, ticketd running
#   seq_p99_us_N            /v1/tickets/{name} with wrk, a random name of the N
#                           each request (bench/wrk/sequences.lua), after every
#                           name was asked once (in use)
#   seq_rps_N               its requests per second
#   seq_idle_cpu_ticketd_N  CPU seconds per minute of ticketd idle (from /proc,
#   seq_idle_cpu_mariadb_N  after the load and a settling pause; the median of
#                           BENCH_SEQ_IDLE_ROUNDS windows); mariadb: the
#                           busier of the two servers (…_mariadb1_N, …_mariadb2_N)
#   seq_rss_mb_N            ticketd's resident memory then (every name in use)
#
# and the targets, at the largest N against 100 (seq_target_* lines: the
# figure, its bound, met or missed): start within ticketd's default
# -startup-timeout (10 s), idle CPU of ticketd and of each mariadbd at most 2×,
# p99 at most 1.5×, first value within 1 s.
#
# Rows go to $OUT/sequences.txt, a table to $OUT/sequences.md. Environment
# (defaults in brackets):
#   BENCH_OUT           output folder                                    [bench/out]
#   BENCH_SEQ_COUNTS    the N measured, increasing                       [100 10000 100000]
#   BENCH_SEQ_DURATION  seconds of the measured wrk run per N            [10]
#   BENCH_SEQ_IDLE      seconds of idle CPU measured per N: at least Go's
#                       forced-GC period (2 min), so that every window holds
#                       one collection of the heap, however big [120]
#   BENCH_SEQ_IDLE_ROUNDS  idle windows per N; each idle row is their median,
#                       so that one window a passing job disturbed does not
#                       decide a target (every window in raw/idle-N.txt)   [3]
#   BENCH_SEQ_SETTLE    seconds of quiet after the warm-up and before the
#                       idle measure                                     [15]
#   BENCH_CONNS, BENCH_THREADS  wrk connections and threads              [32, 1]
#   BENCH_BIN           folder with ticketd and benchtool already built  [build them]
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH=$REPO/bench
OUT=${BENCH_OUT:-$BENCH/out}
COUNTS=${BENCH_SEQ_COUNTS:-100 10000 100000}
DURATION=${BENCH_SEQ_DURATION:-10}
IDLE=${BENCH_SEQ_IDLE:-120}
IDLE_ROUNDS=${BENCH_SEQ_IDLE_ROUNDS:-3}
SETTLE=${BENCH_SEQ_SETTLE:-15}
CONNS=${BENCH_CONNS:-32}
THREADS=${BENCH_THREADS:-1}
GO=${GO:-go}

BENCH_NAME='bench sequences'
. "$BENCH/lib.sh"

bench_out sequences seqvar
exec 8>"$OUT/.seqlock"
flock -n 8 || die "another bench of sequences is running on $OUT"

apt_install wrk wrk
bench_bins

# --- everything started here is stopped on exit, by PID ----------------------
TICKETD_PID= DB_STARTED=
stop_ticketd() {
	local pid=$TICKETD_PID
	TICKETD_PID=
	stop_pid "$pid"
}
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	stop_ticketd
	pair_down
	[ "$rc" = 0 ] || say "failed (exit $rc); logs in $RAW"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ports=$("$TOOL" freeport 3) || die "no free ports"
read -r DB1_PORT DB2_PORT TICKETD_PORT <<<"$(echo $ports)"
ADDRS=127.0.0.1:$DB1_PORT,127.0.0.1:$DB2_PORT # not SERVERS: make exports that, and db.sh reads it as a number of servers
T=http://127.0.0.1:$TICKETD_PORT
dbsh down >/dev/null 2>&1 || true
rm -rf "$DBVAR"
DB_STARTED=1
say "ticket servers on $DB1_PORT and $DB2_PORT, ticketd on $TICKETD_PORT"
dbsh up >"$RAW/db.log" 2>&1 || {
	cat "$RAW/db.log" >&2
	die "starting the ticket servers failed"
}
export TICKETD_SEQUENCE_SERVERS=$ADDRS TICKETD_SEQUENCE_PASSWORD_FILE=$DBVAR/sequences.password

# CPU seconds (user + system) a process has used, from /proc.
TCK=$(getconf CLK_TCK)
cpu_of() { sed 's/^.*) //' "/proc/$1/stat" | awk -v t="$TCK" '{printf "%.3f", ($12 + $13) / t}'; }
db_pid() { tr -dc '0-9' <"$DBVAR/db$1/mariadbd.pid"; }

ROWS=$RAW/rows.txt
: >"$ROWS"
row() { echo "$1 $2" | tee -a "$ROWS" | sed 's/^/bench sequences:   /'; }

have=0
for n in $COUNTS; do
	say "N = $n"
	if [ "$n" -gt "$have" ]; then
		seq -f 's%06g' $((have + 1)) "$n" >"$RAW/names-$n.txt"
		t0=$(date +%s%N)
		"$BIN/ticketd" sequence create -file "$RAW/names-$n.txt" -block 1000 >"$RAW/create-$n.log" 2>&1 ||
			{ cat "$RAW/create-$n.log" >&2; die "creating the sequences failed"; }
		row "seq_create_s_$n" "$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN {printf "%.2f", (b - a) / 1e9}')"
		have=$n
	fi

	"$BIN/ticketd" serve -listen "127.0.0.1:$TICKETD_PORT" -servers "$ADDRS" \
		-password-file "$DBVAR/ticketd.password" -log-level warn </dev/null >"$RAW/ticketd-$n.log" 2>&1 &
	TICKETD_PID=$!
	ready=$("$TOOL" seqready -url "$T/readyz" -timeout 60s) || { cat "$RAW/ticketd-$n.log" >&2; die "ticketd not ready"; }
	row "seq_start_s_$n" "$(awk -v ms="${ready#ready_ms }" 'BEGIN {printf "%.2f", ms / 1000}')"

	first=$("$TOOL" seqfirst -ticketd "$BIN/ticketd" -servers "$ADDRS" -name "first_$n" -url "$T/v1/tickets/first_$n") ||
		die "first value of a new sequence failed"
	row "seq_first_value_ms_$n" "$(awk '$1 == "first_value_ms" {print $2}' <<<"$first")"

	"$TOOL" seqwarm -url-prefix "$T/v1/tickets/" -count "$n" -c "$CONNS" >"$RAW/warm-$n.txt" || die "warming the sequences failed"
	sleep "$SETTLE" # the first use's marks written and blocks fetched: the run below measures the steady state
	wrk -t"$THREADS" -c"$CONNS" -d2s -s "$BENCH/wrk/sequences.lua" "$T" -- "$n" >"$RAW/wrk-warmup-$n.txt" 2>&1 || die "wrk failed"
	wrk -t"$THREADS" -c"$CONNS" -d"${DURATION}s" -s "$BENCH/wrk/sequences.lua" "$T" -- "$n" >"$RAW/wrk-$n.txt" 2>&1 || die "wrk failed"
	line=$(grep '^RESULT ' "$RAW/wrk-$n.txt") || die "no RESULT in $RAW/wrk-$n.txt"
	read -r p99 rps errors non2xx <<<"$(awk '{for (i = 2; i <= NF; i++) {split($i, a, "="); v[a[1]] = a[2]}
		printf "%d %.0f %d %d", v["p99_us"], v["requests"] / (v["duration_us"] / 1e6), v["errors"], v["non2xx"]}' <<<"$line")"
	[ "$errors" = 0 ] && [ "$non2xx" = 0 ] || die "wrk saw $errors errors and $non2xx non-2xx answers at N = $n"
	row "seq_p99_us_$n" "$p99"
	row "seq_rps_$n" "$rps"

	sleep "$SETTLE" # quiet: the marks of the load flushed, nothing in flight
	per_min() { awk -v a="$1" -v b="$2" -v s="$IDLE" 'BEGIN {printf "%.3f", (b - a) * 60 / s}'; }
	: >"$RAW/idle-$n.txt"
	for ((w = 1; w <= IDLE_ROUNDS; w++)); do # the idle windows, back to back
		a0=$(cpu_of "$TICKETD_PID") b0=$(cpu_of "$(db_pid 1)") c0=$(cpu_of "$(db_pid 2)")
		sleep "$IDLE"
		a1=$(cpu_of "$TICKETD_PID") b1=$(cpu_of "$(db_pid 1)") c1=$(cpu_of "$(db_pid 2)")
		echo "$(per_min "$a0" "$a1") $(per_min "$b0" "$b1") $(per_min "$c0" "$c1")" >>"$RAW/idle-$n.txt"
	done
	median() { sort -g | awk '{v[NR] = $1} END {printf "%.3f", (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2)}'; }
	t=$(awk '{print $1}' "$RAW/idle-$n.txt" | median)
	m1=$(awk '{print $2}' "$RAW/idle-$n.txt" | median)
	m2=$(awk '{print $3}' "$RAW/idle-$n.txt" | median)
	say "  idle windows (ticketd, mariadbd 1, mariadbd 2, s/min): $(tr '\n' ';' <"$RAW/idle-$n.txt")"
	row "seq_idle_cpu_ticketd_$n" "$t"
	row "seq_idle_cpu_mariadb1_$n" "$m1"
	row "seq_idle_cpu_mariadb2_$n" "$m2"
	row "seq_idle_cpu_mariadb_$n" "$(awk -v a="$m1" -v b="$m2" 'BEGIN {print (a > b ? a : b)}')"
	row "seq_rss_mb_$n" "$(awk '/^VmRSS:/ {printf "%.0f", $2 / 1024}' "/proc/$TICKETD_PID/status")"
	grep -q 'level=ERROR' "$RAW/ticketd-$n.log" && say "ticketd logged errors at N = $n (see $RAW/ticketd-$n.log)"
	stop_ticketd
done

# --- targets: the largest N against the smallest --------------------------------
set -- $COUNTS
lo=$1
hi=${!#}
val() { awk -v k="$1" '$1 == k {print $2}' "$ROWS"; }
target() { # target NAME VALUE BOUND: met when VALUE <= BOUND
	local verdict=missed
	awk -v v="$2" -v b="$3" 'BEGIN {exit !(v <= b)}' && verdict=met
	row "seq_target_$1" "$2 <= $3 $verdict"
}
if [ "$lo" != "$hi" ]; then
	target "start_s_$hi" "$(val "seq_start_s_$hi")" 10
	target "first_value_ms_$hi" "$(val "seq_first_value_ms_$hi")" 1000
	for k in ticketd mariadb1 mariadb2; do
		target "idle_cpu_${k}_ratio" "$(awk -v a="$(val "seq_idle_cpu_${k}_$hi")" -v b="$(val "seq_idle_cpu_${k}_$lo")" 'BEGIN {printf "%.2f", (b > 0 ? a / b : 0)}')" 2
	done
	target "p99_ratio" "$(awk -v a="$(val "seq_p99_us_$hi")" -v b="$(val "seq_p99_us_$lo")" 'BEGIN {printf "%.2f", (b > 0 ? a / b : 0)}')" 1.5
fi

cp "$ROWS" "$OUT/sequences.txt"
{
	echo "# Named sequences at scale"
	echo
	echo "$(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); wrk -t$THREADS -c$CONNS -d${DURATION}s over random names, idle: median of $IDLE_ROUNDS windows of ${IDLE}s"
	echo
	printf '| N |'
	for n in $COUNTS; do printf ' %s |' "$n"; done
	echo
	printf '|---|'
	for n in $COUNTS; do printf -- '---|'; done
	echo
	for m in create_s start_s first_value_ms p99_us rps idle_cpu_ticketd idle_cpu_mariadb1 idle_cpu_mariadb2 rss_mb; do
		printf '| seq_%s |' "$m"
		for n in $COUNTS; do printf ' %s |' "$(val "seq_${m}_$n")"; done
		echo
	done
	echo
	grep '^seq_target_' "$ROWS" | sed 's/^/    /' || true
} >"$OUT/sequences.md"
say "rows: $OUT/sequences.txt, table: $OUT/sequences.md"
