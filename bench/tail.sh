#!/usr/bin/env bash
# Open-loop latency beside the bare server (make bench-tail; make bench runs
# it too).
#
# wrk, which the rest of make bench uses, is closed-loop: each connection
# sends its next request when the last answer came, so a slow answer holds
# back the requests behind it and the tail a steady caller sees never shows.
# Here vegeta sends at a constant rate on its own clock and keeps every
# latency: a request sent while BENCH_TAIL_CONNS connections are all busy
# waits for one, and that wait is in its latency (vegeta times a request
# from the moment its clock sends it).
#
# On its own pair of ticket servers (scripts/db.sh, free ports, data in
# $OUT/tailvar), a sequence made with `ticketd sequence create -block 1000`,
# ticketd and the bare server (cmd/bare: ticketd's server settings, a fixed
# 20-byte answer):
#
#   1. the bare server's capacity: vegeta -rate 0 -max-workers
#      BENCH_TAIL_CAPACITY_CONNS for BENCH_TAIL_CAPACITY_S s on /v1/id; every
#      run after it goes at BENCH_TAIL_FRACTION of it (whole hundreds), so
#      that the rate fits the machine it runs on, vegeta's own work included;
#   2. for each endpoint of BENCH_TAIL_ENDPOINTS (id: /v1/id; ids:
#      /v1/ids?n=BENCH_TAIL_IDS_N; tickets: /v1/tickets/NAME), a warm-up of
#      BENCH_TAIL_WARMUP s on ticketd and on the bare server (the same path:
#      it answers any), then BENCH_TAIL_ROUNDS rounds of BENCH_TAIL_DURATION s
#      on ticketd, then on the bare server (T B T B …), at that rate;
#   3. `vegeta report -type json` and `vegeta encode --to csv` of each run:
#      every successful request's latency kept (raw/tail/*.lat), percentiles
#      p50, p99, p99.9, p99.99 and the max over all of a side's latencies,
#      ratios ticketd ÷ bare, and the median and range of the per-round
#      ratios (benchtool tailround, tailreport).
#
# Rows tail_* go to $OUT/tail.txt (and tail_target_* lines: /v1/id's p99.9
# at most 1.2 × the bare server's, no failed request), a table to
# $OUT/tail.md, latency by percentile to $OUT/tail.png. Environment (defaults
# in brackets):
#   BENCH_OUT                 output folder                              [bench/out]
#   BENCH_TAIL_DURATION       seconds of each measured run               [15]
#   BENCH_TAIL_ROUNDS         rounds of ticketd and bare per endpoint    [5]
#   BENCH_TAIL_WARMUP         seconds of warm-up per endpoint and server [2]
#   BENCH_TAIL_FRACTION       share of the bare server's capacity to run at [0.1]
#   BENCH_TAIL_CONNS          vegeta's connections in the measured runs  [64]
#   BENCH_TAIL_CAPACITY_S     seconds of the capacity run                [5]
#   BENCH_TAIL_CAPACITY_CONNS vegeta's workers in the capacity run       [32]
#   BENCH_TAIL_IDS_N          IDs a /v1/ids request asks for             [100]
#   BENCH_TAIL_ENDPOINTS      which endpoints                            [id ids tickets]
#   VEGETA                    the vegeta binary [bin/vegeta-*/vegeta, make vegeta]
#   BENCH_BIN                 folder with ticketd, bare and benchtool built [build them]
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH=$REPO/bench
OUT=${BENCH_OUT:-$BENCH/out}
DURATION=${BENCH_TAIL_DURATION:-15}
ROUNDS=${BENCH_TAIL_ROUNDS:-5}
WARMUP=${BENCH_TAIL_WARMUP:-2}
FRACTION=${BENCH_TAIL_FRACTION:-0.1}
CONNS=${BENCH_TAIL_CONNS:-64}
CAP_S=${BENCH_TAIL_CAPACITY_S:-5}
CAP_CONNS=${BENCH_TAIL_CAPACITY_CONNS:-32}
IDS_N=${BENCH_TAIL_IDS_N:-100}
ENDPOINTS=${BENCH_TAIL_ENDPOINTS:-id ids tickets}
SEQ=bench_tail
GO=${GO:-go}

BENCH_NAME='bench tail'
. "$BENCH/lib.sh"

bench_out tail tailvar
exec 9>"$OUT/.taillock"
flock -n 9 || die "another bench tail is running on $OUT"

apt_install gnuplot gnuplot-nox
bench_bins
if [ -z "${VEGETA:-}" ]; then
	make -s -C "$REPO" vegeta GO="$GO" >/dev/null || die "installing vegeta failed (make vegeta)"
	VEGETA=$(ls "$REPO"/bin/vegeta-*/vegeta | tail -1)
fi
[ -x "$VEGETA" ] || die "no vegeta at $VEGETA (make vegeta)"
# bin/vegeta-VERSION/vegeta: go install leaves the binary without a version.
VEGETA_VERSION=$(basename "$(dirname "$VEGETA")")
VEGETA_VERSION=${VEGETA_VERSION#vegeta-}

# --- everything started here is stopped on exit, by PID ----------------------
TICKETD_PID= BARE_PID= DB_STARTED=
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	stop_pid "$TICKETD_PID"
	stop_pid "$BARE_PID"
	pair_down
	[ "$rc" = 0 ] || say "failed (exit $rc); logs in $RAW"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

rm -f "$RAW"/*.lat "$RAW"/*.json "$RAW/runs.txt" "$OUT/tail.txt" "$OUT/tail.md" "$OUT/tail.png" "$OUT/tail.dat" "$OUT/tail.gp"
ports=$("$TOOL" freeport 4) || die "no free ports"
read -r DB1_PORT DB2_PORT TICKETD_PORT BARE_PORT <<<"$(echo $ports)"
dbsh down >/dev/null 2>&1 || true
rm -rf "$DBVAR"
DB_STARTED=1
say "ticket servers on $DB1_PORT and $DB2_PORT, ticketd on $TICKETD_PORT, the bare server on $BARE_PORT"
dbsh up >"$RAW/db.log" 2>&1 || {
	cat "$RAW/db.log" >&2
	die "starting the ticket servers failed"
}
TICKETD_SEQUENCE_SERVERS=127.0.0.1:$DB1_PORT,127.0.0.1:$DB2_PORT TICKETD_SEQUENCE_PASSWORD_FILE=$DBVAR/sequences.password \
	"$BIN/ticketd" sequence create "$SEQ" -block 1000 >"$RAW/create.log" 2>&1 || {
	cat "$RAW/create.log" >&2
	die "creating the sequence failed"
}
"$BIN/ticketd" serve -listen "127.0.0.1:$TICKETD_PORT" -servers "127.0.0.1:$DB1_PORT,127.0.0.1:$DB2_PORT" \
	-password-file "$DBVAR/ticketd.password" -log-level warn </dev/null >"$RAW/ticketd.log" 2>&1 &
TICKETD_PID=$!
"$BIN/bare" -listen "127.0.0.1:$BARE_PORT" </dev/null >"$RAW/bare.log" 2>&1 &
BARE_PID=$!
T=http://127.0.0.1:$TICKETD_PORT
B=http://127.0.0.1:$BARE_PORT
"$TOOL" check -url "$T/readyz" || {
	cat "$RAW/ticketd.log" >&2
	die "ticketd did not become ready"
}
"$TOOL" check -url "$B/v1/id" -lines 1 || die "the bare server did not answer"
"$TOOL" check -url "$T/v1/id" -lines 1
"$TOOL" check -url "$T/v1/ids?n=$IDS_N" -lines "$IDS_N"
"$TOOL" check -url "$T/v1/tickets/$SEQ" -lines 1

path_of() { # path_of LABEL: the endpoint's path
	case $1 in
	id) echo /v1/id ;;
	ids) echo "/v1/ids?n=$IDS_N" ;;
	tickets) echo "/v1/tickets/$SEQ" ;;
	*) die "BENCH_TAIL_ENDPOINTS: no endpoint $1 (id, ids, tickets)" ;;
	esac
}
for label in $ENDPOINTS; do path_of "$label" >/dev/null; done

# attack URL RATE SECONDS OUT.bin: vegeta at RATE requests/s on at most
# CONNS connections (0: as fast as CAP_CONNS workers go, closed-loop), no
# body kept (the latencies are what is measured).
attack() {
	local limit=(-max-connections "$CONNS")
	[ "$2" != 0 ] || limit=(-max-workers "$CAP_CONNS")
	echo "GET $1" | "$VEGETA" attack -rate "$2" "${limit[@]}" -duration "${3}s" -timeout 10s -max-body 0 >"$4" ||
		die "vegeta attack $1 failed"
}

{
	echo "date $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "cpu $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
	echo "cores $(nproc)"
	echo "go $("$GO" env GOVERSION)"
	echo "vegeta $VEGETA_VERSION"
	echo "commit $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$REPO" diff --quiet HEAD -- 2>/dev/null || echo '+dirty')"
	echo "load_before $(cut -d' ' -f1-3 /proc/loadavg | tr ' ' /)"
	echo "duration_s $DURATION"
	echo "warmup_s $WARMUP"
	echo "rounds $ROUNDS"
	echo "fraction $FRACTION"
	echo "capacity_s $CAP_S"
	echo "capacity_conns $CAP_CONNS"
	echo "conns $CONNS"
	echo "ids_n $IDS_N"
} >"$RAW/meta.txt"

say "the bare server's capacity: vegeta -rate 0 -max-workers $CAP_CONNS for ${CAP_S}s on /v1/id"
attack "$B/v1/id" 0 "$WARMUP" /dev/null
attack "$B/v1/id" 0 "$CAP_S" "$RAW/capacity.bin"
"$VEGETA" report -type json "$RAW/capacity.bin" >"$RAW/capacity.json"
CAPACITY=$(awk 'match($0, /"throughput":[0-9.]+/) {print int(substr($0, RSTART + 13, RLENGTH - 13))}' "$RAW/capacity.json")
RATE=$("$TOOL" tailrate -json "$RAW/capacity.json" -fraction "$FRACTION") || die "no rate from the capacity run"
rm -f "$RAW/capacity.bin"
echo "capacity_per_s $CAPACITY" >>"$RAW/meta.txt"
echo "rate_per_s $RATE" >>"$RAW/meta.txt"
say "capacity $CAPACITY requests/s: every run at $RATE requests/s ($FRACTION of it)"

# waits: the calls of the sequence that have waited for a claim so far
# (/v1/status).
waits() { "$TOOL" seqstat -url "$T/v1/status" -name "$SEQ" | sed -n 's/.*waits=\([0-9]*\).*/\1/p'; }

# measure LABEL TARGET ROUND URL: one measured run, its latencies kept; for
# ticketd's /v1/tickets, with the calls that waited for a claim during it.
measure() {
	local base=$RAW/$1-$2-$3 w0=-1 waited=-1
	[ "$1/$2" != tickets/ticketd ] || w0=$(waits)
	attack "$4" "$RATE" "$DURATION" "$base.bin"
	[ "$w0" = -1 ] || waited=$(($(waits) - w0))
	"$VEGETA" report -type json "$base.bin" >"$base.json"
	"$VEGETA" encode --to csv "$base.bin" |
		"$TOOL" tailround -dir "$RAW" -label "$1" -target "$2" -round "$3" -json "$base.json" -waits "$waited" >"$base.line" ||
		die "reading $base.bin failed"
	rm -f "$base.bin"
	awk -v l="$1" -v t="$2" -v r="$3" '{for (i = 1; i <= NF; i++) {split($i, a, "="); v[a[1]] = a[2]}}
		END {printf "bench tail:   %-8s %-8s round %d: %s sent at %s/s, p50 %s us, p99.9 %s us, p99.99 %s us, max %s us, failed %d%s\n",
			l, t, r, v["requests"], v["rate"], v["p50_us"], v["p999_us"], v["p9999_us"], v["max_us"], v["non2xx"] + v["errors"],
			("waits" in v ? ", waited for a claim " v["waits"] : "")}' "$base.line"
	rm -f "$base.line"
}

for label in $ENDPOINTS; do
	p=$(path_of "$label")
	say "$p: ticketd and the bare server, ${WARMUP}s of warm-up each, then $ROUNDS × (${DURATION}s + ${DURATION}s) at $RATE requests/s"
	attack "$T$p" "$RATE" "$WARMUP" /dev/null
	attack "$B$p" "$RATE" "$WARMUP" /dev/null
	for ((r = 1; r <= ROUNDS; r++)); do
		measure "$label" ticketd "$r" "$T$p"
		measure "$label" bare "$r" "$B$p"
	done
done
kill -0 "$TICKETD_PID" 2>/dev/null || die "ticketd died during the load (see $RAW/ticketd.log)"
grep -q 'level=ERROR' "$RAW/ticketd.log" && say "ticketd logged errors (see $RAW/ticketd.log)"
echo "load_after $(cut -d' ' -f1-3 /proc/loadavg | tr ' ' /)" >>"$RAW/meta.txt"

"$TOOL" tailreport -dir "$OUT" || die "the tail report failed"
gnuplot "$OUT/tail.gp" || die "gnuplot failed"
sed 's/^/bench tail:   /' "$OUT/tail.txt" | grep -E 'tail_(id|ids|tickets)_(p999|p9999)_(us|ratio)|tail_target|tail_rate' || true
say "rows: $OUT/tail.txt, table: $OUT/tail.md, plot: $OUT/tail.png"
