#!/usr/bin/env bash
# An nginx binary for the test that checks deploy/nginx/ticketd.conf with
# nginx's own parser (nginx -t), without installing or starting an nginx
# service:
#
#   scripts/nginx.sh install  use nginx from PATH if there is one; otherwise
#                             download Debian's nginx package (apt-get download,
#                             no root needed) and unpack its binary into
#                             bin/nginx/ (usr/sbin/nginx)
#   scripts/nginx.sh path     print the binary's path; exit 1 if there is none
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIR=$REPO/bin/nginx
LOCAL=$DIR/usr/sbin/nginx

say() { printf 'nginx: %s\n' "$*"; }
die() {
	printf 'nginx: error: %s\n' "$*" >&2
	exit 1
}

find_nginx() {
	command -v nginx 2>/dev/null && return
	[ -x /usr/sbin/nginx ] && echo /usr/sbin/nginx && return
	[ -x "$LOCAL" ] && echo "$LOCAL" && return
	return 1
}

install() {
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
install) install ;;
path) find_nginx || exit 1 ;;
*)
	echo "usage: scripts/nginx.sh install|path" >&2
	exit 2
	;;
esac
