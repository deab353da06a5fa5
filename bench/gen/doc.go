// Package gen holds the in-process generator benchmarks of make bench:
// ticketd's snowflake generator against bwmarrin/snowflake and
// sony/sonyflake, one ID below saturation and at saturation.
//
//	cd bench && go test ./gen -run '^$' -bench . -benchtime 1s
package gen
