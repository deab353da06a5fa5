# What the benches of make bench (run.sh, clients.sh, far.sh, sequences.sh)
# start with, sourced after they set REPO, BENCH, OUT, GO and BENCH_NAME (the
# prefix of their messages): their messages, their output folder, the
# binaries they run, a tool apt-get installs when missing, stopping a process
# by PID, and scripts/db.sh on their own pair.
# Each keeps its own lock, its own cleanup and its own knobs.

say() { printf '%s: %s\n' "$BENCH_NAME" "$*"; }
die() {
	printf '%s: error: %s\n' "$BENCH_NAME" "$*" >&2
	exit 1
}

# bench_out SUB VAR: OUT made absolute, RAW=$OUT/raw/SUB made, and
# DBVAR=$OUT/VAR for the pair's data (made by db.sh, removed on exit).
bench_out() {
	mkdir -p "$OUT"
	OUT=$(cd "$OUT" && pwd)
	RAW=$OUT/raw/$1
	DBVAR=$OUT/$2
	mkdir -p "$RAW"
}

# bench_bins: BIN is BENCH_BIN when set (make bench built them already),
# else ticketd, the bare server (cmd/bare) and benchtool are built into
# $OUT/bin; TOOL is benchtool.
bench_bins() {
	if [ -n "${BENCH_BIN:-}" ]; then
		BIN=$BENCH_BIN
	else
		BIN=$OUT/bin
		mkdir -p "$BIN"
		say "building ticketd, the bare server and benchtool"
		(cd "$REPO" && "$GO" build -o "$BIN/ticketd" ./cmd/ticketd && "$GO" build -o "$BIN/bare" ./cmd/bare)
		(cd "$BENCH" && "$GO" build -o "$BIN/benchtool" ./cmd/benchtool)
	fi
	TOOL=$BIN/benchtool
}

# apt_install COMMAND PACKAGE: COMMAND on PATH, else PACKAGE installed with
# apt-get (as root), else a message saying what to install.
apt_install() {
	command -v "$1" >/dev/null && return
	[ "$(id -u)" = 0 ] || die "$1 is missing: sudo apt-get install $2"
	command -v apt-get >/dev/null || die "$1 is missing and there is no apt-get: install $2"
	say "installing $2 with apt-get"
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y -qq --no-install-recommends "$2" >/dev/null 2>&1 ||
		{ apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends "$2" >/dev/null; } ||
		die "apt-get install $2 failed"
}

# stop_pid PID: SIGTERM, up to 15 s to exit, then SIGKILL; nothing when PID
# is empty or already gone.
stop_pid() {
	local pid=$1 i
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
	kill -TERM "$pid" 2>/dev/null || true
	for ((i = 0; i < 150; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

# dbsh: scripts/db.sh on the bench's own pair (DBVAR, DB1_PORT, DB2_PORT).
dbsh() { VAR=$DBVAR DB1_PORT=$DB1_PORT DB2_PORT=$DB2_PORT "$REPO/scripts/db.sh" "$@"; }

# pair_down: when the bench started its pair (DB_STARTED), the servers'
# error logs kept in RAW, the servers stopped and their data removed.
pair_down() {
	[ -n "$DB_STARTED" ] || return 0
	for n in 1 2; do cp "$DBVAR/db$n/error.log" "$RAW/mariadb$n.error.log" 2>/dev/null || true; done
	dbsh down >/dev/null 2>&1 || true
	rm -rf "$DBVAR"
}
