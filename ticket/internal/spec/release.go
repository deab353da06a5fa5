package spec

import (
	"strconv"
	"strings"
)

// Release is the release of this ticketd and of its schema.sql. Release 1
// was commit 8ef7b0e (named sequences as tables of their own), release 2
// commit 6eac19e (named sequences as rows of counters), release 3 commit
// d142544 (public sequences, upgrades as a contract); CHANGELOG.md says
// what each changed and how to upgrade.
//
// The contract between releases: release N runs on release N-1's schema
// (and on every older one still supported), and N-1 keeps running beside N
// on N's schema, until the operator finalizes the upgrade (ticketd upgrade
// finalize). What an older release cannot read stays off until then.
const Release = 4

// holderMark separates a lease holder's name from the release it carries.
const holderMark = "/r"

// HolderSuffix is what the name of a lease holder of this release ends
// with: "/r4". Releases 1 and 2 put no release in their holders' names.
func HolderSuffix() string { return holderMark + strconv.Itoa(Release) }

// HolderRelease returns the release a lease holder's name carries (its
// "/rN" suffix), or 0 for a holder of release 1 or 2, which carry none.
func HolderRelease(holder string) int {
	i := strings.LastIndex(holder, holderMark)
	if i < 0 {
		return 0
	}
	n, err := strconv.Atoi(holder[i+len(holderMark):])
	if err != nil || n < 1 {
		return 0
	}
	return n
}
