#!/usr/bin/env bash
# The local ticket servers (a pair, or N): start, stop, show.
#
#   scripts/db.sh install  install MariaDB (server, client), curl and openssl with apt-get
#                          if missing (curl: the examples in README.md and docs/ use it;
#                          openssl: scripts/certs.sh)
#   scripts/db.sh up       install MariaDB if missing, start the servers, load
#                          schema.sql, unlock the ticketd account
#   scripts/db.sh down     stop every server under VAR (SIGTERM by PID, wait, SIGKILL
#                          after 60 s)
#   scripts/db.sh stop N   stop server N alone, as down does; the others keep running
#   scripts/db.sh start N  start server N again, on the data it has (up starts every
#                          server that is down, and loads schema.sql again)
#   scripts/db.sh status   up/down, pid, port, increment/offset, Tickets64 counter;
#                          exits 3 when a server is down
#   scripts/db.sh addrs    print the servers' addresses as ticketd's -servers takes them
#   scripts/db.sh hash     read a password on stdin, print its mysql_native_password
#                          hash for ALTER USER … IDENTIFIED BY PASSWORD '<hash>'
#   scripts/db.sh rotate   a new password for every account, on every server, then
#                          purge the binary logs that held the old ones (make
#                          db-rotate-passwords; docs/dba.md, "Rotating every password")
#
# Environment (the Makefile sets these):
#   VAR       folder for data, sockets, logs and passwords   (default: <repo>/var)
#   SERVERS   how many servers: 2 (a pair), 4, 8 or 16, a power of two (default: the
#             number VAR's servers were made with, else 2). Server N runs with
#             auto_increment_increment=SERVERS and auto_increment_offset=N. A VAR
#             made with one number refuses another: a deployment does not change
#             its number of servers in place (docs/dba.md, "More than two servers").
#   DBn_PORT  TCP port of server n                           (default: 3306+n: 3307,
#             3308, 3309, 3310, …)
#
# The servers run the repository's my.cnf (shared [mariadbd] group plus
# [mariadbd.N]); the port and every path are passed on the command line, which
# overrides the file, so VAR and the ports can move. Passwords are generated once
# into $VAR/ticketd.password, $VAR/repair.password, $VAR/sequences.password and
# $VAR/repl.password (mode 0600) and never printed. The servers only ever see their hashes (IDENTIFIED BY PASSWORD):
# account statements go to the binary log, kept for a week and shipped to replicas.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VAR=${VAR:-$REPO/var}
CNF=$REPO/my.cnf
READY_TIMEOUT=30 # seconds for a server to answer after start
STOP_TIMEOUT=60  # seconds for a clean shutdown before SIGKILL

say() { printf 'db: %s\n' "$*"; }
die() {
	printf 'db: error: %s\n' "$*" >&2
	exit 1
}

# port_of N prints server N's port: $DBN_PORT, or 3306+N.
port_of() {
	local v="DB$1_PORT"
	echo "${!v:-$((3306 + $1))}"
}

# The number of servers: SERVERS, else what VAR records, else 2. It must be a power
# of two: worker IDs and counters are split among the servers by residue modulo
# their number, which must divide the worker space (a power of two).
RECORDED=$(cat "$VAR/servers" 2>/dev/null || true)
# Servers made before db.sh recorded their number were a pair.
if [ -z "$RECORDED" ] && [ -d "$VAR/db1/data/mysql" ]; then
	RECORDED=2
fi
SERVERS=${SERVERS:-${RECORDED:-2}}
case "$SERVERS" in
2 | 4 | 8 | 16) ;;
*)
	printf 'db: error: SERVERS=%s: want a power of two: 2 (a pair), 4, 8 or 16. Worker IDs and counters are split among the servers by residue modulo their number, which must divide the worker space; for three places, see docs/dba.md, "More than two servers"\n' "$SERVERS" >&2
	exit 2
	;;
esac
dir_of() { echo "$VAR/db$1"; }
sock_of() { echo "$VAR/db$1/mariadbd.sock"; }
pidfile_of() { echo "$VAR/db$1/mariadbd.pid"; }
log_of() { echo "$VAR/db$1/error.log"; }

find_mariadbd() {
	command -v mariadbd 2>/dev/null && return
	[ -x /usr/sbin/mariadbd ] && echo /usr/sbin/mariadbd && return
	return 1
}

# pid_of N prints the PID of server N if it is running, from the pid file mariadbd
# writes. A stale file (after kill -9 or a reboot) or a PID now used by another
# program does not count.
pid_of() {
	local f pid
	f=$(pidfile_of "$1")
	[ -r "$f" ] || return 1
	pid=$(tr -dc '0-9' <"$f")
	[ -n "$pid" ] || return 1
	[ "$(cat "/proc/$pid/comm" 2>/dev/null)" = mariadbd ] || return 1
	# A killed server stays a zombie until its parent reaps it.
	[ "$(proc_state "$pid")" != Z ] || return 1
	echo "$pid"
}

# proc_state PID prints the process state letter (R, S, T = stopped, Z = zombie).
proc_state() { sed -n 's/^[0-9]* (.*) \(.\).*/\1/p' "/proc/$1/stat" 2>/dev/null; }

# sql N runs SQL from stdin as root over server N's socket (root has no TCP access).
# A frozen server accepts the connection and never answers: bound every call
# (SQL_TIMEOUT seconds).
sql() {
	timeout "${SQL_TIMEOUT:-120}" mariadb --no-defaults --protocol=socket --socket="$(sock_of "$1")" -uroot \
		--batch --skip-column-names "${@:2}"
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# ensure_curl installs curl and openssl when missing and we may: the docs' examples
# use curl, and make test runs them (internal/doccheck); scripts/certs.sh (the TLS
# tests' certificates) uses openssl. Without root it only says so.
ensure_curl() {
	local missing=() t
	for t in curl openssl; do
		command -v "$t" >/dev/null || missing+=("$t")
	done
	[ ${#missing[@]} -gt 0 ] || return 0
	if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
		say "${missing[*]} missing: the examples in README.md and docs/ use curl, scripts/certs.sh openssl (sudo apt-get install ${missing[*]})"
		return
	fi
	say "installing ${missing[*]} with apt-get"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq || die "apt-get update failed"
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || die "apt-get install ${missing[*]} failed"
}

ensure_installed() {
	ensure_curl
	if find_mariadbd >/dev/null && command -v mariadb >/dev/null && command -v mariadb-install-db >/dev/null; then
		return
	fi
	[ "$(id -u)" = 0 ] || die "MariaDB is not installed and only root can install it: sudo apt-get install mariadb-server mariadb-client"
	command -v apt-get >/dev/null || die "MariaDB is not installed and apt-get is missing: install mariadb-server and mariadb-client (10.6 or later)"
	say "installing mariadb-server and mariadb-client with apt-get"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq || die "apt-get update failed"
	apt-get install -y -qq --no-install-recommends mariadb-server mariadb-client >/dev/null ||
		die "apt-get install mariadb-server mariadb-client failed"
	find_mariadbd >/dev/null || die "mariadbd still not found after installing mariadb-server"
}

# secret FILE creates FILE with a random password once (mode 0600) and prints it
# for use in a pipe; callers never echo it to the terminal.
secret() {
	local f=$1
	if [ ! -s "$f" ]; then
		(
			umask 077
			# 32 characters from [A-Za-z0-9]: no quoting needed in SQL or a DSN.
			tr -dc 'A-Za-z0-9' </dev/urandom | head -c 32 >"$f.tmp"
			mv "$f.tmp" "$f"
		)
	fi
	chmod 600 "$f"
	cat "$f"
}

# native_hash PASSWORD prints the mysql_native_password hash of PASSWORD, as MariaDB's
# PASSWORD() computes it: '*' and the upper-case hex of SHA1(SHA1(password)). Computed
# here, with coreutils, so the password itself never reaches a server (printf is a
# shell builtin: the password is on no command line).
native_hash() {
	local hex
	[ -n "$1" ] || die "native_hash: empty password"
	hex=$(printf '%s' "$1" | sha1sum | cut -c1-40)
	# The hex digits back to bytes (\xHH escapes), hashed again.
	hex=$(printf "$(sed 's/../\\x&/g' <<<"$hex")" | sha1sum | cut -c1-40)
	printf '*%s\n' "${hex^^}"
}

# --- rotate: new passwords for every account, old binary logs purged ---------------
#
# Release 1 set the passwords with IDENTIFIED BY '<clear>', so the binary logs (and
# every replica's relay log) still hold them, and they still work. cmd_rotate, per
# account: a new password into its file (a rename: ticketd never reads half of it),
# then its hash on server 1, then on server 2. A running ticketd keeps its open
# sessions; a new connection refused with the old password makes it read the file
# again (1045), and one to a server not changed yet gets in with the password it had
# before (docs/dba.md, "Rotating every password"). Then, on each server, FLUSH BINARY
# LOGS and PURGE BINARY LOGS TO the new log, unless a connected replica may still
# need an older one.

# The accounts make db-up creates (configure) and the files of their passwords.
ROTATE_ACCOUNTS=(ticketd:ticketd.password ticketd_repair:repair.password
	ticketd_seq:sequences.password ticketd_repl:repl.password)
REPLICA_WAIT=10 # seconds a running replica gets to apply what the purge would remove

# sql_at SOCKET runs SQL from stdin as root over a socket: a replica's.
sql_at() {
	timeout "${SQL_TIMEOUT:-120}" mariadb --no-defaults --protocol=socket --socket="$1" -uroot \
		--batch --skip-column-names "${@:2}"
}

# new_secret FILE replaces FILE with a new random password, as secret makes them:
# written to a temporary file (mode 0600) beside it, synced, then renamed over it.
new_secret() {
	local f=$1 tmp
	tmp=$(mktemp "$f.XXXXXX") || die "cannot create a temporary file beside $f"
	ROTATE_TMP+=("$tmp")
	# tr ends on SIGPIPE once head has its 32 characters; the length says it worked.
	{ tr -dc 'A-Za-z0-9' </dev/urandom || true; } | head -c 32 >"$tmp"
	[ "$(wc -c <"$tmp")" = 32 ] || die "writing a new password to $tmp failed"
	sync -- "$tmp"
	mv -f -- "$tmp" "$f"
}

# login_works N USER FILE: USER gets in on server N over TCP with the password in
# FILE, handed to the client in an option file of mode 0600, never an argument.
login_works() {
	local cnf
	cnf=$(mktemp "$VAR/.rotate-XXXXXX.cnf") || die "cannot create a temporary file in $VAR"
	ROTATE_TMP+=("$cnf")
	printf '[client]\nuser=%s\npassword=%s\n' "$2" "$(cat "$3")" >"$cnf"
	timeout 30 mariadb --defaults-file="$cnf" --protocol=tcp --host=127.0.0.1 --port="$(port_of "$1")" \
		--batch --skip-column-names -e 'SELECT 1' >/dev/null 2>&1
	local rc=$?
	rm -f -- "$cnf"
	return "$rc"
}

# replica_socket N ID prints the socket of the replica in $VAR (var/replicaN, as
# docs/backups.md sets them up) with server-id ID that replicates from server N; fails
# when there is none: a replica on another host.
replica_socket() {
	local s
	for s in "$VAR"/replica*/mariadbd.sock; do
		[ -S "$s" ] || continue
		[ "$(echo 'SELECT @@server_id' | SQL_TIMEOUT=5 sql_at "$s" 2>/dev/null)" = "$2" ] || continue
		echo 'SHOW SLAVE STATUS\G' | SQL_TIMEOUT=5 sql_at "$s" --column-names 2>/dev/null |
			grep -qx " *Master_Port: $(port_of "$1")" || continue
		echo "$s"
		return
	done
	return 1
}

# replica_done SOCKET POS: the replica has applied POS (its applier runs, and gets
# REPLICA_WAIT seconds); it then needs nothing of its primary's logs before POS.
# Otherwise prints why not.
replica_done() {
	if ! echo 'SHOW SLAVE STATUS\G' | SQL_TIMEOUT=5 sql_at "$1" --column-names 2>/dev/null | grep -qx ' *Slave_SQL_Running: Yes'; then
		echo "its applier is stopped (Slave_SQL_Running: No)"
		return 1
	fi
	if [ "$(echo "SELECT MASTER_GTID_WAIT('$2', $REPLICA_WAIT)" | SQL_TIMEOUT=$((REPLICA_WAIT + 10)) sql_at "$1" 2>/dev/null)" != 0 ]; then
		echo "it has not applied $2 within ${REPLICA_WAIT}s"
		return 1
	fi
}

# rotate_purge N flushes server N's binary log and purges the files before the new
# one, unless a connected replica (or another reader of the log) may still need
# them: then it says what to run, and sets ROTATE_KEPT.
rotate_purge() {
	local n=$1 out current pos before after='' readers hosts nhosts id host port rest sock why give refuse=()
	if [ "$(echo 'SELECT @@log_bin' | sql "$n")" != 1 ]; then
		say "server $n: no binary log: nothing to purge"
		return 0
	fi
	out=$(sql "$n" <<<'FLUSH BINARY LOGS; SHOW MASTER STATUS; SELECT @@gtid_binlog_pos;') ||
		die "server $n: FLUSH BINARY LOGS failed"
	current=$(sed -n 1p <<<"$out" | cut -f1)
	pos=$(sed -n 2p <<<"$out")
	[ -n "$current" ] || die "server $n: SHOW MASTER STATUS names no binary log"
	before=$(echo 'SHOW BINARY LOGS' | sql "$n" | cut -f1 | grep -vx -- "$current" || true)
	if [ -z "$before" ]; then
		say "server $n: binary log starts at $current already: nothing to purge"
		return 0
	fi
	# Every connected replica runs a Binlog Dump thread and is listed by SHOW SLAVE
	# HOSTS; a reader not listed there (mariadb-binlog --read-from-remote-server)
	# cannot be asked how far it got.
	readers=$(echo "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE COMMAND = 'Binlog Dump'" | sql "$n")
	hosts=$(echo 'SHOW SLAVE HOSTS' | sql "$n")
	nhosts=$(grep -c . <<<"$hosts" || true)
	while IFS=$'\t' read -r id host port rest; do
		[ -n "$id" ] || continue
		# Its connection stays, but a reconnect with the old replication password
		# would be refused: it needs the new one (STOP SLAVE: CHANGE MASTER wants
		# both threads stopped; START SLAVE starts both).
		give="STOP SLAVE; CHANGE MASTER TO MASTER_PASSWORD = '%s'; START SLAVE;\\n"
		if sock=$(replica_socket "$n" "$id"); then
			why=$(replica_done "$sock" "$pos") || refuse+=("replica server-id $id ($sock) still needs them: $why")
			say "server $n: replica server-id $id ($host:$port) replicates with the old replication password until given the new one: printf \"$give\" \"\$(cat '$VAR/repl.password')\" | mariadb --no-defaults --socket='$sock' -uroot"
		else
			refuse+=("replica server-id $id ($host:$port) is not in $VAR: its position cannot be read from here")
			say "server $n: replica server-id $id ($host:$port) replicates with the old replication password until given the new one: on it, as root, with the password of $VAR/repl.password: ${give%\\n}"
		fi
	done <<<"$hosts"
	if [ "$readers" -gt "$nhosts" ]; then
		refuse+=("$readers reader(s) of the binary log, $nhosts of them listed by SHOW SLAVE HOSTS: the others' positions are unknown")
	fi
	if [ ${#refuse[@]} -eq 0 ]; then
		# MariaDB skips a file a Binlog Dump thread is still on (with a warning): a
		# replica that has applied everything may not have read the end of the old
		# file yet. It gets REPLICA_WAIT seconds.
		local tries=0 warn
		while :; do
			warn=$(sql "$n" <<<"PURGE BINARY LOGS TO '$current'; SHOW WARNINGS;") ||
				die "server $n: PURGE BINARY LOGS TO '$current' failed"
			after=$(echo 'SHOW BINARY LOGS' | sql "$n" | cut -f1 | grep -vx -- "$current" || true)
			[ -n "$after" ] || break
			if [ $((tries += 1)) -ge $((REPLICA_WAIT * 5)) ]; then
				refuse+=("MariaDB kept $(paste -sd' ' <<<"$after"): ${warn:-no warning given}")
				break
			fi
			sleep 0.2
		done
		local gone start=$current
		gone=$(grep -vxF -f <(printf '%s\n' "$after") <<<"$before" || true)
		[ -z "$after" ] || start=$(sed -n 1p <<<"$after")
		[ -z "$gone" ] || say "server $n: purged $(wc -w <<<"$gone") binary log file(s): $(paste -sd' ' <<<"$gone"); the log now starts at $start ($pos)"
		[ -n "$after" ] || return 0
		before=$after
	fi
	local r
	for r in "${refuse[@]}"; do say "server $n: binary logs kept: $r"; done
	say "server $n: kept $(wc -w <<<"$before") file(s) before $current ($(paste -sd' ' <<<"$before")): they hold the old statements, whose passwords no longer work"
	say "server $n: once every replica of server $n has applied $pos (on each, as root: SELECT MASTER_GTID_WAIT('$pos', 60); answers 0), run on server $n as root: PURGE BINARY LOGS TO '$current';"
	ROTATE_KEPT=1
}

cmd_rotate() {
	[ -d "$VAR" ] || die "$VAR does not exist: nothing to rotate (make db-up first)"
	umask 077
	# One rotation at a time: two would each take the other's file for the old one.
	exec 9>"$VAR/.rotate.lock"
	flock -n 9 || die "another scripts/db.sh rotate is running ($VAR/.rotate.lock)"
	ROTATE_TMP=() ROTATE_KEPT=
	trap 'rm -f -- "${ROTATE_TMP[@]}"' EXIT
	local n a user file hash users
	users=$(for a in "${ROTATE_ACCOUNTS[@]}"; do printf "'%s'," "${a%%:*}"; done)
	users=${users%,}
	# Nothing changes unless every server answers and has every account.
	for n in $(servers); do
		[ "$(echo "SELECT COUNT(*) FROM mysql.user WHERE Host = '127.0.0.1' AND User IN ($users)" |
			SQL_TIMEOUT=10 sql "$n" 2>/dev/null)" = ${#ROTATE_ACCOUNTS[@]} ] ||
			die "server $n does not answer on $(sock_of "$n"), or lacks one of the accounts $users: nothing changed (make db-up, then rotate again)"
	done
	# The file first, then every server: see the top of this section.
	for a in "${ROTATE_ACCOUNTS[@]}"; do
		user=${a%%:*} file=$VAR/${a#*:}
		new_secret "$file"
		hash=$(native_hash "$(cat "$file")")
		[[ $hash =~ ^\*[0-9A-F]{40}$ ]] || die "$user: no hash of the new password in $file"
		for n in $(servers); do
			sql "$n" <<<"ALTER USER '$user'@'127.0.0.1' IDENTIFIED BY PASSWORD '$hash';" ||
				die "server $n: setting $user's new password failed; servers before it have it, and $file holds it: run scripts/db.sh rotate again once server $n answers"
			login_works "$n" "$user" "$file" || die "server $n: $user cannot log in with its new password ($file)"
		done
		say "$user: new password in $file, set on every server (its hash only)"
	done
	for n in $(servers); do
		rotate_purge "$n"
	done
	if [ -n "$ROTATE_KEPT" ]; then
		say "passwords rotated; some binary logs kept (above): no password in them works any more, but purge them as shown"
		return 3
	fi
}

init_datadir() {
	local n=$1 dir
	dir=$(dir_of "$n")
	[ -d "$dir/data/mysql" ] && return
	say "server $n: initialising $dir/data"
	mkdir -p "$dir/data" "$dir/tmp"
	local user=()
	[ "$(id -u)" = 0 ] && user=(--user=root)
	if ! mariadb-install-db --defaults-file="$CNF" --defaults-group-suffix=".$n" "${user[@]}" \
		--auth-root-authentication-method=normal --skip-test-db \
		--datadir="$dir/data" --tmpdir="$dir/tmp" --socket="$(sock_of "$n")" \
		--pid-file="$dir/install.pid" --log-error="$dir/install.log" >"$dir/install.out" 2>&1; then
		cat "$dir/install.log" >&2 2>/dev/null || tail -n 20 "$dir/install.out" >&2 || true
		rm -rf "$dir/data"
		die "server $n: mariadb-install-db failed (log above; full output in $dir/install.out)"
	fi
}

start_server() {
	local n=$1 port dir pid mariadbd
	port=$(port_of "$n")
	dir=$(dir_of "$n")
	mariadbd=$(find_mariadbd)
	if port_in_use "$port"; then
		die "server $n: port $port on 127.0.0.1 is taken by another program (see: ss -ltnp 'sport = :$port'); choose another with DB${n}_PORT=…"
	fi
	local user=()
	[ "$(id -u)" = 0 ] && user=(--user=root)
	local logstart=0
	[ -f "$(log_of "$n")" ] && logstart=$(stat -c %s "$(log_of "$n")")
	# setsid: its own session, so the terminal's ^C and hang-up never reach it; the
	# --defaults-file option must come first.
	# The increment and offset on the command line too: my.cnf's [mariadbd] says 2,
	# the pair's, and its groups stop at [mariadbd.4].
	setsid "$mariadbd" --defaults-file="$CNF" --defaults-group-suffix=".$n" "${user[@]}" \
		--port="$port" --socket="$(sock_of "$n")" --datadir="$dir/data" --tmpdir="$dir/tmp" \
		--pid-file="$(pidfile_of "$n")" --log-error="$(log_of "$n")" \
		--auto-increment-increment="$SERVERS" --auto-increment-offset="$n" \
		</dev/null >>"$dir/mariadbd.out" 2>&1 &
	pid=$!
	local deadline=$((SECONDS + READY_TIMEOUT))
	# Over the socket: the server opens it together with the TCP port, and probing
	# the port would log an "aborted connection" for every try.
	until [ "$(echo 'SELECT @@port' | sql "$n" 2>/dev/null)" = "$port" ]; do
		if ! kill -0 "$pid" 2>/dev/null; then
			tail -c +$((logstart + 1)) "$(log_of "$n")" >&2 2>/dev/null || true
			die "server $n: mariadbd exited while starting (error log above: $(log_of "$n"))"
		fi
		if [ "$SECONDS" -ge "$deadline" ]; then
			tail -n 30 "$(log_of "$n")" >&2 2>/dev/null || true
			kill -KILL "$pid" 2>/dev/null || true
			die "server $n: not ready after ${READY_TIMEOUT}s; killed it (error log above: $(log_of "$n"))"
		fi
		sleep 0.1
	done
}

# configure N loads schema.sql and sets up the accounts. Every step is idempotent,
# so it runs on every `up`: a schema.sql that gained a table reaches running servers.
configure() {
	local n=$1 app repair seq repl
	sql "$n" <"$REPO/schema.sql" || die "server $n: loading schema.sql failed"
	app=$(native_hash "$(secret "$VAR/ticketd.password")")
	repair=$(native_hash "$(secret "$VAR/repair.password")")
	seq=$(native_hash "$(secret "$VAR/sequences.password")")
	repl=$(native_hash "$(secret "$VAR/repl.password")")
	# Hashes only: these statements are written to the binary log, which replicas
	# receive and which is kept for a week. They go through stdin all the same.
	sql "$n" <<-SQL || die "server $n: setting up accounts failed"
		ALTER USER 'ticketd'@'127.0.0.1' IDENTIFIED BY PASSWORD '$app' ACCOUNT UNLOCK;
		CREATE USER IF NOT EXISTS 'ticketd_repair'@'127.0.0.1' IDENTIFIED BY PASSWORD '$repair';
		ALTER USER 'ticketd_repair'@'127.0.0.1' IDENTIFIED BY PASSWORD '$repair' ACCOUNT UNLOCK;
		GRANT ticketd_admin TO 'ticketd_repair'@'127.0.0.1';
		SET DEFAULT ROLE ticketd_admin FOR 'ticketd_repair'@'127.0.0.1';
		-- The account of ticketd sequence create|list|check (docs/dba.md).
		CREATE USER IF NOT EXISTS 'ticketd_seq'@'127.0.0.1' IDENTIFIED BY PASSWORD '$seq';
		ALTER USER 'ticketd_seq'@'127.0.0.1' IDENTIFIED BY PASSWORD '$seq' ACCOUNT UNLOCK;
		GRANT ticketd_sequences TO 'ticketd_seq'@'127.0.0.1';
		SET DEFAULT ROLE ticketd_sequences FOR 'ticketd_seq'@'127.0.0.1';
		-- The account a replica of this server connects with (docs/backups.md, "Replicas").
		CREATE USER IF NOT EXISTS 'ticketd_repl'@'127.0.0.1' IDENTIFIED BY PASSWORD '$repl';
		ALTER USER 'ticketd_repl'@'127.0.0.1' IDENTIFIED BY PASSWORD '$repl' ACCOUNT UNLOCK;
		GRANT REPLICATION SLAVE ON *.* TO 'ticketd_repl'@'127.0.0.1';
		-- mariadb-install-db also makes password-less root accounts for TCP (127.0.0.1,
		-- ::1, the host name): drop them. root keeps the socket, which lives in a
		-- folder only this user can enter.
		DROP USER IF EXISTS 'root'@'127.0.0.1', 'root'@'::1';
		SET @drop = (SELECT CONCAT('DROP USER IF EXISTS ', GROUP_CONCAT(QUOTE(User), '@', QUOTE(Host) SEPARATOR ', '))
		             FROM mysql.user WHERE User = 'root' AND Host <> 'localhost');
		SET @drop = IFNULL(@drop, 'DO 0');
		PREPARE s FROM @drop;
		EXECUTE s;
	SQL
}

# servers lists 1 … SERVERS.
servers() { seq 1 "$SERVERS"; }

# check_recorded refuses a SERVERS other than the one VAR's servers were made with:
# their counters, lease rows and high-water marks are those of that many servers, and
# a deployment does not change its number of servers in place.
check_recorded() {
	if [ -n "$RECORDED" ] && [ "$RECORDED" != "$SERVERS" ]; then
		die "$VAR holds a deployment of $RECORDED servers, not $SERVERS: a deployment does not change its number of servers in place (docs/dba.md, \"More than two servers\"). Use SERVERS=$RECORDED, or another VAR for a new deployment (make db-down, then make clean deletes $VAR and every ticket in it)"
	fi
}

cmd_up() {
	check_recorded
	ensure_installed
	[ -f "$CNF" ] || die "$CNF is missing"
	mkdir -p "$VAR"
	chmod 700 "$VAR"
	echo "$SERVERS" >"$VAR/servers"
	local n pid actual aport ainc
	for n in $(servers); do
		mkdir -p "$(dir_of "$n")/tmp"
		chmod 700 "$(dir_of "$n")"
		if pid=$(pid_of "$n"); then
			actual=$(echo 'SELECT @@port, @@auto_increment_increment' | SQL_TIMEOUT=10 sql "$n" 2>/dev/null) ||
				die "server $n: pid $pid is running but does not answer on $(sock_of "$n") (state $(proc_state "$pid"); T = stopped: kill -CONT $pid)"
			read -r aport ainc <<<"$actual"
			if [ "$aport" != "$(port_of "$n")" ] || [ "$ainc" != "$SERVERS" ]; then
				die "server $n is already up on port $aport with auto_increment_increment $ainc, not $(port_of "$n") and $SERVERS: run make db-down first"
			fi
			say "server $n already up: pid $pid, port $(port_of "$n")"
		else
			init_datadir "$n"
			start_server "$n"
			say "server $n started: pid $(pid_of "$n"), port $(port_of "$n")"
		fi
		configure "$n"
	done
	say "$SERVERS servers up: -servers $(cmd_addrs)"
	say "schema loaded; ticketd's password is in $VAR/ticketd.password, repair's in $VAR/repair.password, sequence's in $VAR/sequences.password, replication's in $VAR/repl.password"
	say "root: mariadb --no-defaults -uroot -S $(sock_of 1)   (or: cd $REPO && mariadb --defaults-file=my.cnf --defaults-group-suffix=.1 -uroot)"
}

# cmd_down stops every server under VAR, however many SERVERS says: a server left
# running would hold its port and its data.
cmd_down() {
	local n pid d
	local all=()
	for n in $(servers); do all+=("$n"); done
	for d in "$VAR"/db[0-9]*; do
		n=${d##*/db}
		[[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -gt "$SERVERS" ] && all+=("$n")
	done
	for n in "${all[@]}"; do
		if ! pid=$(pid_of "$n"); then
			[ "$n" -le "$SERVERS" ] && say "server $n not running"
			continue
		fi
		stop_server "$n" "$pid"
	done
}

# stop_server N PID stops server N, running as PID: SIGTERM, then SIGKILL after
# STOP_TIMEOUT seconds.
stop_server() {
	local n=$1 pid=$2 deadline
	# A frozen (SIGSTOP) server would not act on SIGTERM until continued.
	kill -CONT "$pid" 2>/dev/null || true
	kill -TERM "$pid" 2>/dev/null || true
	deadline=$((SECONDS + STOP_TIMEOUT))
	while kill -0 "$pid" 2>/dev/null && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = mariadbd ]; do
		if [ "$SECONDS" -ge "$deadline" ]; then
			kill -KILL "$pid" 2>/dev/null || true
			say "server $n (pid $pid) did not shut down in ${STOP_TIMEOUT}s: killed it (SIGKILL)"
			break
		fi
		sleep 0.1
	done
	say "server $n stopped (pid $pid)"
}

# one_server WHAT N refuses an N that names none of the servers (1 … SERVERS).
one_server() {
	if ! [[ "$2" =~ ^[0-9]+$ ]] || [ "$2" -lt 1 ] || [ "$2" -gt "$SERVERS" ]; then
		printf 'db: error: %s %s: want the number of one server, from 1 to %s\n' "$1" "${2:-(none)}" "$SERVERS" >&2
		exit 2
	fi
}

# cmd_stop N stops server N alone: ticketd serves from the others meanwhile.
cmd_stop() {
	local n=$1 pid
	one_server stop "$n"
	if ! pid=$(pid_of "$n"); then
		say "server $n not running"
		return
	fi
	stop_server "$n" "$pid"
}

# cmd_start N starts server N again on its data, as up would, without the rest of up.
cmd_start() {
	local n=$1 pid
	one_server start "$n"
	check_recorded
	if pid=$(pid_of "$n"); then
		say "server $n already up: pid $pid, port $(port_of "$n")"
		return
	fi
	[ -d "$(dir_of "$n")/data/mysql" ] || die "server $n has no data in $(dir_of "$n")/data: make db-up makes it"
	ensure_installed
	start_server "$n"
	say "server $n started: pid $(pid_of "$n"), port $(port_of "$n")"
}

cmd_status() {
	local n pid row rc=0 port inc off ai last
	for n in $(servers); do
		if ! pid=$(pid_of "$n"); then
			say "server $n: down (configured port $(port_of "$n"), data $(dir_of "$n")/data)"
			rc=3
			continue
		fi
		# information_schema shows the counter as (highest id)+1 after a restart even
		# where the next ticket skips to the server's parity; the last ticket is exact.
		if ! row=$(SQL_TIMEOUT=5 sql "$n" -e "SELECT @@port, @@auto_increment_increment, @@auto_increment_offset,
			IFNULL((SELECT AUTO_INCREMENT FROM information_schema.TABLES
			        WHERE TABLE_SCHEMA = 'tickets' AND TABLE_NAME = 'Tickets64'), 'none'),
			IFNULL((SELECT MAX(id) FROM tickets.Tickets64), 'none')" 2>&1); then
			say "server $n: up but not answering: pid $pid, state $(proc_state "$pid") (T = stopped), ${row:-no answer in 5 s}"
			rc=3
			continue
		fi
		read -r port inc off ai last <<<"$row"
		say "server $n: up, pid $pid, port $port, auto_increment_increment $inc, auto_increment_offset $off, Tickets64 AUTO_INCREMENT $ai (last ticket $last)"
	done
	return "$rc"
}

# cmd_addrs prints 127.0.0.1:<port of server 1>,… for ticketd's -servers.
cmd_addrs() {
	local n out=()
	for n in $(servers); do out+=("127.0.0.1:$(port_of "$n")"); done
	(
		IFS=,
		echo "${out[*]}"
	)
}

case "${1:-}" in
install) ensure_installed ;;
up) cmd_up ;;
down) cmd_down ;;
stop) cmd_stop "${2:-}" ;;
start) cmd_start "${2:-}" ;;
rotate) cmd_rotate ;;
status) cmd_status ;;
addrs) cmd_addrs ;;
hash)
	IFS= read -r pw || [ -n "$pw" ] || die "hash: no password on stdin"
	native_hash "$pw"
	;;
*)
	echo "usage: $0 install|up|down|stop N|start N|status|addrs|hash|rotate   (env: VAR, SERVERS, DB1_PORT, DB2_PORT, …)" >&2
	exit 2
	;;
esac
