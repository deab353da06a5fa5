package conn

import "context"

// Settings are the server variables ticketd depends on, read in one
// statement: by CheckSettings at every connect check, and by the tools that
// judge a pair before ticketd runs on it.
type Settings struct {
	Inc      uint64 `db:"inc"`       // auto_increment_increment
	Off      uint64 `db:"off"`       // auto_increment_offset
	LockMode int    `db:"lock_mode"` // innodb_autoinc_lock_mode
	Version  string `db:"version"`
	Wait     int64  `db:"wait_timeout"` // seconds
}

const settingsQuery = "SELECT @@auto_increment_increment AS inc, @@auto_increment_offset AS off, " +
	"@@innodb_autoinc_lock_mode AS lock_mode, @@version AS version, @@wait_timeout AS wait_timeout"

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
