#!/usr/bin/env bash
# The load balancers the tests run ticketd behind (deploy/, cmd/ticketd's
# TestE2EBalancer), installed without starting any service:
#
#   scripts/balancers.sh install     haproxy: apt-get install when missing (root only;
#                                    otherwise it says what to run); nginx: the one on
#                                    PATH, or else Debian's nginx package downloaded
#                                    (apt-get download, no root needed) and its binary
#                                    unpacked into bin/nginx/ (usr/sbin/nginx)
#   scripts/balancers.sh nginx-path  print the nginx binary's path; exit 1 if none
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIR=$REPO/bin/nginx
LOCAL=$DIR/usr/sbin/nginx

say() { printf 'balancers: %s\n' "$*"; }
die() {
	printf 'balancers: error: %s\n' "$*" >&2
	exit 1
}

find_nginx() {
	command -v nginx 2>/dev/null && return
	[ -x /usr/sbin/nginx ] && echo /usr/sbin/nginx && return
	[ -x "$LOCAL" ] && echo "$LOCAL" && return
	return 1
}

install_haproxy() {
	command -v haproxy >/dev/null && return
	[ -x /usr/sbin/haproxy ] && return
	if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
		say "haproxy is missing: the balancer tests need it (sudo apt-get install haproxy)"
		return
	fi
	say "installing haproxy with apt-get"
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y -qq --no-install-recommends haproxy >/dev/null 2>&1 ||
		{ apt-get update -qq && apt-get install -y -qq --no-install-recommends haproxy >/dev/null; } ||
		die "apt-get install haproxy failed"
}

install_nginx() {
	find_nginx >/dev/null && return
	command -v apt-get >/dev/null || die "nginx is missing and apt-get too: install nginx (1.15.3 or later)"
	local tmp
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' RETURN
	say "downloading Debian's nginx package to unpack its binary into bin/nginx/"
	if ! (cd "$tmp" && apt-get download nginx >/dev/null 2>&1); then
		# A fresh machine may have no package lists yet.
		[ "$(id -u)" = 0 ] || die "apt-get download nginx failed; as root, run apt-get update first"
		apt-get update -qq
		(cd "$tmp" && apt-get download nginx >/dev/null 2>&1) || die "apt-get download nginx failed"
	fi
	rm -rf "$DIR"
	mkdir -p "$DIR"
	dpkg-deb -x "$tmp"/nginx_*.deb "$DIR"
	"$LOCAL" -v >/dev/null 2>&1 || die "the unpacked $LOCAL does not run (missing libraries?)"
	say "$("$LOCAL" -v 2>&1) in $LOCAL"
}

case "${1:-}" in
install)
	install_haproxy
	install_nginx
	;;
nginx-path) find_nginx || exit 1 ;;
*)
	echo "usage: scripts/balancers.sh install|nginx-path" >&2
	exit 2
	;;
esac
