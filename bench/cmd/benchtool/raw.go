package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
)

// runRaw is the plain Flickr ticket client that ticketd's /v1/tickets with
// B = 1 is compared with: REPLACE INTO tickets.<table> (stub) VALUES ('a')
// and the ticket from the statement's OK packet (LastInsertId), from -c
// goroutines, round-robin over the two servers, one pool per server, for -d.
// It prints one RESULT line in the format of wrk/result.lua.
func runRaw(args []string) error {
	fs := flag.NewFlagSet("raw", flag.ContinueOnError)
	servers := fs.String("servers", "", "the pair: host:port of server 1 (odd tickets), server 2 (even)")
	user := fs.String("user", "ticketd", "database user")
	pwFile := fs.String("password-file", "", "file holding the password")
	table := fs.String("table", "Tickets64", "ticket table in database tickets")
	conc := fs.Int("c", 32, "concurrent callers")
	dur := fs.Duration("d", 10*time.Second, "measured duration")
	warm := fs.Duration("warmup", 0, "unmeasured run before the measurement")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if !regexp.MustCompile(`^(Tickets64|Tickets32|seq_[a-z0-9_]{1,60})$`).MatchString(*table) {
		return fmt.Errorf("raw: bad table name %q", *table)
	}
	pw, err := os.ReadFile(*pwFile)
	if err != nil {
		return fmt.Errorf("raw: reading the password file: %w", err)
	}
	addrs := strings.Split(*servers, ",")
	if len(addrs) != 2 {
		return fmt.Errorf("raw: -servers wants two addresses, got %q", *servers)
	}
	var pools []*sql.DB
	for _, a := range addrs {
		mc := mysql.NewConfig()
		mc.User, mc.Passwd = *user, strings.TrimRight(string(pw), "\r\n")
		mc.Net, mc.Addr, mc.DBName = "tcp", strings.TrimSpace(a), "tickets"
		mc.Timeout, mc.ReadTimeout, mc.WriteTimeout = 5*time.Second, 5*time.Second, 5*time.Second
		conn, err := mysql.NewConnector(mc)
		if err != nil {
			return fmt.Errorf("raw: %s: %w", a, err)
		}
		db := sql.OpenDB(conn)
		defer db.Close()
		// No cap below the callers: a plain client opens what it needs.
		db.SetMaxOpenConns(*conc)
		db.SetMaxIdleConns(*conc)
		pools = append(pools, db)
	}
	q := "REPLACE INTO `" + *table + "` (stub) VALUES ('a')"
	if *warm > 0 {
		if _, err := rawLoad(pools, q, *conc, *warm); err != nil {
			return err
		}
	}
	r, err := rawLoad(pools, q, *conc, *dur)
	if err != nil {
		return err
	}
	slices.Sort(r.lat)
	pct := func(p float64) float64 {
		if len(r.lat) == 0 {
			return 0
		}
		return float64(r.lat[min(len(r.lat)-1, int(p/100*float64(len(r.lat))))].Microseconds())
	}
	var sum time.Duration
	for _, l := range r.lat {
		sum += l
	}
	mean := 0.0
	if len(r.lat) > 0 {
		mean = float64(sum.Microseconds()) / float64(len(r.lat))
	}
	fmt.Printf("RESULT requests=%d duration_us=%d bytes=0 errors=%d non2xx=0 p50_us=%.0f p90_us=%.0f p99_us=%.0f p999_us=%.0f mean_us=%.1f max_us=%.0f deadlocks=%d parity_errors=%d\n",
		len(r.lat), r.elapsed.Microseconds(), r.errors, pct(50), pct(90), pct(99), pct(99.9), mean, pct(100), r.deadlocks, r.parity)
	if r.parity > 0 {
		return fmt.Errorf("raw: %d tickets of the wrong parity", r.parity)
	}
	return nil
}

type rawResult struct {
	lat                       []time.Duration // one per ticket taken
	elapsed                   time.Duration
	errors, deadlocks, parity int64
}

func rawLoad(pools []*sql.DB, q string, conc int, d time.Duration) (rawResult, error) {
	// Callers stop starting statements at the deadline and finish the one in
	// flight: cancelling it would make the driver drop the connection.
	var stop atomic.Bool
	timer := time.AfterFunc(d, func() { stop.Store(true) })
	defer timer.Stop()
	var rr atomic.Uint64
	var errs, deadlocks, parity atomic.Int64
	var firstErr atomic.Value
	lats := make([][]time.Duration, conc)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range conc {
		wg.Go(func() {
			lat := make([]time.Duration, 0, 1<<14)
			for !stop.Load() {
				srv := int(rr.Add(1) % uint64(len(pools)))
				t0 := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				res, err := pools[srv].ExecContext(ctx, q)
				cancel()
				var id int64
				if err == nil {
					id, err = res.LastInsertId()
				}
				if err != nil {
					var me *mysql.MySQLError
					if errors.As(err, &me) && me.Number == 1213 {
						deadlocks.Add(1) // retrying is safe: numbers are burnt, never repeated
						continue
					}
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err)
					continue
				}
				lat = append(lat, time.Since(t0))
				if uint64(id)%2 != uint64(srv+1)%2 {
					parity.Add(1)
				}
			}
			lats[w] = lat
		})
	}
	wg.Wait()
	r := rawResult{elapsed: time.Since(start), errors: errs.Load(), deadlocks: deadlocks.Load(), parity: parity.Load()}
	for _, l := range lats {
		r.lat = append(r.lat, l...)
	}
	if len(r.lat) == 0 {
		if e, _ := firstErr.Load().(error); e != nil {
			return r, fmt.Errorf("raw: no ticket taken: %w", e)
		}
		return r, errors.New("raw: no ticket taken")
	}
	return r, nil
}
