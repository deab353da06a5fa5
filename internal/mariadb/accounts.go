package mariadb

import (
	"crypto/rand"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strings"
)

const (
	// AppUser is the account schema.sql creates (locked) for the ticketd daemon.
	AppUser = "ticketd"
	// AdminUser is the account scripts/db.sh creates for `ticketd repair`;
	// Boot creates it too so repair can be tested.
	AdminUser = "ticketd_repair"
	// SeqUser is the account scripts/db.sh creates for `ticketd sequence`
	// (role ticketd_sequences); Boot creates it too.
	SeqUser = "ticketd_seq"
	// ReplUser is the replication account (REPLICATION SLAVE only) a replica
	// connects to its primary with, as docs/backups.md ("Replicas") sets it up.
	// Boot creates it on every server, so any server can get a replica.
	ReplUser = "ticketd_repl"
)

// accountsSQL unlocks the ticketd account and creates the repair, sequence
// and replication accounts, as scripts/db.sh and docs/dba.md do. Passwords are
// given as their mysql_native_password hash (IDENTIFIED BY PASSWORD '*…'):
// these statements go to the binary log, which is kept for days and shipped
// to every replica, and it must not carry a password in clear. FLUSH
// PRIVILEGES is not needed: ALTER/CREATE USER apply at once.
func accountsSQL(s *Server) string {
	return fmt.Sprintf(`
ALTER USER '%[1]s'@'127.0.0.1' IDENTIFIED BY PASSWORD '%[2]s' ACCOUNT UNLOCK;
CREATE USER IF NOT EXISTS '%[3]s'@'127.0.0.1' IDENTIFIED BY PASSWORD '%[4]s';
GRANT ticketd_admin TO '%[3]s'@'127.0.0.1';
SET DEFAULT ROLE ticketd_admin FOR '%[3]s'@'127.0.0.1';
CREATE USER IF NOT EXISTS '%[7]s'@'127.0.0.1' IDENTIFIED BY PASSWORD '%[8]s';
GRANT ticketd_sequences TO '%[7]s'@'127.0.0.1';
SET DEFAULT ROLE ticketd_sequences FOR '%[7]s'@'127.0.0.1';
CREATE USER IF NOT EXISTS '%[5]s'@'127.0.0.1' IDENTIFIED BY PASSWORD '%[6]s';
GRANT REPLICATION SLAVE ON *.* TO '%[5]s'@'127.0.0.1';
`, s.AppUser, NativePasswordHash(s.AppPassword), s.AdminUser, NativePasswordHash(s.AdminPassword),
		ReplUser, NativePasswordHash(s.ReplPassword), s.SeqUser, NativePasswordHash(s.SeqPassword)) + dropHostRootSQL
}

// dropHostRootSQL drops 'root'@'<host name>', which mariadb-install-db makes
// and skip-name-resolve leaves unusable, and which makes mariadb-dump
// --system=users (a replica's seed) fail: as scripts/db.sh does. Every server
// runs it, replicas too (their seed does not drop their own): a promoted
// replica must be able to get a replica in turn. The harness keeps root on
// 127.0.0.1 without a password (RootDSN, waitReady).
const dropHostRootSQL = `
SET @drop = (SELECT CONCAT('DROP USER IF EXISTS ', GROUP_CONCAT(QUOTE(User), '@', QUOTE(Host) SEPARATOR ', '))
             FROM mysql.user WHERE User = 'root' AND Host NOT IN ('localhost', '127.0.0.1', '::1'));
SET @drop = IFNULL(@drop, 'DO 0');
PREPARE drop_root FROM @drop;
EXECUTE drop_root;
DEALLOCATE PREPARE drop_root;
`

// NativePasswordHash returns the mysql_native_password hash of pw, as
// MariaDB's PASSWORD() computes it: "*" and the upper-case hex of
// SHA1(SHA1(pw)). `IDENTIFIED BY PASSWORD '<hash>'` sets a password without
// the password itself ever reaching the server or its binary log. The empty
// password has the empty hash (no password), as MariaDB's PASSWORD does.
func NativePasswordHash(pw string) string {
	if pw == "" {
		return ""
	}
	first := sha1.Sum([]byte(pw))
	second := sha1.Sum(first[:])
	return "*" + strings.ToUpper(hex.EncodeToString(second[:]))
}

// randomPassword returns 128 random bits in hex.
func randomPassword() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b)
}
