package ticket

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"ticketd/internal/mariadb"
	"ticketd/internal/mysqltest"
)

// schemaFor returns the schema.sql at path for database db, made by the
// command schema.sql's head gives for another schema name (its sed
// expression, read from the file itself, so the two cannot drift apart).
func schemaFor(t testing.TB, path, db string) string {
	t.Helper()
	cur, err := os.ReadFile(filepath.Join(mariadb.RepoRoot(), "schema.sql"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^--\s+sed -E '([^']+)' schema\.sql \|$`).FindSubmatch(cur)
	if m == nil {
		t.Fatal("schema.sql's head gives no sed command for another schema name")
	}
	expr := strings.ReplaceAll(string(m[1]), "ticketserver", db)
	out, err := exec.Command("sed", "-E", expr, path).Output()
	if err != nil {
		t.Fatalf("sed -E %q %s: %v", expr, path, err)
	}
	return string(out)
}

// TestSchemaOnExistingDatabase: schema.sql loaded into a database that
// exists already with MariaDB's own default character set (latin1, whose
// collation ignores case), as a pair set up the old way has it: every table
// it makes states ascii with a binary collation, so the catalog's name check
// still refuses "Orders". Release 2's schema.sql, loaded the same way,
// accepts it (the control: its tables take the database's default). Its
// catalog names only Tickets64, Tickets32 and seq_* tables until this
// schema.sql is loaded over it.
func TestSchemaOnExistingDatabase(t *testing.T) {
	s := mysqltest.Start(t, mysqltest.Options{})
	s.Exec(t, "CREATE DATABASE ticketserver CHARACTER SET latin1 COLLATE latin1_swedish_ci; CREATE DATABASE oldway CHARACTER SET latin1 COLLATE latin1_swedish_ci")
	s.Exec(t, schemaFor(t, filepath.Join(mariadb.RepoRoot(), "schema.sql"), "ticketserver"))
	s.Exec(t, schemaFor(t, filepath.Join("testdata", "schema-release2.sql"), "oldway"))
	if got := s.Query(t, "SELECT DEFAULT_CHARACTER_SET_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'ticketserver'"); got != "latin1" {
		t.Fatalf("the existing database's character set became %q: CREATE DATABASE IF NOT EXISTS should leave it", got)
	}
	if got := s.Query(t, "SELECT GROUP_CONCAT(TABLE_NAME, ' ', TABLE_COLLATION) FROM information_schema.TABLES "+
		"WHERE TABLE_SCHEMA = 'ticketserver' AND TABLE_COLLATION <> 'ascii_bin'"); got != "NULL" {
		t.Fatalf("tables of ticketserver without ascii_bin: %s", got)
	}
	if got := s.Query(t, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'ticketserver'"); got == "0" {
		t.Fatal("schema.sql made no table in ticketserver")
	}
	const orders = "INSERT INTO %s.sequences (name, table_name, bits, block_size) VALUES ('Orders', NULL, 64, 1)"
	if _, err := s.Run(strings.ReplaceAll(orders, "%s", "ticketserver")); err == nil || !strings.Contains(err.Error(), "sequence_name_ok") {
		t.Fatalf("a catalog row named Orders in ticketserver: %v, want the CHECK sequence_name_ok to refuse it", err)
	}
	if _, err := s.Run(strings.ReplaceAll(orders, "%s", "oldway")); err != nil {
		t.Fatalf("the control: release 2's schema in a latin1 database accepted Orders when this test was written, now %v", err)
	}
	// The catalog names any table of Flickr's shape now, a catalog of an
	// older schema.sql too once this one is loaded over it (twice: the
	// second load changes nothing).
	const photos = "INSERT INTO %s.sequences (name, table_name, bits, block_size) VALUES ('photos', 'TicketsPhotos', 64, 1)"
	if _, err := s.Run(strings.ReplaceAll(photos, "%s", "oldway")); err == nil || !strings.Contains(err.Error(), "sequence_table_ok") {
		t.Fatalf("release 2's catalog took a row naming TicketsPhotos (%v): its check should refuse it", err)
	}
	for range 2 {
		s.Exec(t, schemaFor(t, filepath.Join(mariadb.RepoRoot(), "schema.sql"), "oldway"))
		if got := s.Query(t, "SELECT CHECK_CLAUSE FROM information_schema.CHECK_CONSTRAINTS "+
			"WHERE CONSTRAINT_SCHEMA = 'oldway' AND TABLE_NAME = 'sequences' AND CONSTRAINT_NAME = 'sequence_table_ok'"); !strings.Contains(got, "[A-Za-z][A-Za-z0-9_]{0,63}") {
			t.Fatalf("oldway's sequence_table_ok after loading this schema.sql: %q", got)
		}
	}
	for _, db := range []string{"ticketserver", "oldway"} {
		if _, err := s.Run(strings.ReplaceAll(photos, "%s", db)); err != nil {
			t.Fatalf("%s: a catalog row naming TicketsPhotos: %v", db, err)
		}
	}
	if _, err := s.Run("INSERT INTO ticketserver.sequences (name, table_name, bits, block_size) VALUES ('dash', 'tickets-x', 64, 1)"); err == nil {
		t.Fatal("a catalog row naming tickets-x was taken")
	}
	// The grants name no database: they landed on the one loaded.
	if got := s.Query(t, "SHOW GRANTS FOR ticketd_app"); !strings.Contains(got, "ON `ticketserver`.`Tickets64` TO `ticketd_app`") {
		t.Fatalf("grants of ticketd_app:\n%s\nwant them on ticketserver too", got)
	}
}
