package doccheck

import (
	"regexp"
	"strconv"
)

// PerServer is the Mode of an sql block marked <!-- runnable: per server -->:
// a recipe a DBA runs on each ticket server, written for any number of them
// with two placeholders, S for the server's auto_increment_offset (1 to N)
// and N for the number of servers. The docs test runs it on a pair and on
// four servers, each server getting its own S.
const PerServer = "per server"

var (
	offsetRE  = regexp.MustCompile(`\bS\b`)
	serversRE = regexp.MustCompile(`\bN\b`)
)

// ForServer writes the recipe sql for the server of offset s among n: every
// S and N standing as a word of its own replaced by s and n.
func ForServer(sql string, s, n int) string {
	sql = offsetRE.ReplaceAllLiteralString(sql, strconv.Itoa(s))
	return serversRE.ReplaceAllLiteralString(sql, strconv.Itoa(n))
}
