#!/usr/bin/env bash
# Each language's client side by side with its language's UUID and a plain HTTP
# call to ticketd (make bench-clients; make bench runs it too).
#
# On its own pair of ticket servers (scripts/db.sh, free ports, data in
# $OUT/clientsvar) and one ticketd, for each client of BENCH_CLIENTS, in one
# process of its language (so the three figures share the machine's state):
#
#   clients_LANG_next_ns   one next() from the client's warm buffer
#   clients_LANG_uuid_ns   one random UUID of the language's own library
#   clients_LANG_http_ns   one plain GET /v1/id over a kept-alive connection
#
# and from those, per client, how many times cheaper next() is:
#
#   clients_LANG_uuid_ratio  uuid_ns / next_ns
#   clients_LANG_http_ratio  http_ns / next_ns
#   clients_LANG_target      met when next() beats the UUID (uuid_ratio above 1), else missed
#
# Rows go to $OUT/clients.txt, a table to $OUT/clients.md.
#
# A client plugs in with a function bench_LANG below that prints its three
# rows (any extra clients_LANG_* rows are kept as they are) given ticketd's
# URL in $T, run from the repository's root with the toolchain alone (no
# package registry), and its name in the default BENCH_CLIENTS.
#
# Environment (defaults in brackets):
#   BENCH_OUT      output folder                                          [bench/out]
#   BENCH_CLIENTS  the clients measured                                   [go python java node]
#   BENCH_BIN      folder with ticketd and benchtool already built        [build them]
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH=$REPO/bench
OUT=${BENCH_OUT:-$BENCH/out}
CLIENTS=${BENCH_CLIENTS:-go python java node}
GO=${GO:-go}

BENCH_NAME='bench clients'
. "$BENCH/lib.sh"

bench_out clients clientsvar
exec 7>"$OUT/.clientslock"
flock -n 7 || die "another bench of the clients is running on $OUT"

bench_bins

# --- the clients ---------------------------------------------------------------
bench_go() { "$TOOL" clientsgo -url "$T"; }
bench_python() {
	command -v python3 >/dev/null || die "python3 is missing (make test-deps installs it)"
	python3 "$REPO/clients/python/bench.py" "$T"
}
# The Java client (JDK only: clients/java/build.sh bench) also measures its
# sequence values from one thread as CosId measures its SegmentChainId (one
# thread, 10 s), on a sequence of block 1000: clients_java_seq_*.
bench_java() {
	command -v javac >/dev/null || die "javac is missing (make test-deps installs it)"
	"$BIN/ticketd" sequence create clients_bench -block 1000 -servers "127.0.0.1:$DB1_PORT,127.0.0.1:$DB2_PORT" \
		-password-file "$DBVAR/sequences.password" >&2
	clients/java/build.sh bench -url "$T" -sequence clients_bench
}
bench_node() {
	command -v node >/dev/null || die "node is missing (make test-deps installs it)"
	node clients/node/bench/bench.js -url "$T"
}

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
	if [ -n "$DB_STARTED" ]; then
		dbsh down >/dev/null 2>&1 || true
		rm -rf "$DBVAR"
	fi
	[ "$rc" = 0 ] || say "failed (exit $rc); logs in $RAW"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ports=$("$TOOL" freeport 3) || die "no free ports"
read -r DB1_PORT DB2_PORT TICKETD_PORT <<<"$(echo $ports)"
T=http://127.0.0.1:$TICKETD_PORT
dbsh down >/dev/null 2>&1 || true
rm -rf "$DBVAR"
DB_STARTED=1
say "ticket servers on $DB1_PORT and $DB2_PORT, ticketd on $TICKETD_PORT"
dbsh up >"$RAW/db.log" 2>&1 || {
	cat "$RAW/db.log" >&2
	die "starting the ticket servers failed"
}
"$BIN/ticketd" serve -listen "127.0.0.1:$TICKETD_PORT" -servers "127.0.0.1:$DB1_PORT,127.0.0.1:$DB2_PORT" \
	-password-file "$DBVAR/ticketd.password" -log-level warn </dev/null >"$RAW/ticketd.log" 2>&1 &
TICKETD_PID=$!
"$TOOL" check -url "$T/readyz" >/dev/null || {
	cat "$RAW/ticketd.log" >&2
	die "ticketd did not become ready"
}

ROWS=$RAW/rows.txt
: >"$ROWS"
for lang in $CLIENTS; do
	declare -F "bench_$lang" >/dev/null || die "no bench of the $lang client (a function bench_$lang in bench/clients.sh)"
	say "$lang: next from the buffer, the language's UUID, a plain HTTP call"
	(cd "$REPO" && "bench_$lang") >"$RAW/$lang.txt" 2>"$RAW/$lang.log" || {
		cat "$RAW/$lang.log" >&2
		die "the bench of the $lang client failed"
	}
	for k in next uuid http; do
		grep -q "^clients_${lang}_${k}_ns [0-9.]*$" "$RAW/$lang.txt" || die "$lang: no row clients_${lang}_${k}_ns (see $RAW/$lang.txt)"
	done
	cat "$RAW/$lang.txt" >>"$ROWS"
	awk -v l="$lang" '$1 == "clients_" l "_next_ns" {n = $2} $1 == "clients_" l "_uuid_ns" {u = $2} $1 == "clients_" l "_http_ns" {h = $2}
		END {printf "clients_%s_uuid_ratio %.2f\nclients_%s_http_ratio %.0f\nclients_%s_target %s\n", l, u / n, l, h / n, l, (u > n ? "met" : "missed")}' "$RAW/$lang.txt" >>"$ROWS"
done
stop_ticketd

cp "$ROWS" "$OUT/clients.txt"
{
	echo "# Clients: next() from the buffer, beside the language's UUID and a plain HTTP call"
	echo
	echo "One process per language, against one ticketd on this machine; each figure the fastest of 3 runs (bench/clients.sh)."
	echo
	echo "| client | next() | its UUID | plain GET /v1/id | next() vs UUID | next() vs HTTP | beats its UUID |"
	echo "|---|---|---|---|---|---|---|"
	for lang in $CLIENTS; do
		awk -v l="$lang" '{v[$1] = $2} END {p = "clients_" l "_"
			printf "| %s | %s ns | %s ns | %s ns | %s× | %s× | %s |\n", l, v[p "next_ns"], v[p "uuid_ns"], v[p "http_ns"], v[p "uuid_ratio"], v[p "http_ratio"], v[p "target"]}' "$ROWS"
	done
} >"$OUT/clients.md"
say "rows in $OUT/clients.txt, table in $OUT/clients.md"
cat "$OUT/clients.md"
