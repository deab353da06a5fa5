package conn

import (
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
	"ticketd/ticket/internal/spec"
)

func TestLatencyEstimator(t *testing.T) {
	var l latency
	const floor, ceiling = 500 * time.Millisecond, 4 * time.Second
	if d := l.deadline(floor, ceiling); d != floor {
		t.Fatalf("no samples: deadline %v, want the floor %v", d, floor)
	}
	l.sample(100 * time.Millisecond)
	if srtt, rttvar, ok := l.estimate(); !ok || srtt != 100*time.Millisecond || rttvar != 50*time.Millisecond {
		t.Fatalf("first sample: srtt %v rttvar %v, want 100ms and 50ms (RFC 6298)", srtt, rttvar)
	}
	l.sample(200 * time.Millisecond)
	if srtt, rttvar, _ := l.estimate(); srtt != 112500*time.Microsecond || rttvar != 62500*time.Microsecond {
		t.Fatalf("second sample: srtt %v rttvar %v, want 112.5ms and 62.5ms", srtt, rttvar)
	}
	if d := l.deadline(floor, ceiling); d != floor {
		t.Fatalf("srtt+4·rttvar = 362.5ms: deadline %v, want the floor", d)
	}
	// A server 1 s away: the deadline follows it above the floor.
	for range 50 {
		l.sample(time.Second)
	}
	d := l.deadline(floor, ceiling)
	if d < time.Second || d > 1200*time.Millisecond {
		t.Fatalf("steady 1 s samples: deadline %v, want a little above 1 s", d)
	}
	// Timeouts back it off, doubling, up to the cap; a success ends it.
	l.timedOut()
	if got := l.deadline(floor, ceiling); got != min(2*d, ceiling) {
		t.Fatalf("after one timeout: %v, want %v", got, 2*d)
	}
	for range 10 {
		l.timedOut()
	}
	if got := l.deadline(floor, ceiling); got != ceiling {
		t.Fatalf("after many timeouts: %v, want the cap %v", got, ceiling)
	}
	l.sample(time.Second)
	if got := l.deadline(floor, ceiling); got > 1200*time.Millisecond {
		t.Fatalf("after a success: %v, want the Backoff gone", got)
	}
}

func TestConnectBudget(t *testing.T) {
	var l latency
	const floor, ceiling = 500 * time.Millisecond, 2 * time.Second
	if b := l.connectBudget(floor, ceiling); b != ceiling {
		t.Fatalf("no latency known: budget %v, want all of %v", b, ceiling)
	}
	for range 50 {
		l.sample(time.Millisecond)
	}
	if b := l.connectBudget(floor, ceiling); b != floor {
		t.Fatalf("1 ms away: budget %v, want the floor %v", b, floor)
	}
	for range 50 {
		l.sample(200 * time.Millisecond)
	}
	if b := l.connectBudget(floor, ceiling); b < 1200*time.Millisecond || b > ceiling {
		t.Fatalf("200 ms away: budget %v, want about 6 round trips, at most %v", b, ceiling)
	}
}

func TestBoundMariaDB(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{512 * time.Millisecond, "SET STATEMENT max_statement_time=0.512 FOR REPLACE INTO `Tickets64` (stub) VALUES ('a')"},
		{time.Nanosecond, "SET STATEMENT max_statement_time=0.001 FOR REPLACE INTO `Tickets64` (stub) VALUES ('a')"},
		{2500 * time.Millisecond, "SET STATEMENT max_statement_time=2.500 FOR REPLACE INTO `Tickets64` (stub) VALUES ('a')"},
		{12*time.Second + 7*time.Millisecond, "SET STATEMENT max_statement_time=12.007 FOR REPLACE INTO `Tickets64` (stub) VALUES ('a')"},
	} {
		if got := boundMariaDB("REPLACE INTO `Tickets64` (stub) VALUES ('a')", tt.d); got != tt.want {
			t.Errorf("boundMariaDB(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

// TestSessionParams: MySQL gets its bounds as Session settings (and, from 8.0,
// information_schema_stats_expiry = 0 so counters are current); MariaDB none,
// its statements carry their own.
func TestSessionParams(t *testing.T) {
	s := offlineServer(t)
	for _, tt := range []struct {
		version string
		want    map[string]string
	}{
		{"10.11.6-MariaDB-log", nil},
		{"8.0.36", map[string]string{"lock_wait_timeout": "4", "innodb_lock_wait_timeout": "4", "max_execution_time": "4000",
			"information_schema_stats_expiry": "0"}},
		{"5.7.44-log", map[string]string{"lock_wait_timeout": "4", "innodb_lock_wait_timeout": "4", "max_execution_time": "4000"}},
		{"5.6.51", map[string]string{"lock_wait_timeout": "4", "innodb_lock_wait_timeout": "4"}},
	} {
		v := tt.version
		s.version.Store(&v)
		s.flavour.Store(uint32(flavourOf(v)))
		got := s.sessionParams()
		if fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("%s: sessionParams = %v, want %v", v, got, tt.want)
		}
		wantBound := flavourOf(v) == flavourMariaDB
		if b := s.bounded("SELECT 1", time.Second); (b != "SELECT 1") != wantBound {
			t.Errorf("%s: bounded = %q", v, b)
		}
	}
}

// offlineServer is a server that never connects (its pool opens lazily).
func offlineServer(t *testing.T) *Server { return testServer(t, func(*spec.Config) {}) }

// testServer is server 1 of the default configuration as mod changes it,
// logging nowhere, its pool closed when the test ends.
func testServer(t *testing.T, mod func(*spec.Config)) *Server {
	t.Helper()
	cfg := spec.DefaultConfig()
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	mod(&cfg)
	cfg = cfg.WithDefaults()
	s, err := NewServer(cfg, 0, NewCredential(cfg))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Pool().Close() })
	return s
}

// onServer is testServer on ms, as the ticketd account.
func onServer(ms *mysqltest.Server, mod func(*spec.Config)) func(*spec.Config) {
	return func(c *spec.Config) {
		c.Servers = []spec.ServerConfig{{Addr: ms.Addr()}, {Addr: "127.0.0.1:1"}}
		c.User, c.Password = mysqltest.AppUser, ms.AppPassword
		mod(c)
	}
}
