#!/usr/bin/env bash
# make bench: ticketd side by side with its peers and with this machine's limit.
#
#   1. builds ticketd, the bare server (cmd/bare) and bench/cmd/benchtool;
#   2. generator, in process: ticketd's vs bwmarrin/snowflake vs sony/sonyflake
#      (bench/gen, one `go test -bench` run);
#   3. starts its own pair of ticket servers (scripts/db.sh, on free ports, data in
#      $OUT/var), two named sequences (B = 1 and B = 1000), ticketd, and the bare
#      fasthttp server (ticketd's server settings, a fixed short body);
#   4. HTTP with wrk, each endpoint against its yardstick, alternating A B A B…:
#      /v1/id, /v1/ids?n=1000, /v1/ids?n=4096, /v1/tickets (B = 1000) against the
#      bare server; /v1/tickets (B = 1) against raw REPLACE INTO + LastInsertId
#      by a Go client straight to the pair, at the same concurrency;
#      then /v1/id alone against /v1/id while a second wrk saturates the worker
#      with /v1/ids?n=10000 (mixed), alternating; then against plain ticketd's
#      own: a second ticketd with -balanced-bits 4 (a deployment of its own,
#      database tickets_balanced on the same servers) on /v1/id and
#      /v1/ids?n=4096 (the ceiling, less the values balanced bits skip), and
#      /v1/id?after=X with X one millisecond old (bench/wrk/after.lua);
#   5. ticketd's Go client (ticketd/client) against ticketd: one Next from a warm
#      buffer beside github.com/google/uuid's NewV7 and beside the same client in
#      strictly increasing mode, one client taking IDs as fast as it can (each
#      mode), and the p99 of Next at 1 M IDs/s;
#   6. ticketd's peak RSS (VmHWM) under that load;
#   7. stops everything it started and writes $OUT/report.md, summary.txt and
#      bench.png (raw measurements and logs in $OUT/raw);
#   8. each language's client: next() from its buffer beside the language's
#      UUID and a plain HTTP call (bench/clients.sh, on a pair of its own; also
#      make bench-clients): rows clients_* appended to summary.txt, its table
#      to report.md;
#   9. named sequences at 100, 10,000 and 100,000 (bench/sequences.sh, on a
#      pair of its own; also make bench-sequences): rows seq_* appended to
#      summary.txt, its table to report.md;
#  10. a named sequence 200 ms from the servers against next door (bench/far.sh,
#      on a pair of its own behind toxiproxy; also make bench-far): rows far_*
#      appended to summary.txt, its table to report.md;
#  11. open-loop latency to p99.99 beside the bare server (bench/tail.sh, vegeta
#      at a constant rate, on a pair of its own; also make bench-tail): rows
#      tail_* appended to summary.txt, its table to report.md, tail.png.
#
# Environment (defaults in brackets):
#   BENCH_OUT       output folder                          [bench/out]
#   BENCH_DURATION  seconds per measured run               [8]
#   BENCH_WARMUP    seconds of unmeasured warm-up per server and endpoint [2]
#   BENCH_ROUNDS    A B pairs per endpoint                  [3]
#   BENCH_ID_ROUNDS A B pairs for /v1/id (against bare, balanced, after=) [5]
#   BENCH_MIXED_CONNS  wrk connections on /v1/id in the mixed runs      [8]
#   BENCH_MIXED_BATCH_CONNS  wrk connections on /v1/ids?n=10000 beside them [4]
#   BENCH_CLIENT_RATE  IDs/s the client takes for its p99   [1000000]
#   BENCH_CONNS     wrk connections = raw client callers    [32]
#   BENCH_THREADS   wrk threads                             [1]
#   BENCH_GEN_TIME  -benchtime of the generator benchmarks  [1s]
#   BENCH_BALANCED_BITS  -balanced-bits of the second ticketd   [4]
#   BENCH_CLIENTS_RUN 0 leaves out the clients of every language (step 8) [1]
#   BENCH_CLIENTS   the clients step 8 measures (bench/clients.sh) [go python java node]
#   BENCH_SEQUENCES 0 leaves out the named sequences (step 9) [1]
#   BENCH_FAR       0 leaves out the sequence across a continent (step 10) [1]
#   BENCH_TAIL      0 leaves out the open-loop tail (step 11; its knobs in bench/tail.sh) [1]
#   BENCH_QUIET_WAIT  wait up to this many seconds for the CPUs to be 85 % idle
#                   before measuring, and up to 120 s more before each endpoint
#                   (others may share the machine; the wait is not measured)  [0]
# How long the whole run takes: docs/performance.md, "Reproducing it"
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH=$REPO/bench
OUT=${BENCH_OUT:-$BENCH/out}
DURATION=${BENCH_DURATION:-8}
WARMUP=${BENCH_WARMUP:-2}
ROUNDS=${BENCH_ROUNDS:-3}
ID_ROUNDS=${BENCH_ID_ROUNDS:-5}
MIXED_CONNS=${BENCH_MIXED_CONNS:-8}
MIXED_BATCH_CONNS=${BENCH_MIXED_BATCH_CONNS:-4}
CLIENT_RATE=${BENCH_CLIENT_RATE:-1000000}
CONNS=${BENCH_CONNS:-32}
THREADS=${BENCH_THREADS:-1}
GEN_TIME=${BENCH_GEN_TIME:-1s}
BALANCED_BITS=${BENCH_BALANCED_BITS:-4}
# ticketd's default epoch (-epoch, Twitter's): the deployment this script
# starts has it; after= values are made from it.
EPOCH=1288834974657
QUIET_WAIT=${BENCH_QUIET_WAIT:-0}
GO=${GO:-go}

# say, die, apt_install, dbsh (bench/lib.sh; this script keeps its own
# stop_pid, which names what it stops).
BENCH_NAME=bench
. "$BENCH/lib.sh"

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
RAW=$OUT/raw
BIN=$OUT/bin
DBVAR=$OUT/var

# One make bench at a time per output folder.
exec 9>"$OUT/.lock"
flock -n 9 || die "another make bench is running on $OUT"

# --- everything started here is stopped on exit, by PID --------------------
TICKETD_PID= BALANCED_PID= BARE_PID= DB_STARTED=
stop_pid() { # stop_pid NAME PID: SIGTERM, wait up to 15 s, then SIGKILL
	local name=$1 pid=$2 i
	[ -n "$pid" ] || return 0
	kill -0 "$pid" 2>/dev/null || return 0
	kill -TERM "$pid" 2>/dev/null || true
	for ((i = 0; i < 150; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		say "$name (pid $pid) did not stop in 15 s: SIGKILL"
		kill -KILL "$pid" 2>/dev/null || true
	fi
	wait "$pid" 2>/dev/null || true
}
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	[ -z "${MIXED_BG_PID:-}" ] || kill "$MIXED_BG_PID" 2>/dev/null || true
	stop_pid ticketd "$TICKETD_PID"
	stop_pid "balanced ticketd" "$BALANCED_PID"
	stop_pid "bare server" "$BARE_PID"
	if [ -n "$DB_STARTED" ]; then
		VAR=$DBVAR DB1_PORT=$DB1_PORT DB2_PORT=$DB2_PORT "$REPO/scripts/db.sh" down >/dev/null 2>&1 || true
	fi
	[ "$rc" = 0 ] || say "failed (exit $rc); logs in $OUT"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- tools -------------------------------------------------------------------
command -v "$GO" >/dev/null || die "go is missing"
apt_install wrk wrk
apt_install gnuplot gnuplot-nox

rm -rf "$RAW" "$OUT/report.md" "$OUT/summary.txt" "$OUT/bench.png" "$OUT/bench.dat" "$OUT/bench.gp" "$OUT/tail.png"
mkdir -p "$RAW" "$BIN"
: >"$RAW/http.txt"

load1() { cut -d' ' -f1 /proc/loadavg; }
# idle_pct SECONDS: how idle the CPUs were over the next SECONDS (from /proc/stat),
# as others may share this machine: the load average lags, this does not.
idle_pct() {
	local a b
	a=$(awk '/^cpu / {print $5+$6, $2+$3+$4+$5+$6+$7+$8+$9}' /proc/stat)
	sleep "$1"
	b=$(awk '/^cpu / {print $5+$6, $2+$3+$4+$5+$6+$7+$8+$9}' /proc/stat)
	awk -v a="$a" -v b="$b" 'BEGIN {split(a, x, " "); split(b, y, " "); printf "%.0f", 100 * (y[1] - x[1]) / (y[2] - x[2])}'
}
# wait_quiet SECONDS: with BENCH_QUIET_WAIT set, wait up to SECONDS for the
# CPUs to be 85 % idle over 10 s. Used before the run and before each pair.
wait_quiet() {
	[ "$QUIET_WAIT" -gt 0 ] || return 0
	local deadline=$((SECONDS + $1)) idle
	while idle=$(idle_pct 10) && [ "$idle" -lt 85 ] && [ "$SECONDS" -lt "$deadline" ]; do
		say "CPUs only $idle % idle over 10 s: waiting for a quiet machine (up to $((deadline - SECONDS)) s more)"
		sleep 5
	done
}
wait_quiet "$QUIET_WAIT"
{
	echo "date $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "cpu $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
	echo "cores $(nproc)"
	echo "go $("$GO" env GOVERSION)"
	echo "wrk $(wrk -v 2>&1 | head -n1 | awk '{print $2}')"
	echo "commit $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$REPO" diff --quiet HEAD -- 2>/dev/null || echo '+dirty')"
	echo "duration_s $DURATION"
	echo "warmup_s $WARMUP"
	echo "rounds $ROUNDS"
	echo "id_rounds $ID_ROUNDS"
	echo "mixed_conns $MIXED_CONNS"
	echo "mixed_batch_conns $MIXED_BATCH_CONNS"
	echo "conns $CONNS"
	echo "threads $THREADS"
	echo "balanced_bits $BALANCED_BITS"
	echo "load_before $(load1)"
	echo "idle_before_pct $(idle_pct 3)"
} >"$RAW/meta.txt"
say "load average before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores, CPUs $(awk '$1 == "idle_before_pct" {print $2}' "$RAW/meta.txt") % idle over 3 s"

# --- build -------------------------------------------------------------------
# Always built here, into $OUT/bin (the benches after it are given them).
BENCH_BIN='' bench_bins

# --- generator, in process ---------------------------------------------------
say "generator benchmarks (ticketd, bwmarrin/snowflake, sony/sonyflake)"
(cd "$BENCH" && "$GO" test ./gen -run '^$' -bench . -benchtime "$GEN_TIME" -count 3) | tee "$RAW/gen.txt" |
	grep -E '^Benchmark' || true
grep -q '^ok' "$RAW/gen.txt" || die "generator benchmarks failed (see $RAW/gen.txt)"

# --- the pair, ticketd, the bare server --------------------------------------
ports=$("$TOOL" freeport 5) || die "no free ports"
read -r DB1_PORT DB2_PORT TICKETD_PORT BARE_PORT BALANCED_PORT <<<"$(echo $ports)"
say "ports: ticket servers $DB1_PORT $DB2_PORT, ticketd $TICKETD_PORT (and $BALANCED_PORT with -balanced-bits $BALANCED_BITS), bare $BARE_PORT"
# Servers left by a run that was killed would hold the data directory.
dbsh down >/dev/null 2>&1 || true
rm -rf "$DBVAR"
DB_STARTED=1
dbsh up >"$RAW/db.log" 2>&1 || {
	cat "$RAW/db.log" >&2
	die "starting the ticket servers failed"
}

# Two named sequences on both servers, as schema.sql says a DBA adds one.
for n in 1 2; do
	mariadb --no-defaults --protocol=socket --socket="$DBVAR/db$n/mariadbd.sock" -uroot <<-'SQL'
		CREATE TABLE IF NOT EXISTS tickets.seq_bench_b1 LIKE tickets.Tickets64;
		INSERT IGNORE INTO tickets.sequences (name, table_name, bits, block_size) VALUES ('bench_b1', 'seq_bench_b1', 64, 1);
		GRANT SELECT, INSERT, DELETE ON tickets.seq_bench_b1 TO ticketd_app;
		CREATE TABLE IF NOT EXISTS tickets.seq_bench_b1000 LIKE tickets.Tickets64;
		INSERT IGNORE INTO tickets.sequences (name, table_name, bits, block_size) VALUES ('bench_b1000', 'seq_bench_b1000', 64, 1000);
		GRANT SELECT, INSERT, DELETE ON tickets.seq_bench_b1000 TO ticketd_app;
	SQL
done
echo "mariadb $(mariadb --no-defaults --protocol=socket --socket="$DBVAR/db1/mariadbd.sock" -uroot -N -e 'SELECT VERSION()')" >>"$RAW/meta.txt"

say "starting ticketd on 127.0.0.1:$TICKETD_PORT"
"$BIN/ticketd" serve -listen "127.0.0.1:$TICKETD_PORT" \
	-servers "127.0.0.1:$DB1_PORT,127.0.0.1:$DB2_PORT" \
	-password-file "$DBVAR/ticketd.password" -log-level warn \
	</dev/null >"$RAW/ticketd.log" 2>&1 &
TICKETD_PID=$!
"$BIN/bare" -listen "127.0.0.1:$BARE_PORT" </dev/null >"$RAW/bare.log" 2>&1 &
BARE_PID=$!
# A second ticketd with balanced low bits: each millisecond's sequence starts
# at a random value below 2^BALANCED_BITS. Balanced bits are recorded per
# deployment (a ticketd given others than recorded refuses to start), so it is
# a deployment of its own on the same two servers: schema.sql loaded into a
# second database, as schema.sql's head says (the sed), and -database.
for n in 1 2; do
	sed -E 's/^(CREATE DATABASE IF NOT EXISTS|USE) tickets\b/\1 tickets_balanced/' "$REPO/schema.sql" |
		mariadb --no-defaults --protocol=socket --socket="$DBVAR/db$n/mariadbd.sock" -uroot ||
		die "server $n: loading schema.sql into tickets_balanced failed"
done
say "starting ticketd -balanced-bits $BALANCED_BITS on 127.0.0.1:$BALANCED_PORT (database tickets_balanced)"
"$BIN/ticketd" serve -listen "127.0.0.1:$BALANCED_PORT" -balanced-bits "$BALANCED_BITS" \
	-servers "127.0.0.1:$DB1_PORT,127.0.0.1:$DB2_PORT" -database tickets_balanced \
	-password-file "$DBVAR/ticketd.password" -log-level warn \
	</dev/null >"$RAW/ticketd-balanced.log" 2>&1 &
BALANCED_PID=$!

T=http://127.0.0.1:$TICKETD_PORT
TB=http://127.0.0.1:$BALANCED_PORT
B=http://127.0.0.1:$BARE_PORT
"$TOOL" check -url "$T/readyz" || {
	cat "$RAW/ticketd.log" >&2
	die "ticketd did not become ready"
}
"$TOOL" check -url "$TB/readyz" || {
	cat "$RAW/ticketd-balanced.log" >&2
	die "ticketd -balanced-bits did not become ready"
}
"$TOOL" check -url "$B/v1/id" -lines 1 || die "the bare server did not answer"
# Each endpoint once, so the load below measures answers that are right.
"$TOOL" check -url "$T/v1/id" -lines 1
"$TOOL" check -url "$T/v1/ids?n=1000" -lines 1000
"$TOOL" check -url "$T/v1/ids?n=4096" -lines 4096
"$TOOL" check -url "$T/v1/tickets/bench_b1" -lines 1
"$TOOL" check -url "$T/v1/tickets/bench_b1000" -lines 1
"$TOOL" check -url "$T/v1/ids?n=10000" -lines 10000
"$TOOL" check -url "$TB/v1/id" -lines 1
"$TOOL" check -url "$TB/v1/ids?n=4096" -lines 4096
# An X one millisecond old, as bench/wrk/after.lua makes them (41 time bits
# from EPOCH: shifted by 22).
"$TOOL" check -url "$T/v1/id?after=$((($(date +%s%3N) - 1 - EPOCH) << 22))" -lines 1

# --- load ----------------------------------------------------------------------
# CPU time of everything this script runs, in clock ticks: ticketd, the bare
# server and the ticket servers while they live, plus the children it has
# waited for (wrk, the raw client). The rest of the processes' busy time during
# the runs is other people's, and so is steal (the hypervisor running other
# guests): the report gives both as a measure of noise. Interrupt time is left
# out of both (loopback networking is mostly ours).
ticks_of() { sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | awk -v f="$2" '{split(f, i, ","); t = 0; for (k in i) t += $i[k]; print t}' || echo 0; }
our_ticks() {
	local t pid n
	t=$(ticks_of $$ 14,15)
	for pid in "$TICKETD_PID" "$BALANCED_PID" "$BARE_PID" $(cat "$DBVAR"/db1/mariadbd.pid "$DBVAR"/db2/mariadbd.pid 2>/dev/null); do
		n=$(ticks_of "$pid" 12,13)
		t=$((t + ${n:-0}))
	done
	echo "$t"
}
# cpu_ticks: time the CPUs spent in processes (user, nice, system), stolen by
# the hypervisor for other guests (steal), and in all.
cpu_ticks() { awk '/^cpu / {print $2+$3+$4, $9, $2+$3+$4+$5+$6+$7+$8+$9}' /proc/stat; }
# Summed over the measured runs only (not warm-ups, not waits for quiet).
BUSY=0 STEAL=0 TOTAL=0 OURS=0
# run LABEL TARGET ROUND N URL|raw [CONNS]: one measured (ROUND > 0) or warm-up
# (ROUND 0) run; measured ones append "label=… target=… round=… n=… <RESULT
# fields>" to http.txt. N is how many IDs or tickets one request carries.
# WRK_SCRIPT (default wrk/result.lua) and WRK_ARGS, when set, are wrk's script
# and the arguments after its --.
run() {
	local label=$1 target=$2 round=$3 n=$4 url=$5 conns=${6:-$CONNS} d=$DURATION log line
	[ "$round" = 0 ] && d=$WARMUP
	log=$RAW/run-$label-$target-$round.txt
	local b0 s0 t0 o0 b1 s1 t1 o1
	read -r b0 s0 t0 <<<"$(cpu_ticks)"
	o0=$(our_ticks)
	if [ "$url" = raw ]; then
		"$TOOL" raw -servers "127.0.0.1:$DB1_PORT,127.0.0.1:$DB2_PORT" -password-file "$DBVAR/ticketd.password" \
			-table seq_bench_b1 -c "$CONNS" -d "${d}s" >"$log" 2>&1 || {
			cat "$log" >&2
			die "raw REPLACE client failed"
		}
	else
		wrk -t"$THREADS" -c"$conns" -d"${d}s" -s "${WRK_SCRIPT:-$BENCH/wrk/result.lua}" "$url" ${WRK_ARGS:+-- $WRK_ARGS} >"$log" 2>&1 || {
			cat "$log" >&2
			die "wrk $url failed"
		}
	fi
	[ "$round" = 0 ] && return
	read -r b1 s1 t1 <<<"$(cpu_ticks)"
	o1=$(our_ticks)
	BUSY=$((BUSY + b1 - b0)) STEAL=$((STEAL + s1 - s0)) TOTAL=$((TOTAL + t1 - t0)) OURS=$((OURS + o1 - o0))
	line=$(grep '^RESULT ' "$log") || die "no RESULT line in $log"
	local others steal
	others=$(awk -v b=$((b1 - b0)) -v o=$((o1 - o0)) -v t=$((t1 - t0)) 'BEGIN {x = t > 0 ? 100 * (b - o) / t : 0; printf "%.1f", x < 0 ? 0 : x}')
	steal=$(awk -v s=$((s1 - s0)) -v t=$((t1 - t0)) 'BEGIN {printf "%.1f", (t > 0 ? 100 * s / t : 0)}')
	echo "label=$label target=$target round=$round n=$n ${line#RESULT } others_cpu_pct=$others steal_pct=$steal" >>"$RAW/http.txt"
	printf 'bench:   %-14s %-8s round %d: %s\n' "$label" "$target" "$round" \
		"$(awk '{for(i=1;i<=NF;i++){split($i,a,"=");v[a[1]]=a[2]} printf "%.0f req/s, p50 %d us, p99 %d us, errors %d, non-2xx %d", v["requests"]/(v["duration_us"]/1e6), v["p50_us"], v["p99_us"], v["errors"], v["non2xx"]}' <<<"${line#RESULT }"), others $others % CPU, steal $steal %"
}

# pair LABEL N A_TARGET A_URL B_TARGET B_URL [ROUNDS]: warm both up, then A B A B…
pair() {
	local label=$1 n=$2 at=$3 au=$4 bt=$5 bu=$6 rounds=${7:-$ROUNDS} r
	wait_quiet 120
	say "$label: $at vs $bt, $rounds × (${DURATION}s + ${DURATION}s), wrk -t$THREADS -c$CONNS"
	run "$label" "$at" 0 "$n" "$au"
	run "$label" "$bt" 0 "$n" "$bu"
	for ((r = 1; r <= rounds; r++)); do
		run "$label" "$at" "$r" "$n" "$au"
		run "$label" "$bt" "$r" "$n" "$bu"
	done
}

# mixed: /v1/id alone (A), then /v1/id while a second wrk saturates the worker
# with /v1/ids?n=10000 (B), alternating. The batch load starts a second before
# B's measured run and ends with it; its own figures go to mixed-batch-R.txt.
MIXED_BG_PID=
mixed() {
	local r d id="$T/v1/id" batch="$T/v1/ids?n=10000"
	wait_quiet 120
	say "mixed: /v1/id (wrk -c$MIXED_CONNS) alone vs beside /v1/ids?n=10000 (wrk -c$MIXED_BATCH_CONNS), $ROUNDS × (${DURATION}s + ${DURATION}s)"
	for ((r = 0; r <= ROUNDS; r++)); do # round 0 warms up
		d=$DURATION
		((r > 0)) || d=$WARMUP
		run mixed alone "$r" 1 "$id" "$MIXED_CONNS"
		wrk -t1 -c"$MIXED_BATCH_CONNS" -d"$((d + 2))s" -s "$BENCH/wrk/result.lua" "$batch" \
			>"$RAW/mixed-batch-$r.txt" 2>&1 &
		MIXED_BG_PID=$!
		sleep 1 # the batches saturate the worker before the measured run starts
		run mixed loaded "$r" 1 "$id" "$MIXED_CONNS"
		wait "$MIXED_BG_PID" || die "wrk $batch failed (see $RAW/mixed-batch-$r.txt)"
		MIXED_BG_PID=
		if ((r > 0)); then
			echo "round=$r $(grep '^RESULT ' "$RAW/mixed-batch-$r.txt" | sed 's/^RESULT //')" >>"$RAW/mixed-batch.txt"
		fi
	done
}

pair id 1 bare "$B/v1/id" ticketd "$T/v1/id" "$ID_ROUNDS"
pair ids1000 1000 bare "$B/v1/ids?n=1000" ticketd "$T/v1/ids?n=1000"
pair ids4096 4096 bare "$B/v1/ids?n=4096" ticketd "$T/v1/ids?n=4096"
pair tickets_b1000 1 bare "$B/v1/tickets/bench_b1000" ticketd "$T/v1/tickets/bench_b1000"
pair tickets_b1 1 raw raw ticketd "$T/v1/tickets/bench_b1"
: >"$RAW/mixed-batch.txt"
mixed
# Against plain ticketd's own /v1/id (target "plain"): balanced low bits, the
# ceiling with them, and after= an ID one millisecond old. Both sides of the
# after= pair go through bench/wrk/after.lua (a Lua call per request), the
# plain side without after=.
pair id_balanced 1 plain "$T/v1/id" balanced "$TB/v1/id" "$ID_ROUNDS"
pair ids4096_balanced 4096 plain "$T/v1/ids?n=4096" balanced "$TB/v1/ids?n=4096"
WRK_SCRIPT=$BENCH/wrk/after.lua WRK_ARGS=$EPOCH pair id_after 1 plain "$T/v1/id" after "$T/v1/id?after=" "$ID_ROUNDS"

# --- the Go client -------------------------------------------------------------
wait_quiet 120
say "Go client: one Next from a warm buffer vs uuid.NewV7, sustained, p99 at $CLIENT_RATE IDs/s (${DURATION}s each)"
"$TOOL" client -url "$T" -d "${DURATION}s" -rate "$CLIENT_RATE" >"$RAW/client.txt" 2>"$RAW/client.log" || {
	cat "$RAW/client.log" >&2
	die "the client benchmark failed"
}
sed 's/^/bench:   /' "$RAW/client.txt"

# --- memory --------------------------------------------------------------------
hwm() { awk '/^VmHWM:/ {print $2}' "/proc/$1/status"; }
{
	echo "ticketd_vmhwm_kb $(hwm "$TICKETD_PID")"
	echo "bare_vmhwm_kb $(hwm "$BARE_PID")"
} >"$RAW/rss.txt"
kill -0 "$TICKETD_PID" 2>/dev/null || die "ticketd died during the load (see $RAW/ticketd.log)"
kill -0 "$BALANCED_PID" 2>/dev/null || die "ticketd -balanced-bits died during the load (see $RAW/ticketd-balanced.log)"
{
	echo "load_after $(load1)"
	awk -v b="$BUSY" -v o="$OURS" -v s="$STEAL" -v t="$TOTAL" \
		'BEGIN {x = 100 * (b - o) / t; if (x < 0) x = 0; printf "others_cpu_pct %.1f\nsteal_pct %.1f\n", x, 100 * s / t}'
} >>"$RAW/meta.txt"
say "during the measured HTTP runs, other processes (and kernel threads) used $(awk '$1 == "others_cpu_pct" {print $2}' "$RAW/meta.txt") % of the CPUs and the hypervisor stole $(awk '$1 == "steal_pct" {print $2}' "$RAW/meta.txt") %"

# --- the benches after the report ---------------------------------------------------
# part_bench FLAG NAME WHAT FAILED: unless FLAG is 0, bench/NAME.sh on a pair of
# its own (everything above has stopped); its rows (NAME.txt) go into
# summary.txt, its table (NAME.md) into report.md; FAILED is the message if it
# fails.
part_bench() {
	[ "$1" = 1 ] || return 0
	say "$3 (bench/$2.sh)"
	BENCH_OUT=$OUT BENCH_BIN=$BIN GO=$GO "$BENCH/$2.sh" || die "$4"
	cat "$OUT/$2.txt" >>"$OUT/summary.txt"
	{
		echo
		sed 's/^# /## /' "$OUT/$2.md"
	} >>"$OUT/report.md"
}

# --- stop, then report -----------------------------------------------------------
say "stopping ticketd, the bare server and the ticket servers"
stop_pid ticketd "$TICKETD_PID"
TICKETD_PID=
stop_pid "balanced ticketd" "$BALANCED_PID"
BALANCED_PID=
stop_pid "bare server" "$BARE_PID"
BARE_PID=
dbsh down >>"$RAW/db.log" 2>&1 || true
DB_STARTED=
# Keep the servers' error logs, not their data (about 100 MB).
for n in 1 2; do cp "$DBVAR/db$n/error.log" "$RAW/mariadb$n.error.log" 2>/dev/null || true; done
rm -rf "$DBVAR"

"$TOOL" report -dir "$OUT"
gnuplot "$OUT/bench.gp" || die "gnuplot failed"
part_bench "${BENCH_CLIENTS_RUN:-1}" clients "the clients of every language" "the bench of the clients failed"
part_bench "${BENCH_SEQUENCES:-1}" sequences "named sequences at scale" "the bench of named sequences failed"
part_bench "${BENCH_FAR:-1}" far "a named sequence across a continent" "the bench far failed"
part_bench "${BENCH_TAIL:-1}" tail "open-loop latency beside the bare server" "the bench of the tail failed"
say "report: $OUT/report.md, $OUT/summary.txt, $OUT/bench.png, $OUT/tail.png"
echo
cat "$OUT/summary.txt"
