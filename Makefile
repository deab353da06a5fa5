# ticketd — every entry point a developer, a DBA or CI needs.
#
#   make run       the ticket servers (a pair; SERVERS=4 for four) and ticketd, all on
#                  127.0.0.1
#   make check     the fast loop, no MariaDB needed: gofmt, go vet, staticcheck,
#                  go mod tidy -diff, go test -short (unit tests, fakes, fuzz seeds)
#   make test      the static checks of make check + every test (unit and
#                  real-MariaDB integration) under -race; never skips;
#                  installs what its tests run (make test-deps)
#   make db-up     start the ticket servers: a pair, or SERVERS=4 (2, 4, 8 or 16;
#                  installs MariaDB when missing)
#   make db-down   stop them (by PID, waiting for each to exit)
#   make db-status show whether each is up, its port, increment, offset and counter
#   make bench     ticketd against its peers and this machine's HTTP limit (bench/out/)
#   make bench-tail  open-loop latency to p99.99 beside the bare server (bench/out/)
#   make bench-sequences  named sequences at 100 to 100,000 alone (bench/out/)
#   make bench-far  a named sequence 200 ms from the servers against next door (bench/out/)
#   make bench-clients  each client's next() beside its language's UUID and a
#                  plain HTTP call (bench/out/)
#   make chaos     the failure suite: kills, clocks behind, outages, network
#                  faults, replica promotions, junk; figures
#   make upgrade-test  every earlier release, built from its commit in
#                  CHANGELOG.md, upgraded live to this one under load; figures
#   make image     the container image (deploy/Containerfile) with podman or buildah
#   make toxiproxy install the fault proxy the network tests use (bin/)
#   make db-rotate-passwords  a new password for every account on the running
#                  pair (files first, then hashes), then purge the binary logs
#                  that held the old ones (docs/dba.md, "Rotating every password")
#
# Ports, paths, the number of servers and the address ticketd listens on can be
# overridden:
#   make db-up DB1_PORT=13307 DB2_PORT=13308
#   make run SERVERS=4                   four servers on 3307-3310 (DB3_PORT, DB4_PORT)
# var/ remembers its number of servers: later db-up, run, db-status and db-down use
# it without SERVERS, and refuse another (a deployment keeps its number of servers).

SHELL      := /bin/bash
GO         ?= go
BIN        := bin
VAR        ?= $(CURDIR)/var
DB1_PORT   ?= 3307
DB2_PORT   ?= 3308
DB3_PORT   ?= 3309
DB4_PORT   ?= 3310
# Empty: what var/ was made with, else 2 (scripts/db.sh).
SERVERS    ?=
LISTEN     ?= 127.0.0.1:8080
# Most of a MariaDB test is waiting for a lease, a deadline or a restart, and
# the deadlines the tests assert leave room for neighbours; the two packages
# of MariaDB tests, ticket and cmd/ticketd (the longest by far, as each
# package's tests run one after the other), run in two halves each, side by
# side with the other packages (two at a time) and the other languages'
# tests: test-go's parts and test-clients' three, TEST_JOBS at a time.
# The chaos test alone afterwards, as it loads both cores and counts every
# failed request. -timeout guards against a hang, not a speed: on a 2-core
# VM with every part side by side, the ticket and cmd/ticketd halves take
# about nine minutes each (alone, with -race: 478 s and 527 s for the whole
# packages), which 9m cut short.
GOFLAGS_TEST ?= -race -count=1 -timeout 20m
TEST_PARALLEL ?= 2
TEST_JOBS ?= 6

export VAR SERVERS DB1_PORT DB2_PORT DB3_PORT DB4_PORT LISTEN

.PHONY: all build check short test vet fmt staticcheck tidy fuzz run db-install balancers-install db-up db-down db-status db-rotate-passwords clean

all: build

# The version ticketd_build_info reports: git describe of this checkout
# (a tag, or the commit), empty outside git (then the Go toolchain's own).
VERSION    ?= $(shell git describe --tags --always --dirty 2>/dev/null)

build:
	$(GO) build -ldflags '-X main.version=$(VERSION)' -o $(BIN)/ticketd ./cmd/ticketd

# bench/ is a module of its own: every static check covers it too.
vet:
	$(GO) vet ./...
	cd bench && $(GO) vet ./...

fmt:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# staticcheck, pinned, built into bin/ on first use (through the Go module
# proxy; seconds once the module cache has it).
STATICCHECK_VERSION ?= v0.8.2
STATICCHECK := $(CURDIR)/$(BIN)/staticcheck-$(STATICCHECK_VERSION)/staticcheck
$(STATICCHECK):
	GOBIN=$(dir $@) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

staticcheck: $(STATICCHECK)
	$(STATICCHECK) ./...
	cd bench && $(STATICCHECK) ./...

# go.mod and go.sum say exactly what the code imports.
tidy:
	$(GO) mod tidy -diff
	cd bench && $(GO) mod tidy -diff

# The fast loop's tests: go test -short leaves out every test that needs
# MariaDB or builds a binary. MARIADB_BINDIR names a folder that does not
# exist, so a test that reached for MariaDB anyway would fail here, not use
# the machine's.
short:
	MARIADB_BINDIR=$(CURDIR)/.no-mariadb-in-short-tests $(GO) test -short ./...

check: fmt vet staticcheck tidy short

# make test installs everything its tests run, so that on a fresh machine it
# passes by itself (CI's .ci/run is nothing but make test): scripts/deps.sh's
# packages with apt-get (MariaDB: the integration tests start their own
# servers; curl, openssl, systemd-analyze, haproxy, nft, promtool and
# prometheus), none of their services started; toxiproxy (the network-fault
# tests) from the Go module proxy; an nginx binary unpacked into bin/nginx/
# when none is installed.
# The Go tests and the other languages' unit tests run side by side (-O
# keeps each one's output together); the chaos test alone afterwards.
test: fmt vet staticcheck tidy test-deps
	$(MAKE) --no-print-directory -O -j$(TEST_JOBS) test-go test-clients
	$(GO) test $(GOFLAGS_TEST) ./internal/chaos

# test-go's parts: every test of ticket and cmd/ticketd in exactly one half
# (-run and -skip of one pattern); the conformance suite, the longest of the
# rest, alone; ff1's tests without the race detector but for
# TestConcurrentUse: they call it from one goroutine, where it can find
# nothing, and under it took 15 times the CPU (53 s instead of 3.5 on 2
# cores); every other package but the chaos test in test-go-rest.
TEST_HALF_ticket  = ^Test[A-M]
TEST_HALF_ticketd = ^TestE2E[A-L]
TEST_GO_APART     = -e ticketd/ticket -e ticketd/cmd/ticketd -e ticketd/clients/conformance -e ticketd/ff1 -e ticketd/internal/chaos
.PHONY: test-go test-go-ticket-1 test-go-ticket-2 test-go-ticketd-1 test-go-ticketd-2 test-go-conformance test-go-ff1 test-go-rest
test-go: test-go-ticketd-1 test-go-ticketd-2 test-go-ticket-1 test-go-ticket-2 test-go-rest test-go-conformance test-go-ff1
test-go-ticket-1:
	$(GO) test $(GOFLAGS_TEST) -run '$(TEST_HALF_ticket)' ./ticket
test-go-ticket-2:
	$(GO) test $(GOFLAGS_TEST) -skip '$(TEST_HALF_ticket)' ./ticket
test-go-ticketd-1:
	$(GO) test $(GOFLAGS_TEST) -run '$(TEST_HALF_ticketd)' ./cmd/ticketd
test-go-ticketd-2:
	$(GO) test $(GOFLAGS_TEST) -skip '$(TEST_HALF_ticketd)' ./cmd/ticketd
test-go-conformance:
	$(GO) test $(GOFLAGS_TEST) ./clients/conformance
test-go-ff1:
	$(GO) test $(GOFLAGS_TEST) -run '^TestConcurrentUse$$' ./ff1
	$(GO) test $(filter-out -race,$(GOFLAGS_TEST)) -skip '^TestConcurrentUse$$' ./ff1
test-go-rest:
	$(GO) test $(GOFLAGS_TEST) -p $(TEST_PARALLEL) $$($(GO) list ./... | grep -vx $(TEST_GO_APART))

# The other languages' clients (clients/): their own unit tests, each with
# its language's own tools against a fake ticketd written in that language
# (make test-deps installs the toolchains): Python with unittest; Java with
# the JDK alone (javac, java, jar; clients/java/build.sh); Node with node
# --test, then tsc over the sources and index.d.ts (typescript, a
# devDependency pinned in package-lock.json, installed by make test-deps).
# The conformance suite, which holds every client to docs/client.md against
# real ticketd, is a Go test (clients/conformance) and runs with the others
# above.
.PHONY: test-clients test-python test-java test-node node-deps
test-clients: test-python test-java test-node

test-python:
	mypy --strict --python-version 3.8 clients/python/src/ticketd_client
	cd clients/python && python3 -m unittest discover -s tests

test-java:
	clients/java/build.sh test

test-node:
	@node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' || \
		{ echo "node $$(node --version): the Node client wants 20 or later" >&2; exit 1; }
	cd clients/node && node --test test/*.test.js
	@[ -x clients/node/node_modules/.bin/tsc ] || { echo "no tsc in clients/node/node_modules: make test-deps" >&2; exit 1; }
	cd clients/node && node_modules/.bin/tsc -p tsconfig.json

# The Node client's devDependencies (typescript), exactly as package-lock.json pins them.
node-deps: test-packages
	cd clients/node && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error

# toxiproxy (Shopify's fault proxy), pinned, built into bin/ on first use
# through the Go module proxy. internal/toxiproxy finds it there (and
# installs it the same way when a test runs without make).
TOXIPROXY_VERSION ?= v2.5.0
TOXIPROXY := $(CURDIR)/$(BIN)/toxiproxy-$(TOXIPROXY_VERSION)/server
$(TOXIPROXY):
	GOBIN=$(dir $@) $(GO) install github.com/Shopify/toxiproxy/v2/cmd/server@$(TOXIPROXY_VERSION)

.PHONY: toxiproxy
toxiproxy: $(TOXIPROXY)

# vegeta (an open-loop HTTP load generator: requests at a constant rate on
# its own clock, every latency kept), pinned, built into bin/ on first use
# through the Go module proxy, for make bench's tail (bench/tail.sh).
VEGETA_VERSION ?= v12.13.0
VEGETA := $(CURDIR)/$(BIN)/vegeta-$(VEGETA_VERSION)/vegeta
$(VEGETA):
	GOBIN=$(dir $@) $(GO) install github.com/tsenart/vegeta/v12@$(VEGETA_VERSION)

.PHONY: vegeta
vegeta: $(VEGETA)

db-install:
	@scripts/db.sh install

# Everything make test runs, without running it (a test that finds a tool
# missing names this target).
.PHONY: test-deps
test-deps: test-packages toxiproxy balancers-install node-deps

# The packages first, so that haproxy comes from here (no service started).
.PHONY: test-packages
test-packages:
	@scripts/deps.sh test

balancers-install:
	@scripts/balancers.sh install

# Short fuzzing passes over every parser (seed corpora live in testdata/fuzz).
FUZZTIME ?= 20s
fuzz:
	$(GO) test ./snowflake -run '^$$' -fuzz '^FuzzParseLayout$$' -fuzztime $(FUZZTIME)
	$(GO) test ./snowflake -run '^$$' -fuzz '^FuzzComposeDecompose$$' -fuzztime $(FUZZTIME)
	$(GO) test ./snowflake -run '^$$' -fuzz '^FuzzParseID$$' -fuzztime $(FUZZTIME)
	$(GO) test ./ff1 -run '^$$' -fuzz '^FuzzBinary$$' -fuzztime $(FUZZTIME)
	$(GO) test ./frontend -run '^$$' -fuzz '^FuzzCount$$' -fuzztime $(FUZZTIME)
	$(GO) test ./frontend -run '^$$' -fuzz '^FuzzDecodeID$$' -fuzztime $(FUZZTIME)
	$(GO) test ./auth -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME)
	$(GO) test ./auth -run '^$$' -fuzz '^FuzzValidSequenceName$$' -fuzztime $(FUZZTIME)
	$(GO) test ./auth -run '^$$' -fuzz '^FuzzAuthenticate$$' -fuzztime $(FUZZTIME)
	$(GO) test ./frontend -run '^$$' -fuzz '^FuzzBadFraming$$' -fuzztime $(FUZZTIME)
	$(GO) test ./frontend -run '^$$' -fuzz '^FuzzFormat$$' -fuzztime $(FUZZTIME)
	$(GO) test ./ticket/internal/grants -run '^$$' -fuzz '^FuzzGrantLines$$' -fuzztime $(FUZZTIME)
	$(GO) test ./ticket/seqname -run '^$$' -fuzz '^FuzzValid$$' -fuzztime $(FUZZTIME)
	$(GO) test ./ticket/internal/spec -run '^$$' -fuzz '^FuzzParseKeyColumn$$' -fuzztime $(FUZZTIME)
	$(GO) test ./cmd/ticketd -run '^$$' -fuzz '^FuzzParseDefs$$' -fuzztime $(FUZZTIME)
	$(GO) test ./cmd/ticketd -run '^$$' -fuzz '^FuzzParseClaimLimits$$' -fuzztime $(FUZZTIME)
	$(GO) test ./auth -run '^$$' -fuzz '^FuzzAuthenticateToken$$' -fuzztime $(FUZZTIME)
	$(GO) test ./peers -run '^$$' -fuzz '^FuzzParseRoutes$$' -fuzztime $(FUZZTIME)
	$(GO) test ./peers -run '^$$' -fuzz '^FuzzUnescape$$' -fuzztime $(FUZZTIME)
	$(GO) test ./peers -run '^$$' -fuzz '^FuzzBatchSize$$' -fuzztime $(FUZZTIME)
	$(GO) test ./peers -run '^$$' -fuzz '^FuzzNewSegment$$' -fuzztime $(FUZZTIME)
	$(GO) test ./frontend -run '^$$' -fuzz '^FuzzPeerRequest$$' -fuzztime $(FUZZTIME)

# The ticket servers, then ticketd in the foreground on all of them (Ctrl-C
# stops it, releasing its worker ID); `make db-down` stops the servers afterwards.
run: db-up build
	@echo
	@echo "ticketd on http://$(LISTEN) — try, from another terminal:"
	@echo "  curl -s http://$(LISTEN)/v1/id"
	@echo "  curl -s 'http://$(LISTEN)/v1/id?format=json'"
	@echo "  curl -s 'http://$(LISTEN)/v1/ids?n=5'"
	@echo "  curl -s http://$(LISTEN)/v1/ids/\$$(curl -s http://$(LISTEN)/v1/id)"
	@echo "  curl -s http://$(LISTEN)/v1/tickets/tickets64"
	@echo "  curl -s http://$(LISTEN)/v1/status"
	@echo "Stop: Ctrl-C here, then 'make db-down'."
	@echo
	TICKETD_PASSWORD_FILE=$(VAR)/ticketd.password exec $(BIN)/ticketd serve -listen $(LISTEN) \
		-servers $$(scripts/db.sh addrs)

db-up:
	@scripts/db.sh up

db-down:
	@scripts/db.sh down

# A server found down is what db-status was asked to find out, not a failure
# of the target: scripts/db.sh status says so with exit status 3 (for scripts),
# make with 0; anything else (a bad SERVERS) still fails.
db-status:
	@scripts/db.sh status || [ $$? -eq 3 ]

db-rotate-passwords:
	@scripts/db.sh rotate

# What ticketd's presence costs an application taking tickets from the same
# tables, measured (TestE2ELegacyContention in its long form): windows of
# 45 s with innodb_autoinc_lock_mode 1, then 0, the application alone and
# beside ticketd, and beside REPLACEs of a stub of their own (README.md says
# how long it takes).
.PHONY: legacy-contention
legacy-contention:
	TICKETD_CONTENTION_WINDOW=$${TICKETD_CONTENTION_WINDOW:-45s} TICKETD_CONTENTION_OWN_STUB=1 \
		$(GO) test -count=1 -v -timeout 20m -run '^TestE2ELegacyContention$$' ./cmd/ticketd

# docs/dba.md's "Adopting a running pair" on a pair set up the old way, under
# an application's load, with 45 s windows (TestE2EAdoptRunningPair in its
# long form; make test runs it with 5 s windows; README.md says how long it
# takes).
.PHONY: adopt-soak
adopt-soak:
	TICKETD_ADOPT_WINDOW=$${TICKETD_ADOPT_WINDOW:-45s} \
		$(GO) test -count=1 -v -timeout 20m -run '^TestE2EAdoptRunningPair$$' ./cmd/ticketd

# ticketd against bwmarrin/snowflake and sony/sonyflake in process, against a
# bare fasthttp server and raw REPLACE over the network: starts (and stops) its
# own ticket servers, ticketd and the bare server on free ports (how long it
# takes: docs/performance.md, "Reproducing it").
# The report goes to bench/out/ (report.md, summary.txt, bench.png, tail.png);
# knobs in bench/run.sh (BENCH_DURATION, BENCH_ROUNDS, BENCH_CONNS, …).
.PHONY: bench bench-sequences bench-far bench-clients bench-tail
bench: $(VEGETA)
	@GO=$(GO) VEGETA=$(VEGETA) bench/run.sh

# Open-loop latency (make bench runs it too): /v1/id, /v1/ids?n=N and
# /v1/tickets/NAME with vegeta at one constant rate, a fraction of the bare
# server's capacity, rounds alternating ticketd and the bare server; p50 to
# p99.99 and the max as ratios to bare: rows tail_* in bench/out/tail.txt, a
# table in bench/out/tail.md, bench/out/tail.png; knobs in bench/tail.sh.
bench-tail: $(VEGETA)
	@GO=$(GO) VEGETA=$(VEGETA) bench/tail.sh

# Each language's client: next() from its buffer beside the language's UUID
# and a plain HTTP call, one process per language (make bench runs it too):
# its own pair on free ports; rows in bench/out/clients.txt, a table in
# bench/out/clients.md; the clients in BENCH_CLIENTS (bench/clients.sh).
bench-clients:
	@GO=$(GO) bench/clients.sh

# Named sequences at 100, 10,000 and 100,000 alone (make bench runs it too):
# its own pair on free ports; rows in bench/out/sequences.txt, a table in
# bench/out/sequences.md; knobs in bench/sequences.sh (BENCH_SEQ_COUNTS, …).
bench-sequences:
	@GO=$(GO) bench/sequences.sh

# A named sequence with the pair next door and 200 ms away (toxiproxy), side
# by side in one run, with release 3's behaviour beside them; a burst after a
# lull, and what is held after an idle minute (make bench runs it too): rows
# in bench/out/far.txt, a table in bench/out/far.md; knobs in bench/far.sh.
bench-far:
	@GO=$(GO) bench/far.sh

# The failure suite (internal/chaos): a fresh pair of ticket servers on free
# ports behind toxiproxy, three ticketd under load, kill -9, clean stops, clocks
# 10 s and 1 h behind, racing starts, a ticket server stopped then the other
# frozen, network faults (200 ms, black holes, resets, a slow link), replicas
# promoted (lagging, caught up), a ticket server's disk filled (the servers'
# data on small disks of their own: mount namespaces, so as root), junk at the
# HTTP port. Then the same on four ticket servers for CHAOS_FOUR_DURATION, with
# a round of its own: a server frozen then killed, two stopped at once for
# 20 s, a black hole, a server restored from a backup. Each run prints one
# `name value` line per figure, then the fault schedule as it ran, then
# /v1/id's open-loop latency (p50 to p99.99, each request timed from when it
# was due) per fault window beside the steady load's and beside the bare
# server's under the same load at the same time (the control); make chaos
# fails if an invariant broke in either. Logs and report.txt go to
# $(CHAOS_OUT)/<date-time>/. A one-round version of the pair's runs in make test.
#   make chaos CHAOS_DURATION=10m CHAOS_CLIENTS=8 CHAOS_RATE=2000 CHAOS_SEED=42
#   make chaos CHAOS_FOUR_DURATION=0   (the pair's run only)
CHAOS_DURATION ?= 3m
CHAOS_FOUR_DURATION ?= 2m
CHAOS_CLIENTS  ?= 4
CHAOS_RATE     ?= 1000
CHAOS_SEED     ?= 0
CHAOS_OUT      ?= $(VAR)/chaos
.PHONY: chaos
chaos: build db-install toxiproxy
	$(GO) build -o $(BIN)/chaos ./cmd/chaos
	$(GO) build -o $(BIN)/bare ./cmd/bare
	$(BIN)/chaos -duration $(CHAOS_DURATION) -clients $(CHAOS_CLIENTS) -rate $(CHAOS_RATE) \
		-seed $(CHAOS_SEED) -out $(CHAOS_OUT) -ticketd $(BIN)/ticketd -bare $(BIN)/bare
	@if [ "$(CHAOS_FOUR_DURATION)" != 0 ]; then \
		echo "chaos: four ticket servers"; \
		$(BIN)/chaos -servers 4 -duration $(CHAOS_FOUR_DURATION) -clients $(CHAOS_CLIENTS) -rate $(CHAOS_RATE) \
			-seed $(CHAOS_SEED) -out $(CHAOS_OUT) -ticketd $(BIN)/ticketd -bare $(BIN)/bare; \
	fi

# The upgrade test (internal/upgradetest, docs/upgrade-test.md): builds each
# earlier release CHANGELOG.md names from its commit (a temporary git worktree
# each; a shallow clone fails, saying git fetch --unshallow) and upgrades a
# live deployment from each to this one under load through HAProxy, binaries
# first and schema first, with a rollback and the finalize; then restarts
# release 1's ticketd ten times behind two HAProxy configurations; one figure
# table per path (how long it takes: docs/upgrade-test.md, "Latest figures").
# A short version (release 1, binaries first, about a minute) runs in make test.
UPGRADE_TIMEOUT ?= 30m
.PHONY: upgrade-test
upgrade-test: test-packages
	$(GO) test -count=1 -v -timeout $(UPGRADE_TIMEOUT) -run '^TestUpgrade$$' ./internal/upgradetest -upgrade.full

# The container image: a static binary (no libc, so it runs FROM scratch) and
# deploy/Containerfile, built by podman or buildah; scripts/image.sh installs
# podman with apt-get when neither is there. Run it as deploy/Containerfile says.
IMAGE ?= localhost/ticketd:latest
.PHONY: image
image:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w' -o $(BIN)/ticketd-static ./cmd/ticketd
	scripts/image.sh $(IMAGE)

clean: db-down
	rm -rf $(BIN) $(VAR)
