#!/usr/bin/env bash
# The Java client, built and tested with the JDK's own tools (javac, java,
# jar): no Maven, no JUnit, nothing downloaded.
#
#   clients/java/build.sh build [OUT]   the classes and build/ticketd-client.jar
#                                       (OUT/ticketd-client.jar)
#   clients/java/build.sh test [REGEX]  build, then the unit tests (TestRunner;
#                                       REGEX picks tests by Class.method)
#   clients/java/build.sh bench [ARGS]  build, then ticketd.client.Bench ARGS
#   clients/java/build.sh adapter OUT   the jar and the conformance adapter
#                                       (clients/conformance), into OUT only
#
# JAVA_HOME, when set, names the JDK to use; otherwise javac on PATH (17 or
# later; make test-deps installs Debian's default-jdk-headless).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

die() {
	printf 'java client: error: %s\n' "$*" >&2
	exit 1
}

if [ -n "${JAVA_HOME:-}" ]; then
	PATH=$JAVA_HOME/bin:$PATH
fi
command -v javac >/dev/null || die "no javac: install a JDK 17 or later (make test-deps)"
major=$(javac -version 2>&1 | sed -n 's/^javac \([0-9]*\).*/\1/p')
[ -n "$major" ] && [ "$major" -ge 17 ] || die "javac $(javac -version 2>&1): want 17 or later"

# The version is the pom's: one place.
VERSION=$(sed -n '0,/<version>/s/.*<version>\(.*\)<\/version>.*/\1/p' pom.xml)
[ -n "$VERSION" ] || die "no <version> in pom.xml"

# build [DIR]: the classes into DIR/classes, the jar as DIR/ticketd-client.jar.
build() {
	local dir=${1:-build}
	rm -rf "$dir/classes"
	mkdir -p "$dir/classes"
	# shellcheck disable=SC2046
	javac --release 17 -Xlint:all -Werror -encoding UTF-8 -d "$dir/classes" $(find src/main/java -name '*.java')
	printf 'Implementation-Title: ticketd-client\nImplementation-Version: %s\nAutomatic-Module-Name: ticketd.client\n' \
		"$VERSION" >"$dir/manifest.txt"
	jar --create --file "$dir/ticketd-client.jar" --manifest "$dir/manifest.txt" -C "$dir/classes" .
}

build_tests() {
	rm -rf build/test-classes
	mkdir -p build/test-classes
	# shellcheck disable=SC2046
	javac --release 17 -Xlint:all,-serial,-try -Werror -encoding UTF-8 -cp build/classes -d build/test-classes \
		$(find src/test/java -name '*.java')
}

case "${1:-}" in
build)
	build "${2:-build}"
	;;
test)
	shift
	build
	build_tests
	exec java -cp build/classes:build/test-classes ticketd.client.TestRunner "$@"
	;;
bench)
	shift
	build
	build_tests
	exec java -cp build/classes:build/test-classes ticketd.client.Bench "$@"
	;;
adapter)
	[ $# = 2 ] || die "usage: build.sh adapter OUT"
	out=$2
	build "$out"
	# Against the jar alone: the adapter uses the public API, as an application does.
	mkdir -p "$out/adapter"
	javac --release 17 -Xlint:all -Werror -encoding UTF-8 -cp "$out/ticketd-client.jar" -d "$out/adapter" \
		src/test/java/ticketd/conformance/*.java
	;;
*)
	echo "usage: clients/java/build.sh build [OUT]|test [REGEX]|bench [ARGS]|adapter OUT" >&2
	exit 2
	;;
esac
