# ticketd — every entry point a developer, a DBA or CI needs.
#
#   make run       the pair of ticket servers and ticketd, all on 127.0.0.1
#   make test      go vet + every test (unit and real-MariaDB integration) under -race
#   make db-up     start the two ticket servers (installs MariaDB when missing)
#   make db-down   stop them (by PID, waiting for each to exit)
#   make db-status show whether each is up, its port, and its counter
#   make bench     ticketd against its peers and this machine's HTTP limit (bench/out/)
#   make chaos     the failure suite: kills, clocks behind, outages, junk; figures
#
# Ports, paths and the address ticketd listens on can be overridden:
#   make db-up DB1_PORT=13307 DB2_PORT=13308

SHELL      := /bin/bash
GO         ?= go
BIN        := bin
VAR        ?= $(CURDIR)/var
DB1_PORT   ?= 3307
DB2_PORT   ?= 3308
LISTEN     ?= 127.0.0.1:8080
# One package at a time: the integration tests assert deadlines (a frozen
# server costs a call at most CallTimeout) and the chaos test loads both cores;
# two of them side by side on a 2-core machine would measure each other.
GOFLAGS_TEST ?= -race -count=1 -p 1 -timeout 9m

export VAR DB1_PORT DB2_PORT LISTEN

.PHONY: all build test vet fmt fuzz run db-install db-up db-down db-status clean

all: build

build:
	$(GO) build -o $(BIN)/ticketd ./cmd/ticketd

vet:
	$(GO) vet ./...

fmt:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# The integration tests start their own MariaDB servers: install it if missing.
test: fmt vet db-install
	$(GO) test $(GOFLAGS_TEST) ./...

db-install:
	@scripts/db.sh install

# Short fuzzing passes over every parser (seed corpora live in testdata/fuzz).
FUZZTIME ?= 20s
fuzz:
	$(GO) test ./snowflake -run '^$$' -fuzz '^FuzzParseLayout$$' -fuzztime $(FUZZTIME)
	$(GO) test ./snowflake -run '^$$' -fuzz '^FuzzComposeDecompose$$' -fuzztime $(FUZZTIME)
	$(GO) test ./snowflake -run '^$$' -fuzz '^FuzzParseID$$' -fuzztime $(FUZZTIME)
	$(GO) test ./frontend -run '^$$' -fuzz '^FuzzCount$$' -fuzztime $(FUZZTIME)
	$(GO) test ./frontend -run '^$$' -fuzz '^FuzzDecodeID$$' -fuzztime $(FUZZTIME)
	$(GO) test ./frontend -run '^$$' -fuzz '^FuzzFormat$$' -fuzztime $(FUZZTIME)

# The pair, then ticketd in the foreground (Ctrl-C stops it, releasing its
# worker ID); `make db-down` stops the pair afterwards.
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
		-servers 127.0.0.1:$(DB1_PORT),127.0.0.1:$(DB2_PORT)

db-up:
	@scripts/db.sh up

db-down:
	@scripts/db.sh down

db-status:
	@scripts/db.sh status

# ticketd against bwmarrin/snowflake and sony/sonyflake in process, against a
# bare fasthttp server and raw REPLACE over the network: starts (and stops) its
# own ticket servers, ticketd and the bare server on free ports; about 5 minutes.
# The report goes to bench/out/ (report.md, summary.txt, bench.png); knobs in
# bench/run.sh (BENCH_DURATION, BENCH_ROUNDS, BENCH_CONNS, …).
.PHONY: bench
bench:
	@GO=$(GO) bench/run.sh

# The failure suite (internal/chaos): a fresh pair of ticket servers on free
# ports, three ticketd under load, kill -9, clean stops, clocks 10 s and 1 h
# behind, racing starts, a ticket server stopped then the other frozen, junk at
# the HTTP port. Prints one `name value` line per figure, then the fault
# schedule as it ran; exits non-zero if an invariant broke. Logs and report.txt
# go to $(CHAOS_OUT)/<date-time>/. A one-round version runs in make test.
#   make chaos CHAOS_DURATION=10m CHAOS_CLIENTS=8 CHAOS_RATE=2000 CHAOS_SEED=42
CHAOS_DURATION ?= 3m
CHAOS_CLIENTS  ?= 4
CHAOS_RATE     ?= 1000
CHAOS_SEED     ?= 0
CHAOS_OUT      ?= $(VAR)/chaos
.PHONY: chaos
chaos: build db-install
	$(GO) build -o $(BIN)/chaos ./cmd/chaos
	$(BIN)/chaos -duration $(CHAOS_DURATION) -clients $(CHAOS_CLIENTS) -rate $(CHAOS_RATE) \
		-seed $(CHAOS_SEED) -out $(CHAOS_OUT) -ticketd $(BIN)/ticketd

clean: db-down
	rm -rf $(BIN) $(VAR)
