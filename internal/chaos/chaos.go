package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"ticketd/internal/mariadb"
	"ticketd/internal/toxiproxy"
	"ticketd/snowflake"
)

// Layout is the deployment's ID layout during the run: 41/7/3/12, 8 worker
// IDs (4 per ticket server) instead of the default 32, so that a restarted,
// racing or clock-behind ticketd lands on a worker ID that was just in use
// often rather than rarely.
const Layout = "41/7/3/12"

// LayoutFour is the layout of a run on four servers: 41/6/4/12, 16 worker
// IDs, 4 per server again, so that with two of the four down the two left
// still have a worker ID for every ticketd and its standby.
const LayoutFour = "41/6/4/12"

// layoutFor is the run's layout for n servers.
func layoutFor(n int) string {
	if n == 4 {
		return LayoutFour
	}
	return Layout
}

// DefaultRate of each /v1/id client, in requests per second.
const DefaultRate = 1000

// Config of a run. Zero values are defaults.
type Config struct {
	// Duration of the load (default 3 minutes), faults included: rounds of
	// faults run while one fits. One full round always runs, however short.
	Duration time.Duration
	// Clients: /v1/id clients per ticketd process, each on its own
	// keep-alive connection (default 4). Each process also gets one /v1/ids
	// client and one /v1/tickets client.
	Clients int
	// Rate: requests per second of each /v1/id client (0: DefaultRate;
	// negative: as fast as the answers come). The load is a steady one, not
	// a benchmark: a saturated machine only measures itself.
	Rate int
	// Seed for the choice of targets, junk and batch sizes (0: from the
	// clock). Timing is the machine's, so a seed does not replay a run.
	Seed uint64
	// OutDir receives every ticketd's log, the ticket servers' error logs
	// and report.txt. Created if missing; required.
	OutDir string
	// Ticketd is the binary to run; empty: built into OutDir.
	Ticketd string
	// Bare is the bare fasthttp server (cmd/bare) loaded beside ticketd as
	// the control of the tail figures (tail.go); empty: built into OutDir.
	Bare string
	// Short compresses every pause and outage to fit one round into about a
	// minute (the version inside make test).
	Short bool
	// Servers is the number of ticket servers: 2 (the default) or 4. Four
	// run their own round of faults (schedule.go, roundFour).
	Servers int
	// Progress receives a line per step as it happens (nil: none).
	Progress io.Writer
}

// timings of the schedule.
type timings struct {
	warmup, gap      time.Duration // load before the first fault; between faults
	dbStop, dbFreeze time.Duration // ticket server outages
	clockRun         time.Duration // load on a clock-behind ticketd
	clockTries       int           // clock-behind starts per fault, at most
	raceRun          time.Duration // load on a racing pair
	junk             junkPlan
	// Network faults: 200 ms to both servers; a black hole (held at least
	// this long, and until every ticketd has switched away); reset_peer;
	// a 10 KB/s link.
	netLatency, netHole, netReset, netSlow time.Duration
	// promoteLag: how long a lagging replica's replication is stopped, at
	// least, before its primary is killed and it is promoted; and how long
	// load runs between the backup and the restore of db-restore.
	promoteLag time.Duration
	// twoDown: how long two of four servers stay stopped at once.
	twoDown time.Duration
	// diskFull: how long a ticket server's disk is kept full (disk-full,
	// in the full schedule only: MariaDB writes again up to a minute after
	// the space is freed).
	diskFull time.Duration
	// drain: every ticketd's -drain-delay, how long a clean stop keeps
	// serving with /readyz at 503 (no balancer watches here: shorter in the
	// short schedule, where clean stops are many).
	drain time.Duration
}

func (c Config) timings() timings {
	if c.Short {
		// A server stopped for a whole reservation: no lease on it can last
		// without a switch.
		return timings{warmup: time.Second, gap: 200 * time.Millisecond,
			dbStop: leaseReserve, dbFreeze: 3 * time.Second,
			clockRun: 1500 * time.Millisecond, clockTries: 2, raceRun: 700 * time.Millisecond,
			junk:       junkPlan{randomRequests: 200, slow: 2 * time.Second},
			netLatency: 3 * time.Second, netHole: 3 * time.Second, netReset: 2 * time.Second, netSlow: 2 * time.Second,
			promoteLag: 1500 * time.Millisecond, drain: 200 * time.Millisecond, twoDown: leaseReserve}
	}
	return timings{warmup: 5 * time.Second, gap: 3 * time.Second,
		dbStop: 2 * leaseReserve, dbFreeze: 8 * time.Second,
		clockRun: 4 * time.Second, clockTries: 4, raceRun: 2 * time.Second,
		junk:       junkPlan{randomRequests: 600, slow: 3 * time.Second, beyondTimeout: true},
		netLatency: 60 * time.Second, netHole: 15 * time.Second, netReset: 10 * time.Second, netSlow: 15 * time.Second,
		promoteLag: 5 * time.Second, drain: time.Second, twoDown: 20 * time.Second,
		diskFull: 30 * time.Second}
}

// Event is one fault as it ran.
type Event struct {
	At      time.Duration // since the load started
	Begin   time.Duration // when its window began (tail.go): At of the event before in its step, or the step's start
	Fault   string
	Target  string
	Outcome string
}

// run is the state of one run.
type run struct {
	cfg     Config
	tm      timings
	ctx     context.Context
	bin     string
	db      *mariadb.Set // the ticket servers
	tp      *toxiproxy.Server
	px      []*toxiproxy.Proxy // in front of db.Servers[i]
	servers string             // what ticketd is given: the proxies, "127.0.0.1:p1,127.0.0.1:p2"
	layout  snowflake.Layout
	t0      time.Time // the load's start

	loadStopped atomic.Bool
	windows     windows // per-fault counts of the load
	tail        tail    // every /v1/id latency, and the bare server's beside them (tail.go)

	mu         sync.Mutex
	rng        *rand.Rand
	nextID     int
	instances  []*instance
	recorders  []*recorder
	lastHolder map[uint32]holderSeen // worker ID → who was last seen holding it
	events     []Event
	broken     []string // invariant breaks and harness failures, in words

	slots []*slot

	// replicas being prepared for the next promotion (nil: none), and the
	// check that a repaired server is taken back (nil: none running).
	replicas *replicaSet
	repaired chan struct{}

	// Counters of the schedule.
	failedStarts, raceSame, racePairs, clockFloorUsed int
	junkRequests, junk5xx, junkUnready                int
	junkClasses                                       map[string]int
	repairNotes                                       []string // how the lagging promotions' repairs ended
	startLeases                                       []int    // leases per server once the three slots started
	// disk-full: faults run, and the samples of the full server's state
	// while it was full and after a ticketd had found it not committing.
	diskFulls, diskSamplesOut, diskSamplesUp int
}

type holderSeen struct {
	in *instance
	at time.Time
}

type slot struct {
	name string
	in   *instance
}

// Run runs the suite: a fresh pair of ticket servers, three ticketd
// processes under load, the fault schedule, then the checks. The Result is
// returned whenever load ran, even with an error (a harness failure or ctx
// ending early); Result.OK says whether every invariant held.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Duration <= 0 {
		cfg.Duration = 3 * time.Minute
	}
	if cfg.Clients <= 0 {
		cfg.Clients = 4
	}
	if cfg.Rate == 0 {
		cfg.Rate = DefaultRate
	}
	if cfg.Seed == 0 {
		cfg.Seed = uint64(time.Now().UnixNano())
	}
	if cfg.Servers == 0 {
		cfg.Servers = 2
	}
	if cfg.Servers != 2 && cfg.Servers != 4 {
		return nil, fmt.Errorf("chaos: %d ticket servers: want 2 or 4", cfg.Servers)
	}
	if cfg.OutDir == "" {
		return nil, errors.New("chaos: Config.OutDir is required")
	}
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	if err := os.MkdirAll(cfg.OutDir, 0o755); err != nil {
		return nil, err
	}
	layout, err := snowflake.ParseLayout(layoutFor(cfg.Servers))
	if err != nil {
		return nil, err
	}
	r := &run{cfg: cfg, tm: cfg.timings(), layout: layout, rng: rand.New(rand.NewPCG(cfg.Seed, 7)),
		lastHolder: map[uint32]holderSeen{}, junkClasses: map[string]int{}}

	// Bound the whole run: the schedule plus generous room for setup,
	// outages in progress and teardown.
	ctx, cancel := context.WithTimeout(ctx, cfg.Duration+cfg.Duration/2+3*time.Minute)
	defer cancel()
	r.ctx = ctx

	if r.bin = cfg.Ticketd; r.bin == "" {
		if r.bin, err = buildTicketd(ctx, cfg.OutDir); err != nil {
			return nil, err
		}
	}
	r.progress("starting %d ticket servers (MariaDB, the repository's my.cnf and schema.sql)", cfg.Servers)
	if r.db, err = r.startSet(cfg.Servers); err != nil {
		return nil, fmt.Errorf("chaos: starting the ticket servers: %w", err)
	}
	defer r.closeServers()
	if err := r.setupSQL(); err != nil {
		return nil, err
	}
	r.progress("starting toxiproxy in front of each ticket server (every ticketd connects through it)")
	// Deferred after closeServers, so it runs before: once every ticketd has
	// stopped, before the servers.
	defer r.stopProxies()
	if err := r.startProxies(); err != nil {
		return nil, err
	}

	// The control: the bare server under the same load, from now to the end.
	if err := r.startBare(); err != nil {
		return nil, err
	}
	defer r.stopBare()

	pollCtx, stopPoll := context.WithCancel(context.Background())
	var pollDone sync.WaitGroup
	pollDone.Go(func() { r.poller(pollCtx) })

	runErr := r.schedule()
	r.waitRepaired()
	r.closeReplicas()

	// Teardown: stop every instance still running, cleanly when ctx is
	// alive, so the last metrics are read.
	r.loadStopped.Store(true)
	for _, in := range r.allInstances() {
		if !in.exited() {
			r.stop(in, ctx.Err() != nil)
		}
	}
	stopPoll()
	pollDone.Wait()
	r.stopBare()
	if runErr == nil {
		runErr = ctx.Err()
	}
	res := r.verify()
	if werr := res.writeFiles(r); werr != nil && runErr == nil {
		runErr = werr
	}
	return res, runErr
}

func (r *run) progress(format string, args ...any) {
	at := ""
	if !r.t0.IsZero() {
		at = fmt.Sprintf("+%s ", r.since(time.Now()))
	}
	fmt.Fprintf(r.cfg.Progress, "chaos: %s%s\n", at, fmt.Sprintf(format, args...))
}

func (r *run) since(t time.Time) time.Duration {
	return t.Sub(r.t0).Round(100 * time.Millisecond)
}

func (r *run) event(fault, target, outcome string) {
	e := Event{At: time.Since(r.t0), Fault: fault, Target: target, Outcome: outcome}
	r.mu.Lock()
	e.Begin, r.tail.mark = r.tail.windowBegin(r.t0), r.t0.Add(e.At)
	r.events = append(r.events, e)
	r.mu.Unlock()
	r.progress("%s %s: %s", fault, target, outcome)
}

func (r *run) breakf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.mu.Lock()
	r.broken = append(r.broken, msg)
	r.mu.Unlock()
	r.progress("BROKEN: %s", msg)
}

func (r *run) allInstances() []*instance {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*instance(nil), r.instances...)
}

// sleep waits d, or less if the run is cancelled; false then.
func (r *run) sleep(d time.Duration) bool {
	select {
	case <-r.ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// buildTicketd builds cmd/ticketd into dir.
func buildTicketd(ctx context.Context, dir string) (string, error) {
	return buildCommand(ctx, dir, "ticketd")
}

// buildCommand builds cmd/name of the repository into dir.
func buildCommand(ctx context.Context, dir, name string) (string, error) {
	root := mariadb.RepoRoot()
	if root == "" {
		return "", fmt.Errorf("chaos: cannot find the repository to build %s", name)
	}
	bin := filepath.Join(dir, name)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/"+name)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("chaos: go build ./cmd/%s: %v\n%s", name, err, out)
	}
	return bin, nil
}

// setupSQL does what a DBA does before ticketd runs: two named sequences
// (block size 1 and 100), made with `ticketd sequence create` and the
// sequence account, and, as root on both servers, a deployment record dated a
// day back, as a deployment that has run for a day would have. A ticketd is
// never given IDs below its deployment's first start, so on a deployment
// started seconds ago a clock an hour behind would be clamped to that start
// and the fault would be a weaker one.
func (r *run) setupSQL() error {
	for _, s := range sequences {
		if s.name == "tickets64" {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		// Straight to the servers, as a DBA does: the proxies are ticketd's.
		cmd := exec.CommandContext(ctx, r.bin, "sequence", "create", s.name, "-block", strconv.Itoa(s.block),
			"-servers", r.db.Addrs(), "-user", r.db.SeqUser)
		// The password through the environment, never the command line.
		cmd.Env = append(os.Environ(), "TICKETD_SEQUENCE_PASSWORD="+r.db.SeqPassword)
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			return fmt.Errorf("chaos: ticketd sequence create %s: %w\n%s", s.name, err, out)
		}
	}
	firstStart := time.Now().Add(-24 * time.Hour).UnixMilli()
	sql := fmt.Sprintf("INSERT INTO tickets.deployment (id, layout, epoch_ms, first_start_ms, created_by) VALUES (1, '%s', %d, %d, 'chaos: a deployment started a day ago');\n",
		r.layout.String(), r.layout.EpochMs, firstStart)
	for _, s := range r.db.Servers {
		if _, err := s.Run(sql); err != nil {
			return fmt.Errorf("chaos: setting up server %d: %w", s.Offset, err)
		}
	}
	return nil
}

// closeServers keeps the servers' error logs and stops them.
func (r *run) closeServers() {
	for _, s := range r.db.Servers {
		_ = os.WriteFile(filepath.Join(r.cfg.OutDir, fmt.Sprintf("mariadb-%d.log", s.Offset)), []byte(s.ErrorLog()), 0o644)
	}
	if err := r.db.Close(); err != nil {
		r.progress("stopping the ticket servers: %v", err)
	}
}
