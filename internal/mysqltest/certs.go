package mysqltest

import (
	"testing"

	"ticketd/internal/mariadb"
)

// Certs makes a CA, a server certificate (for 127.0.0.1 and localhost, or
// names) and a client certificate with the repository's scripts/certs.sh,
// in a folder removed after the test. Like everything that serves a MariaDB
// test, it skips under go test -short.
func Certs(t testing.TB, names ...string) mariadb.Certs {
	t.Helper()
	skipShort(t)
	c, err := mariadb.MakeCerts(t.TempDir(), names...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
