#!/usr/bin/env bash
# What `make test` needs on a fresh Debian machine, installed with apt-get when
# missing (root only; otherwise it names the packages to install and fails).
#
#   scripts/deps.sh test    every tool a test runs (the list below)
#   scripts/deps.sh list    print "command package" for each of them
#
# nginx is unpacked into bin/ by scripts/balancers.sh; toxiproxy and staticcheck
# come from the Go module proxy (the Makefile). No service is started: Debian's
# packages may enable one, but the tests start their own processes on free
# ports of 127.0.0.1.
set -euo pipefail

say() { printf 'deps: %s\n' "$*"; }
die() {
	printf 'deps: error: %s\n' "$*" >&2
	exit 1
}

# command package why: one line per tool a test runs (a command on PATH, or a
# path that the package installs).
TOOLS=$(
	cat <<'EOF'
mariadbd mariadb-server the integration tests' ticket servers (internal/mysqltest)
mariadb-install-db mariadb-server a data directory for each test server
mariadb mariadb-client the tests' and scripts/db.sh's SQL
mariadb-dump mariadb-client restores from a dump (cmd/ticketd, internal/chaos)
curl curl the docs' examples (internal/doccheck)
openssl openssl the TLS tests' certificates (scripts/certs.sh)
systemd-analyze systemd the units of deploy/systemd (internal/deploycheck)
haproxy haproxy the balancer tests (cmd/ticketd, deploy, internal/deploycheck)
nft nftables docs/deploy.md's firewall ruleset (internal/deploycheck)
promtool prometheus metrics lint and alert-rule tests (frontend, deploy/prometheus)
prometheus prometheus a real Prometheus scraping ticketd (cmd/ticketd TestE2EMetrics)
mariadb-binlog mariadb-client binary logs read by scripts/db_test.go
ip iproute2 network namespaces with IPv6 clients (internal/netnstest, frontend)
javac default-jdk-headless the Java client (clients/java) and the tinyid-style Java client of cmd/ticketd TestE2EPeers
java default-jdk-headless the same programs run
python3 python3 the Python client's tests and conformance adapter (clients/python, clients/conformance)
pip3 python3-pip installing the Python client offline (pip install --no-index ./clients/python)
mypy mypy the Python client's type check, strict, for Python 3.8 on (make test-python)
node nodejs the Node client's tests and conformance adapter (clients/node; Node 20 or later)
npm npm the Node client's type check (typescript, pinned in clients/node/package-lock.json)
mvn maven the Java page's Maven build without Maven Central (internal/doccheck)
/usr/share/maven-repo/org/apache/maven/plugins/maven-resources-plugin/2.6 libmaven-resources-plugin-java that build's plugins, from Debian's repository
/usr/share/maven-repo/org/apache/maven/plugins/maven-compiler-plugin/3.1 libmaven-compiler-plugin-java the same
/usr/share/maven-repo/org/apache/maven/plugins/maven-surefire-plugin/2.22.3 libsurefire-java the same
/usr/share/maven-repo/org/apache/maven/plugins/maven-jar-plugin/2.4 libmaven-jar-plugin-java the same
/usr/share/maven-repo/org/apache/maven/plugins/maven-install-plugin/2.4 libmaven-install-plugin-java the same
EOF
)

# have NAME: on PATH, or in an sbin directory a non-root PATH may lack; a
# path: there.
have() {
	case $1 in /*)
		[ -e "$1" ]
		return
		;;
	esac
	command -v "$1" >/dev/null 2>&1 && return
	[ -x "/usr/sbin/$1" ] || [ -x "/sbin/$1" ]
}

install_test() {
	local need=() cmd pkg
	while read -r cmd pkg _; do
		have "$cmd" && continue
		case " ${need[*]-} " in *" $pkg "*) ;; *) need+=("$pkg") ;; esac
	done <<<"$TOOLS"
	[ ${#need[@]} -gt 0 ] || return 0
	if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
		die "missing for make test: ${need[*]} (sudo apt-get install ${need[*]}, then make test again)"
	fi
	say "installing ${need[*]} with apt-get"
	export DEBIAN_FRONTEND=noninteractive
	no_services
	# A fresh machine may have no package lists yet: update only when the
	# install cannot find a package.
	if ! apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null 2>&1; then
		apt-get update -qq || die "apt-get update failed"
		apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null ||
			die "apt-get install ${need[*]} failed"
	fi
	while read -r cmd pkg _; do
		have "$cmd" || die "$cmd still missing after installing $pkg"
	done <<<"$TOOLS"
	disable_services "${need[@]}"
}

# no_services keeps the packages' own daemons from starting while apt-get runs
# (Debian's prometheus would listen on every interface, with no credentials):
# a policy-rc.d that refuses every start, removed again on exit. An existing
# policy is left as it is.
POLICY=/usr/sbin/policy-rc.d
no_services() {
	[ -e "$POLICY" ] && return
	printf '#!/bin/sh\n# scripts/deps.sh: no service starts while make test installs its tools\nexit 101\n' >"$POLICY"
	chmod 755 "$POLICY"
	trap 'rm -f "$POLICY"' EXIT
}

# disable_services PKG... keeps the daemons of the packages just installed
# from starting at the next boot, where systemd runs (the tests start their
# own processes and need none of them).
disable_services() {
	[ -d /run/systemd/system ] && command -v systemctl >/dev/null || return 0
	local pkg
	for pkg in "$@"; do
		case $pkg in
		prometheus | haproxy) systemctl disable --now "$pkg.service" >/dev/null 2>&1 || true ;;
		esac
	done
}

case "${1:-}" in
test) install_test ;;
list) printf '%s\n' "$TOOLS" ;;
*)
	echo "usage: scripts/deps.sh test|list" >&2
	exit 2
	;;
esac
