// Package gen holds the in-process generator benchmarks of make bench:
// ticketd's snowflake generator against bwmarrin/snowflake and
// sony/sonyflake, one ID below saturation and at saturation (ticketd's with
// balanced low bits too); the public form of an ID, each way; and a public
// sequence's permutation of one value.
//
//	cd bench && go test ./gen -run '^$' -bench . -benchtime 1s
package gen
