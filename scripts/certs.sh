#!/usr/bin/env bash
# Certificates for TLS between ticketd and its ticket servers, made with openssl:
# a CA, a server certificate (both servers of a test pair may share it) and a
# client certificate for ticketd. For a test pair or for trying TLS by hand; a
# production pair gets its certificates from your own CA.
#
#   scripts/certs.sh DIR [NAME...]
#
# DIR is created if needed (mode 0700). NAME... are the names the server
# certificate is valid for, as ticketd will verify them: IP addresses or DNS
# names (default: 127.0.0.1 localhost). It writes
#
#   DIR/ca.pem                    the CA certificate: ticketd -tls-ca, MariaDB ssl_ca
#   DIR/server.pem, server-key.pem  MariaDB ssl_cert, ssl_key
#   DIR/client.pem, client-key.pem  ticketd -tls-cert, -tls-key (CN=ticketd)
#
# and DIR/ca-key.pem, the CA's key (keep it, or delete it once done). Keys are
# mode 0600. It refuses to overwrite any of these files. EC P-256 keys; the CA is
# valid 10 years, the certificates 2 years.
set -euo pipefail

die() {
	printf 'certs: error: %s\n' "$*" >&2
	exit 1
}

[ $# -ge 1 ] || {
	echo "usage: $0 DIR [NAME...]   (default names: 127.0.0.1 localhost)" >&2
	exit 2
}
command -v openssl >/dev/null || die "openssl is missing: apt-get install openssl"
dir=$1
shift
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(127.0.0.1 localhost)

san=""
for n in "${names[@]}"; do
	if [[ $n =~ ^[0-9.]+$ || $n == *:* ]]; then
		san+="${san:+,}IP:$n"
	elif [[ $n =~ ^[A-Za-z0-9*]([A-Za-z0-9.-]*[A-Za-z0-9])?$ ]]; then
		san+="${san:+,}DNS:$n"
	else
		die "$n is neither an IP address nor a DNS name"
	fi
done

mkdir -p "$dir"
chmod 700 "$dir"
for f in ca.pem ca-key.pem server.pem server-key.pem client.pem client-key.pem; do
	[ ! -e "$dir/$f" ] || die "$dir/$f exists: not overwriting it (use another folder)"
done
umask 077
work=$(mktemp -d "$dir/.certs.XXXXXX")
trap 'rm -rf "$work"' EXIT

key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

# sign NAME CN EXTENSIONS: a certificate for NAME-key.pem, signed by the CA.
sign() {
	local name=$1 cn=$2 ext=$3
	key "$work/$name-key.pem"
	openssl req -new -key "$work/$name-key.pem" -subj "/CN=$cn" -out "$work/$name.csr"
	printf '%b' "$ext" >"$work/$name.ext"
	openssl x509 -req -in "$work/$name.csr" -CA "$work/ca.pem" -CAkey "$work/ca-key.pem" \
		-set_serial "0x$(openssl rand -hex 16)" -days 730 -sha256 \
		-extfile "$work/$name.ext" -out "$work/$name.pem" 2>/dev/null
}

key "$work/ca-key.pem"
openssl req -x509 -new -key "$work/ca-key.pem" -subj "/CN=ticketd test CA $(openssl rand -hex 4)" \
	-days 3650 -sha256 -out "$work/ca.pem" \
	-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
sign server "${names[0]}" "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=$san\n"
sign client ticketd "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n"

for f in ca.pem ca-key.pem server.pem server-key.pem client.pem client-key.pem; do
	mv "$work/$f" "$dir/$f"
done
chmod 644 "$dir/ca.pem" "$dir/server.pem" "$dir/client.pem"
printf 'certs: CA, server (%s) and client certificates in %s\n' "$san" "$dir"
