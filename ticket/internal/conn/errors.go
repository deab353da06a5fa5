package conn

import (
	"context"
	"errors"
	"net"
	"os"

	"github.com/go-sql-driver/mysql"
)

// Kind sorts a failed call by what it says about the server, because that
// decides whether the server leaves the rotation (doc.go, "Rotation").
type Kind int

const (
	// KindDead: the server cannot serve: connection refused or reset, the
	// connection closed under a statement, authentication refused, a server
	// shutting down, or any other failure that is not a timeout. One such
	// failure on a request takes the server out of rotation.
	KindDead Kind = iota
	// KindSlow: the statement ran out of time (our deadline, an i/o timeout,
	// the server's own statement or lock timeout) or the server had no
	// connection to spare. A slow server is not a dead one: it leaves the
	// rotation only after several in a row and no success for a while.
	KindSlow
	// KindDeadlock: InnoDB chose this REPLACE as a deadlock victim (1213). Retrying
	// on the same server is safe: a failed REPLACE burns numbers, never repeats one.
	KindDeadlock
	// KindStatement: the server is fine but this statement cannot run there (a table
	// or a grant missing on one server). Marking the server down would also stop
	// Tickets64 and leases for a per-table problem, so the server stays up.
	KindStatement
	// KindExhausted: the AUTO_INCREMENT column reached its maximum (MariaDB error
	// 167 "Out of range value"); the counter does not wrap, it refuses.
	KindExhausted
)

// ServerFault reports whether a failure of kind k is about the server's
// health (dead or slow) rather than about one statement.
func ServerFault(k Kind) bool { return k == KindDead || k == KindSlow }

// MariaDB and MySQL error numbers the classification relies on.
const (
	erAutoincOutOfRange = 167  // HA_ERR_AUTOINC_ERANGE, seen on REPLACE at the column maximum
	erDupEntry          = 1062 // the column maximum can also surface as a duplicate key
	erWarnOutOfRange    = 1264
	ErAutoincReadFailed = 1467
	erTableAccessDenied = 1142
	erColumnAccessDeny  = 1143
	erBadField          = 1054
	erNoSuchTable       = 1146
	erDeadlock          = 1213
	erTooManyConns      = 1040 // the server is full, not gone
	erLockWaitTimeout   = 1205
	erQueryInterrupted  = 1317 // KILL QUERY, e.g. by a DBA's timeout script
	erStatementTimeout  = 1969 // MariaDB max_statement_time
	erMySQLExecTimeout  = 3024 // MySQL max_execution_time
	erUnknownVariable   = 1193
	erDataOutOfRange    = 1690 // a row of counters: value + step past BIGINT UNSIGNED
	erCheckFailed       = 4025 // a CHECK constraint (counters' parity): this statement's, not the server's
	erBadDB             = 1049 // unknown database, at connect
	erDBAccessDenied    = 1044 // the account may not use the database (or it does not exist), at connect
)

// ErrInterrupted marks a REPLACE that MariaDB stopped at its server-side
// bound while it waited for the table's AUTO_INCREMENT lock: the server
// reports that as 1467, the same error as a counter at its column's maximum
// (takeOn tells the two apart by reading the counter).
var ErrInterrupted = errors.New("stopped at its bound while waiting for the AUTO_INCREMENT lock")

func Classify(err error) Kind {
	if errors.Is(err, ErrInterrupted) {
		return KindSlow
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case erDeadlock:
			return KindDeadlock
		case erNoSuchTable, erTableAccessDenied, erColumnAccessDeny, erBadField, erCheckFailed:
			return KindStatement
		case erAutoincOutOfRange, erWarnOutOfRange, ErAutoincReadFailed, erDupEntry, erDataOutOfRange:
			return KindExhausted
		case erTooManyConns, erLockWaitTimeout, erQueryInterrupted, erStatementTimeout, erMySQLExecTimeout:
			return KindSlow
		}
		return KindDead // 1045 access denied, 1049 unknown database, 1053 shutdown, …
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || errors.Is(err, os.ErrDeadlineExceeded) {
		return KindSlow
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return KindSlow
	}
	// Refused, reset, EOF in the handshake (the driver's ErrInvalidConn),
	// wrong settings (ErrMisconfigured), a parity violation, and anything
	// unknown: the next server is a better bet.
	return KindDead
}

func IsMySQLError(err error, number uint16) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == number
}

// erConnectionKilled: the server killed the connection (KILL CONNECTION, or
// a DBA's tool) while a statement ran on it.
const erConnectionKilled = 1927

// brokenUnder reports whether err is a connection that broke while a
// statement ran on it (the driver's ErrInvalidConn, the server's 1927):
// its outcome is unknown, and it says nothing yet of the server, whose next
// connection may well be fine.
func brokenUnder(err error) bool {
	return errors.Is(err, mysql.ErrInvalidConn) || IsMySQLError(err, erConnectionKilled)
}

// errNoSettings: SELECT @@… answered no row, which no server does.
var errNoSettings = errors.New("the server answered no row to SELECT @@auto_increment_increment, …")
