package conn

import (
	"strconv"
	"strings"
	"time"
)

// flavour is the kind of server, which decides how statements are bounded on
// the server side (doc.go, "Deadlines").
type flavour uint32

const (
	flavourUnknown flavour = iota
	flavourMariaDB         // SET STATEMENT max_statement_time=S FOR …, per statement
	flavourMySQL           // Session max_execution_time (SELECT only), lock timeouts
)

// bounded returns query with its server-side bound: on MariaDB the
// statement stops on the server too (error 1969), so a statement ticketd
// gave up on never runs on. The bound is d less one round trip (at least
// d/2): the server then stops the statement, and its error comes back,
// just before ticketd's own deadline would close the connection, so a slow
// server costs timed-out statements but not the connections they ran on
// (a new one costs four round trips), and the server holds no more
// connections of ticketd than ticketd does. MySQL's bound is a Session setting
// (sessionParams); an unknown server gets the query as it is.
func (s *Server) bounded(query string, d time.Duration) string {
	if flavour(s.flavour.Load()) != flavourMariaDB {
		return query
	}
	return boundMariaDB(query, s.serverBound(d))
}

// serverBound is the server-side bound of a statement whose deadline is d:
// d less a round trip, its deviation and 10 ms, and at most three quarters
// of d (room for a busy server's timer and a busy client's scheduler), but
// at least half of d.
func (s *Server) serverBound(d time.Duration) time.Duration {
	srtt, rttvar, _ := s.lat.estimate()
	return max(min(d-srtt-rttvar-10*time.Millisecond, d*3/4), d/2)
}

func boundMariaDB(query string, d time.Duration) string {
	// At least 1 ms: max_statement_time=0 would mean no bound at all.
	ms := max(int64((d+time.Millisecond-1)/time.Millisecond), 1)
	b := make([]byte, 0, len("SET STATEMENT max_statement_time=.000 FOR ")+8+len(query))
	b = append(b, "SET STATEMENT max_statement_time="...)
	b = strconv.AppendInt(b, ms/1000, 10)
	b = append(b, '.')
	frac := ms % 1000
	b = append(b, byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10))
	b = append(b, " FOR "...)
	b = append(b, query...)
	return string(b)
}

// sessionParams are the Session variables every new connection sets (one
// SET, sent by the driver right after the handshake): none on MariaDB, whose
// statements carry their own bound; on MySQL the bound of SELECTs
// (max_execution_time, ms, the statement cap), lock waits bounded to the
// cap, and, on MySQL 8, information_schema_stats_expiry = 0 so that the
// counters read from information_schema are current, not up to a day old.
func (s *Server) sessionParams() map[string]string {
	if flavour(s.flavour.Load()) != flavourMySQL {
		return nil
	}
	capMs := s.ceiling.Milliseconds()
	capS := (capMs + 999) / 1000
	p := map[string]string{
		"lock_wait_timeout":        strconv.FormatInt(capS, 10),
		"innodb_lock_wait_timeout": strconv.FormatInt(capS, 10),
	}
	v := ""
	if vp := s.version.Load(); vp != nil {
		v = *vp
	}
	major, minor := versionOf(v)
	if major > 5 || (major == 5 && minor >= 7) {
		p["max_execution_time"] = strconv.FormatInt(capMs, 10)
	}
	if major >= 8 {
		p["information_schema_stats_expiry"] = "0"
	}
	return p
}

// versionOf parses the major and minor numbers of a version string such as
// "8.0.36" or "10.11.6-MariaDB-log"; zeros when it cannot.
func versionOf(v string) (major, minor int) {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return 0, 0
	}
	major, _ = strconv.Atoi(parts[0])
	digits := parts[1]
	for i, c := range digits {
		if c < '0' || c > '9' {
			digits = digits[:i]
			break
		}
	}
	minor, _ = strconv.Atoi(digits)
	return major, minor
}

// flavourOf tells MariaDB from MySQL by the version string.
func flavourOf(version string) flavour {
	if strings.Contains(strings.ToLower(version), "mariadb") {
		return flavourMariaDB
	}
	return flavourMySQL
}
