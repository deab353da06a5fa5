package ticket

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// rooms are the packages of ticket, lowest first: each may import only
// rooms before it in this list (docs/design.md, "The ticket package's
// rooms"). life, arena, grants and seqname import no room at all. The
// DBA's commands come last: what they share (offline), the three beside
// package dba, then dba.
var rooms = []string{
	"ticketd/ticket/seqname",
	"ticketd/ticket/internal/life",
	"ticketd/ticket/internal/arena",
	"ticketd/ticket/internal/grants",
	"ticketd/ticket/internal/spec",
	"ticketd/ticket/internal/conn",
	"ticketd/ticket/internal/schema",
	"ticketd/ticket/internal/rotation",
	"ticketd/ticket/internal/marks",
	"ticketd/ticket/internal/tickets",
	"ticketd/ticket/internal/claim",
	"ticketd/ticket/internal/sequence",
	"ticketd/ticket/internal/lease",
	"ticketd/ticket",
	"ticketd/ticket/dba/internal/offline",
	"ticketd/ticket/dba/deployment",
	"ticketd/ticket/dba/rewind",
	"ticketd/ticket/dba/paircheck",
	"ticketd/ticket/dba",
}

// dbaCommands are the packages of the DBA's commands beside package dba.
var dbaCommands = []string{"ticketd/ticket/dba/deployment", "ticketd/ticket/dba/rewind", "ticketd/ticket/dba/paircheck"}

// TestRoomsImportDownward: no room imports a room above its own, so calls
// flow one way and a lower room asks for what it needs of a higher one
// through a hook. dba and the packages under it sit beside the façade:
// neither side imports the other.
func TestRoomsImportDownward(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "ticketd/ticket/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg, imports := f[0], f[1:]
		at := slices.Index(rooms, pkg)
		if at < 0 {
			t.Errorf("package %s is in no room: add it to rooms, in its place", pkg)
			continue
		}
		seen++
		for _, imp := range imports {
			if k := slices.Index(rooms, imp); k >= at {
				t.Errorf("%s imports %s, a room at or above its own", pkg, imp)
			}
		}
		if (pkg == "ticketd/ticket/dba" || strings.HasPrefix(pkg, "ticketd/ticket/dba/")) && slices.Contains(imports, "ticketd/ticket") {
			t.Errorf("%s imports the façade: the DBA's commands need no Pair", pkg)
		}
		if slices.Contains(dbaCommands, pkg) {
			for _, imp := range imports {
				if imp != pkg && slices.Contains(dbaCommands, imp) {
					t.Errorf("%s imports %s: the DBA's commands beside dba import none of each other (what they share is offline's)", pkg, imp)
				}
			}
		}
	}
	if seen != len(rooms) {
		t.Errorf("go list named %d rooms, want %d", seen, len(rooms))
	}
}
