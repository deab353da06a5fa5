package conn

import "context"

// Settings are the server variables ticketd depends on, read in one
// statement: by CheckSettings at every connect check (the increment and
// offset of the server's place, the lock mode it warns about), and by
// `ticketd pair check`, which judges a pair before ticketd runs on it
// (durability, the binary log, the time zone and character set it notes).
type Settings struct {
	Inc      uint64 `db:"inc"`       // auto_increment_increment
	Off      uint64 `db:"off"`       // auto_increment_offset
	LockMode int    `db:"lock_mode"` // innodb_autoinc_lock_mode
	Version  string `db:"version"`
	Wait     int64  `db:"wait_timeout"` // seconds
	// FlushAtCommit is innodb_flush_log_at_trx_commit: 1 makes a ticket
	// handed out survive a crash.
	FlushAtCommit int `db:"flush_at_commit"`
	// LogBin: the binary log is on; BinlogFormat and SyncBinlog its format
	// and how often it is synced.
	LogBin       bool   `db:"log_bin"`
	BinlogFormat string `db:"binlog_format"`
	SyncBinlog   uint64 `db:"sync_binlog"`
	// TimeZone is the global time_zone (SYSTEM: SystemTimeZone's).
	TimeZone       string `db:"time_zone"`
	SystemTimeZone string `db:"system_time_zone"`
	// CharsetServer and CollationServer: what new databases and tables get
	// when they name none.
	CharsetServer   string `db:"charset_server"`
	CollationServer string `db:"collation_server"`
}

const settingsQuery = "SELECT @@auto_increment_increment AS inc, @@auto_increment_offset AS off, " +
	"@@innodb_autoinc_lock_mode AS lock_mode, @@version AS version, @@wait_timeout AS wait_timeout, " +
	"@@innodb_flush_log_at_trx_commit AS flush_at_commit, @@log_bin AS log_bin, @@binlog_format AS binlog_format, " +
	"@@sync_binlog AS sync_binlog, @@global.time_zone AS time_zone, @@system_time_zone AS system_time_zone, " +
	"@@character_set_server AS charset_server, @@collation_server AS collation_server"

// ReadSettings reads the server's Settings through q (a Session, or a bare
// pool).
func ReadSettings(ctx context.Context, q Querier) (Settings, error) {
	var rows []Settings
	if err := q.Select(ctx, "checking its settings", &rows, settingsQuery); err != nil {
		return Settings{}, err
	}
	if len(rows) != 1 {
		return Settings{}, errNoSettings
	}
	return rows[0], nil
}
