// Package conformance holds every ticketd client, whatever its language, to
// the contract of docs/client.md: one suite of scenarios, described once in
// scenarios.json, played against real ticketd processes on a real pair of
// MariaDB ticket servers through an adapter program per client (PROTOCOL.md:
// JSON lines on the adapter's standard input and output; adapters.json: how
// each is built and run).
//
// The package reads and checks the description (Load), speaks the protocol
// (Adapter) and judges the answers (the checks of check.go); the suite
// itself is its test, TestConformance, which make test runs:
//
//	go test -count=1 -run 'TestConformance/go' ./clients/conformance
package conformance
