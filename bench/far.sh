#!/usr/bin/env bash
# Named sequences across a continent (make bench-far; make bench runs it too).
#
# On its own pair of ticket servers (scripts/db.sh, free ports, data in
# $OUT/farvar), behind toxiproxy (bin/toxiproxy-*, make toxiproxy): two proxies
# per server, one adding nothing ("near", 0 ms) and one adding 100 ms each way
# ("far", a 200 ms round trip). Three ticketd, each with a
# sequence of its own created with `ticketd sequence create -block 1000`:
#
#   near  through the 0 ms proxies, claims on (the defaults)
#   far   through the 200 ms proxies, claims on
#   base  through the 200 ms proxies, release 3's behaviour: -claim-max-values 0
#         (one block a round trip), or the ticketd in BENCH_FAR_BASELINE_BIN
#
# All three run at once, each on a port of its own. Each is warmed up (wrk,
# BENCH_FAR_WARMUP s), then BENCH_FAR_ROUNDS rounds each run wrk -c16 on
# /v1/tickets/NAME?n=1 for BENCH_FAR_DURATION s against near, far and base in
# turn, each round beginning with the next one (the machine is shared: a
# round's ratios compare runs seconds apart, and the medians keep one
# disturbed run from deciding):
#
#   far_rps_C, far_p50_us_C, far_p99_us_C   requests/s and latency, the median
#                                           of the rounds (raw/far/round-*.txt)
#   far_rps_ratio_C, far_p99_ratio_C        against near in the same round, the
#                                           median of the rounds
#   far_waits_C                             calls of the measured runs that waited
#                                           for a claim (ticketd_sequence_waits_total)
#   far_claim_blocks_C                      the last claim's size, in blocks
#   far_id_rps_C, far_id_p99_us_C           /v1/id (near and far, after the rounds):
#                                           the worker lease keeps its round trips
#                                           off the request path
#
# then, for far and then base, a burst after a lull: BENCH_FAR_STEADY s at a
# tenth of near's rate (benchtool rate), BENCH_FAR_LULL s (30) idle, then wrk
# -c16 for BENCH_FAR_BURST s, as fast as it goes (ten times the steady rate
# when it keeps up), then BENCH_FAR_IDLE s (60) idle:
#
#   far_lull_held_C                         values held after the lull
#   far_burst_rps_C, far_burst_p99_us_C     the burst
#   far_burst_waits_C                       calls of the burst that waited for a claim
#   far_idle_held_C                         values held after the idle minute
#
# and the targets (far_target_* lines: the figure, its bound, met or missed):
# far's requests/s at least 0.9 × near's, its p99 at most 1.5 × near's (the
# medians of the rounds' ratios), and at most a block and a half held after
# the idle minute.
#
# Rows go to $OUT/far.txt, a table to $OUT/far.md. Environment (defaults in
# brackets):
#   BENCH_OUT              output folder                               [bench/out]
#   BENCH_FAR_DURATION     seconds of each measured wrk run            [8]
#   BENCH_FAR_ROUNDS       rounds of near, far and base                [5]
#   BENCH_FAR_WARMUP       seconds of wrk before the first round       [5]
#   BENCH_FAR_STEADY, BENCH_FAR_LULL, BENCH_FAR_BURST, BENCH_FAR_IDLE
#                          seconds of the burst's phases               [10, 30, 5, 60]
#   BENCH_FAR_BASELINE_BIN a ticketd for the base column (release 3's, say)
#                          instead of -claim-max-values 0              []
#   BENCH_BIN              folder with ticketd and benchtool already built [build them]
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH=$REPO/bench
OUT=${BENCH_OUT:-$BENCH/out}
DURATION=${BENCH_FAR_DURATION:-8}
ROUNDS=${BENCH_FAR_ROUNDS:-5}
WARMUP=${BENCH_FAR_WARMUP:-5}
STEADY=${BENCH_FAR_STEADY:-10}
LULL=${BENCH_FAR_LULL:-30}
BURST=${BENCH_FAR_BURST:-5}
IDLE=${BENCH_FAR_IDLE:-60}
BASELINE_BIN=${BENCH_FAR_BASELINE_BIN:-}
BLOCK=1000
CONNS=16
GO=${GO:-go}

BENCH_NAME='bench far'
. "$BENCH/lib.sh"

bench_out far farvar
exec 9>"$OUT/.farlock"
flock -n 9 || die "another bench far is running on $OUT"

apt_install wrk wrk
command -v curl >/dev/null || die "curl is missing: apt-get install curl"
bench_bins
make -s -C "$REPO" toxiproxy GO="$GO" >/dev/null || die "installing toxiproxy failed (make toxiproxy)"
TOXI=$(ls "$REPO"/bin/toxiproxy-*/server | tail -1)

# --- everything started here is stopped on exit, by PID ----------------------
PIDS= TOXI_PID= DB_STARTED=
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	for pid in $PIDS; do stop_pid "$pid"; done
	stop_pid "$TOXI_PID"
	pair_down
	[ "$rc" = 0 ] || say "failed (exit $rc); logs in $RAW"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ports=$("$TOOL" freeport 10) || die "no free ports"
read -r DB1_PORT DB2_PORT PORT_near PORT_far PORT_base TP_PORT NEAR1 NEAR2 FAR1 FAR2 <<<"$(echo $ports)"
dbsh down >/dev/null 2>&1 || true
rm -rf "$DBVAR"
DB_STARTED=1
say "ticket servers on $DB1_PORT and $DB2_PORT, toxiproxy on $TP_PORT"
dbsh up >"$RAW/db.log" 2>&1 || {
	cat "$RAW/db.log" >&2
	die "starting the ticket servers failed"
}

"$TOXI" -host 127.0.0.1 -port "$TP_PORT" >"$RAW/toxiproxy.log" 2>&1 &
TOXI_PID=$!
"$TOOL" seqready -url "http://127.0.0.1:$TP_PORT/version" -timeout 10s >/dev/null || die "toxiproxy did not start"
toxi() { # toxi METHOD PATH JSON
	curl -fsS -X "$1" "http://127.0.0.1:$TP_PORT$2" -H 'Content-Type: application/json' -d "$3" >/dev/null ||
		die "toxiproxy $1 $2 failed"
}
toxi POST /proxies "{\"name\":\"near1\",\"listen\":\"127.0.0.1:$NEAR1\",\"upstream\":\"127.0.0.1:$DB1_PORT\"}"
toxi POST /proxies "{\"name\":\"near2\",\"listen\":\"127.0.0.1:$NEAR2\",\"upstream\":\"127.0.0.1:$DB2_PORT\"}"
toxi POST /proxies "{\"name\":\"far1\",\"listen\":\"127.0.0.1:$FAR1\",\"upstream\":\"127.0.0.1:$DB1_PORT\"}"
toxi POST /proxies "{\"name\":\"far2\",\"listen\":\"127.0.0.1:$FAR2\",\"upstream\":\"127.0.0.1:$DB2_PORT\"}"
for p in far1 far2; do
	for stream in upstream downstream; do
		toxi POST "/proxies/$p/toxics" "{\"name\":\"far-$stream\",\"type\":\"latency\",\"stream\":\"$stream\",\"toxicity\":1,\"attributes\":{\"latency\":100,\"jitter\":0}}"
	done
done

export TICKETD_SEQUENCE_SERVERS=127.0.0.1:$DB1_PORT,127.0.0.1:$DB2_PORT TICKETD_SEQUENCE_PASSWORD_FILE=$DBVAR/sequences.password
for c in near far base; do
	"$BIN/ticketd" sequence create "far_$c" -block "$BLOCK" >>"$RAW/create.log" 2>&1 || {
		cat "$RAW/create.log" >&2
		die "creating the sequences failed"
	}
done

ROWS=$RAW/rows.txt
: >"$ROWS"
row() { echo "$1 $2" | tee -a "$ROWS" | sed 's/^/bench far:   /'; }
val() { awk -v k="$1" '$1 == k {print $2}' "$ROWS"; }
field() { # field KEY LINE: the value of KEY=… in a RESULT or seqstat line
	awk -v k="$2" '{for (i = 1; i <= NF; i++) {split($i, a, "="); if (a[1] == k) print a[2]}}' <<<"$1"
}
wrk_run() { # wrk_run LABEL SECONDS URL: prints "rps p50 p99", fails on any error
	local out=$RAW/wrk-$1.txt line
	wrk -t1 -c"$CONNS" -d"${2}s" -s "$BENCH/wrk/result.lua" "$3" >"$out" 2>&1 || die "wrk failed ($out)"
	line=$(grep '^RESULT ' "$out") || die "no RESULT in $out"
	[ "$(field "$line" errors)" = 0 ] && [ "$(field "$line" non2xx)" = 0 ] || die "wrk saw errors or non-2xx answers ($out)"
	awk -v r="$(field "$line" requests)" -v d="$(field "$line" duration_us)" -v a="$(field "$line" p50_us)" -v b="$(field "$line" p99_us)" \
		'BEGIN {printf "%.0f %d %d", r / (d / 1e6), a, b}'
}
seqstat() { "$TOOL" seqstat -url "$(url "$1" /v1/status)" -name "far_$1"; }

start_ticketd() { # start_ticketd CONFIG PORT SERVERS BIN ARGS…: sets PID_<CONFIG>
	local c=$1 port=$2 servers=$3 bin=$4
	shift 4
	"$bin" serve -listen "127.0.0.1:$port" -servers "$servers" -password-file "$DBVAR/ticketd.password" \
		-log-level warn -startup-timeout 60s "$@" </dev/null >"$RAW/ticketd-$c.log" 2>&1 &
	printf -v "PID_$c" %s $!
	PIDS="$PIDS $!"
}

NEAR_SERVERS=127.0.0.1:$NEAR1,127.0.0.1:$NEAR2
FAR_SERVERS=127.0.0.1:$FAR1,127.0.0.1:$FAR2
base_args=(-claim-max-values 0) base_bin=$BIN/ticketd
if [ -n "$BASELINE_BIN" ]; then
	base_args=() base_bin=$BASELINE_BIN
fi
start_ticketd near "$PORT_near" "$NEAR_SERVERS" "$BIN/ticketd"
start_ticketd far "$PORT_far" "$FAR_SERVERS" "$BIN/ticketd"
start_ticketd base "$PORT_base" "$FAR_SERVERS" "$base_bin" "${base_args[@]}"
say "near on $PORT_near (servers $NEAR_SERVERS), far on $PORT_far and base on $PORT_base (servers $FAR_SERVERS; base:${base_args[*]:+ ${base_args[*]}}${BASELINE_BIN:+ $BASELINE_BIN})"
for c in near far base; do
	port_var=PORT_$c
	"$TOOL" seqready -url "http://127.0.0.1:${!port_var}/readyz" -timeout 90s >/dev/null || {
		cat "$RAW/ticketd-$c.log" >&2
		die "ticketd ($c) not ready"
	}
done
url() { local v=PORT_$1; echo "http://127.0.0.1:${!v}$2"; }
path() { echo "/v1/tickets/far_$1?n=1"; }

for c in near far base; do
	wrk_run "$c-warmup" "$WARMUP" "$(url "$c" "$(path "$c")")" >/dev/null
done
declare -A WAITS0
for c in near far base; do
	WAITS0[$c]=$(field "$(seqstat "$c")" waits)
done
: >"$RAW/rounds.txt"
order=(near far base)
for ((r = 1; r <= ROUNDS; r++)); do
	# Each round begins with the next configuration, so that none always
	# runs right after another's load.
	for ((i = 0; i < 3; i++)); do
		c=${order[(r - 1 + i) % 3]}
		read -r rps p50 p99 <<<"$(wrk_run "$c-round$r" "$DURATION" "$(url "$c" "$(path "$c")")")"
		echo "$r $c $rps $p50 $p99" >>"$RAW/rounds.txt"
	done
	say "  round $r: $(awk -v r="$r" '$1 == r {printf "%s %s req/s p99 %s us; ", $2, $3, $5}' "$RAW/rounds.txt")"
done
median() { sort -g | awk '{v[NR] = $1} END {if (NR) printf "%g", (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2)}'; }
col() { awk -v c="$1" -v k="$2" '$2 == c {print $k}' "$RAW/rounds.txt"; }
ratios() { # ratios CONFIG FIELD: CONFIG's FIELD over near's, round by round
	awk -v c="$1" -v k="$2" '$2 == "near" {n[$1] = $k} $2 == c {v[$1] = $k} END {for (r in v) if (n[r] > 0) printf "%.3f\n", v[r] / n[r]}' "$RAW/rounds.txt"
}
for c in near far base; do
	row "far_rps_$c" "$(col "$c" 3 | median | awk '{printf "%.0f", $1}')"
	row "far_p50_us_$c" "$(col "$c" 4 | median | awk '{printf "%.0f", $1}')"
	row "far_p99_us_$c" "$(col "$c" 5 | median | awk '{printf "%.0f", $1}')"
	if [ "$c" != near ]; then
		row "far_rps_ratio_$c" "$(ratios "$c" 3 | median | awk '{printf "%.2f", $1}')"
		row "far_p99_ratio_$c" "$(ratios "$c" 5 | median | awk '{printf "%.2f", $1}')"
	fi
	st=$(seqstat "$c")
	echo "$st" >"$RAW/seqstat-$c-rounds.txt"
	row "far_waits_$c" "$(($(field "$st" waits) - ${WAITS0[$c]}))"
	row "far_claim_blocks_$c" "$(field "$st" claim_blocks)"
done
for c in near far; do
	read -r rps _ p99 <<<"$(wrk_run "$c-id" 5 "$(url "$c" /v1/id)")"
	row "far_id_rps_$c" "$rps"
	row "far_id_p99_us_$c" "$p99"
done

rate=$(awk -v r="$(val far_rps_near)" 'BEGIN {printf "%.0f", r / 10}')
for c in far base; do
	say "$c: steady at $rate requests/s for ${STEADY}s, idle ${LULL}s, a burst for ${BURST}s, idle ${IDLE}s"
	"$TOOL" rate -url "$(url "$c" "$(path "$c")")" -rate "$rate" -d "${STEADY}s" -c 64 >"$RAW/steady-$c.txt" || die "the steady load failed"
	line=$(grep '^RESULT ' "$RAW/steady-$c.txt")
	[ "$(field "$line" errors)" = 0 ] && [ "$(field "$line" non2xx)" = 0 ] || die "the steady load saw errors ($RAW/steady-$c.txt)"
	sleep "$LULL"
	before=$(seqstat "$c")
	echo "$before" >"$RAW/seqstat-$c-lull.txt"
	row "far_lull_held_$c" "$(field "$before" held)"
	read -r rps _ p99 <<<"$(wrk_run "$c-burst" "$BURST" "$(url "$c" "$(path "$c")")")"
	after=$(seqstat "$c")
	echo "$after" >"$RAW/seqstat-$c-burst.txt"
	row "far_burst_rps_$c" "$rps"
	row "far_burst_p99_us_$c" "$p99"
	row "far_burst_waits_$c" "$(($(field "$after" waits) - $(field "$before" waits)))"
	sleep "$IDLE"
	st=$(seqstat "$c")
	echo "$st" >"$RAW/seqstat-$c-idle.txt"
	row "far_idle_held_$c" "$(field "$st" held)"
done
for c in near far base; do
	grep -q 'level=ERROR' "$RAW/ticketd-$c.log" && say "ticketd ($c) logged errors (see $RAW/ticketd-$c.log)"
done

# --- targets: far against near ------------------------------------------------------
target() { # target NAME VALUE OP BOUND: met when VALUE OP BOUND (>= or <=)
	local verdict=missed
	awk -v v="$2" -v b="$4" -v op="$3" 'BEGIN {exit !(op == ">=" ? v >= b : v <= b)}' && verdict=met
	row "far_target_$1" "$2 $3 $4 $verdict"
}
target rps_ratio "$(val far_rps_ratio_far)" ">=" 0.9
target p99_ratio "$(val far_p99_ratio_far)" "<=" 1.5
target idle_held "$(val far_idle_held_far)" "<=" $((BLOCK * 3 / 2))

cp "$ROWS" "$OUT/far.txt"
ms() { awk -v u="$1" 'BEGIN {if (u == "") print "—"; else if (u >= 1000) printf "%.1f ms", u / 1000; else printf "%d µs", u}'; }
cell() { local v; v=$(val "$1"); echo "${v:-—}"; }
{
	echo "# Named sequences across a continent"
	echo
	echo "$(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); a sequence with -block $BLOCK each," \
		"wrk -t1 -c$CONNS -d${DURATION}s on /v1/tickets/NAME?n=1, $ROUNDS rounds of near, far and base in turn each round beginning with the next (medians) after ${WARMUP}s of warm-up each;" \
		"the pair behind toxiproxy adding 0 ms or 100 ms each way"
	echo
	echo "| | near (0 ms) | far (200 ms round trip) | far, release 3's behaviour |"
	echo "|---|---|---|---|"
	echo "| requests/s | $(cell far_rps_near) | $(cell far_rps_far) ($(cell far_rps_ratio_far)×) | $(cell far_rps_base) ($(cell far_rps_ratio_base)×) |"
	echo "| p50 | $(ms "$(val far_p50_us_near)") | $(ms "$(val far_p50_us_far)") | $(ms "$(val far_p50_us_base)") |"
	echo "| p99 | $(ms "$(val far_p99_us_near)") | $(ms "$(val far_p99_us_far)") ($(cell far_p99_ratio_far)×) | $(ms "$(val far_p99_us_base)") ($(cell far_p99_ratio_base)×) |"
	echo "| calls that waited for a claim, all rounds | $(cell far_waits_near) | $(cell far_waits_far) | $(cell far_waits_base) |"
	echo "| the last claim, blocks | $(cell far_claim_blocks_near) | $(cell far_claim_blocks_far) | $(cell far_claim_blocks_base) |"
	echo "| /v1/id requests/s, p99 | $(cell far_id_rps_near), $(ms "$(val far_id_p99_us_near)") | $(cell far_id_rps_far), $(ms "$(val far_id_p99_us_far)") | |"
	echo "| held after ${STEADY}s at a tenth of near's rate and ${LULL}s idle | | $(cell far_lull_held_far) | $(cell far_lull_held_base) |"
	echo "| the burst after it: requests/s, p99 | | $(cell far_burst_rps_far), $(ms "$(val far_burst_p99_us_far)") | $(cell far_burst_rps_base), $(ms "$(val far_burst_p99_us_base)") |"
	echo "| calls of the burst that waited for a claim | | $(cell far_burst_waits_far) | $(cell far_burst_waits_base) |"
	echo "| held after ${IDLE}s idle | | $(cell far_idle_held_far) | $(cell far_idle_held_base) |"
	echo "| rounds: requests/s and p99 | $(awk '$2 == "near" {printf "%s%s/%s µs", (n++ ? ", " : ""), $3, $5}' "$RAW/rounds.txt") | $(awk '$2 == "far" {printf "%s%s/%s µs", (n++ ? ", " : ""), $3, $5}' "$RAW/rounds.txt") | $(awk '$2 == "base" {printf "%s%s/%s µs", (n++ ? ", " : ""), $3, $5}' "$RAW/rounds.txt") |"
	echo
	grep '^far_target_' "$ROWS" | sed 's/^/    /' || true
} >"$OUT/far.md"
say "rows: $OUT/far.txt, table: $OUT/far.md"
