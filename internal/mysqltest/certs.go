package mysqltest

import (
	"testing"

	"ticketd/internal/mariadb"
)

// Certs makes a CA, a server certificate (for 127.0.0.1 and localhost, or
// names) and a client certificate with the repository's scripts/certs.sh,
// in a folder removed after the test.
func Certs(t testing.TB, names ...string) mariadb.Certs {
	t.Helper()
	c, err := mariadb.MakeCerts(t.TempDir(), names...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
