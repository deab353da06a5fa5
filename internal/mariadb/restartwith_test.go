package mariadb

import (
	"testing"
)

// TestRestartWith: a setting read only at start, changed by a restart with
// other arguments; the data stays.
func TestRestartWith(t *testing.T) {
	if testing.Short() {
		t.Skip("needs MariaDB; not in -short")
	}
	s, err := Start(Options{ExtraArgs: []string{"--innodb-autoinc-lock-mode=1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Run("REPLACE INTO Tickets64 (stub) VALUES ('a')"); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		extra []string
		want  string
	}{{nil, "0"}, {[]string{"--innodb-autoinc-lock-mode=2"}, "2"}} {
		if err := s.RestartWith(tt.extra...); err != nil {
			t.Fatal(err)
		}
		got, err := s.Run("SELECT CONCAT(@@innodb_autoinc_lock_mode, ' ', (SELECT COUNT(*) FROM Tickets64))")
		if err != nil {
			t.Fatal(err)
		}
		if got != tt.want+" 1" {
			t.Fatalf("after RestartWith(%q): lock mode and rows %q, want %s and the row kept", tt.extra, got, tt.want)
		}
	}
}
