package main

import (
	"fmt"
	"runtime/debug"

	"ticketd/ticket"
)

// versionLine is what `ticketd version` prints: the version this binary
// was built as (make build sets `git describe`; else what the Go toolchain
// stamped), and its release, the number the compatibility contract between
// releases counts in (CHANGELOG.md).
func versionLine() string {
	v := version
	if v == "" {
		if bi, ok := debug.ReadBuildInfo(); ok {
			v = bi.Main.Version
		}
	}
	if v == "" {
		v = "unknown"
	}
	return fmt.Sprintf("ticketd %s (release %d)", v, ticket.Release)
}
