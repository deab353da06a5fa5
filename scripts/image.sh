#!/usr/bin/env bash
# Builds ticketd's container image from deploy/Containerfile (make image).
#
#   scripts/image.sh TAG
#
# Needs bin/ticketd-static (make image builds it with CGO_ENABLED=0). Uses podman,
# else buildah; when neither is installed and we are root with apt-get, installs
# podman. FROM scratch pulls nothing, so no registry is needed.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TAG=${1:?usage: scripts/image.sh TAG}

say() { printf 'image: %s\n' "$*"; }
die() {
	printf 'image: error: %s\n' "$*" >&2
	exit 1
}

[ -x "$REPO/bin/ticketd-static" ] || die "bin/ticketd-static is missing: run make image, which builds it"

tool=
for t in podman buildah; do
	if command -v "$t" >/dev/null; then
		tool=$t
		break
	fi
done
if [ -z "$tool" ]; then
	[ "$(id -u)" = 0 ] || die "neither podman nor buildah is installed, and only root can install them: sudo apt-get install podman"
	command -v apt-get >/dev/null || die "neither podman nor buildah is installed, and apt-get is missing: install podman or buildah"
	say "installing podman with apt-get"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq || die "apt-get update failed"
	apt-get install -y -qq podman >/dev/null || die "apt-get install podman failed"
	tool=podman
fi

say "building $TAG with $tool"
case $tool in
podman) podman build --file "$REPO/deploy/Containerfile" --tag "$TAG" "$REPO" ;;
buildah) buildah build --file "$REPO/deploy/Containerfile" --tag "$TAG" "$REPO" ;;
esac
say "built $TAG: $tool run --rm $TAG -h lists its flags"
