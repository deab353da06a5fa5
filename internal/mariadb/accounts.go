package mariadb

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
)

const (
	// AppUser is the account schema.sql creates (locked) for the ticketd daemon.
	AppUser = "ticketd"
	// AdminUser is the account scripts/db.sh creates for `ticketd repair`;
	// Boot creates it too so repair can be tested.
	AdminUser = "ticketd_repair"
)

// accountsSQL unlocks the ticketd account and creates the repair account, as
// scripts/db.sh does. Hex passwords need no quoting; FLUSH PRIVILEGES is not
// needed: ALTER/CREATE USER apply at once.
func accountsSQL(s *Server) string {
	return fmt.Sprintf(`
ALTER USER '%s'@'127.0.0.1' IDENTIFIED BY '%s' ACCOUNT UNLOCK;
CREATE USER IF NOT EXISTS '%s'@'127.0.0.1' IDENTIFIED BY '%s';
GRANT ticketd_admin TO '%s'@'127.0.0.1';
SET DEFAULT ROLE ticketd_admin FOR '%s'@'127.0.0.1';
`, s.AppUser, s.AppPassword, s.AdminUser, s.AdminPassword, s.AdminUser, s.AdminUser)
}

// randomPassword returns 128 random bits in hex.
func randomPassword() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b)
}
