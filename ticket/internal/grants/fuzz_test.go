package grants

import (
	"strings"
	"testing"
)

// FuzzGrantLines: no SHOW GRANTS line makes the parser panic, and what
// Extra names never carries the password hash of an IDENTIFIED BY
// PASSWORD clause.
func FuzzGrantLines(f *testing.F) {
	f.Add("RELOAD, PROCESS", "*37E487D9D36FE59C3AF73F4FD4484C4975C21E1F", " WITH GRANT OPTION")
	f.Add("UPDATE (`a`, `b`), ALTER", "*0123", "")
	f.Add("ALL PRIVILEGES", "' TO x ON y", " WITH ADMIN OPTION")
	f.Add("SELECT (`x)`", "`", "(")
	f.Fuzz(func(t *testing.T, privs, hash, tail string) {
		line := "GRANT " + privs + " ON *.* TO `ticketd`@`127.0.0.1` IDENTIFIED BY PASSWORD '" + hash + "'" + tail
		_, _ = ParseGrant(line)
		_, _ = ParseGrant(privs)
		extra := Extra([]string{line, privs, tail}, appLines, map[string][]string{"r": {line}})
		if len(hash) < 8 || strings.Contains(privs, hash) || strings.Contains(tail, hash) || strings.ContainsAny(hash, "'`\"()") {
			return
		}
		for _, e := range extra {
			if strings.Contains(e, hash) {
				t.Fatalf("%q names the hash %q (line %q)", e, hash, line)
			}
		}
	})
}
