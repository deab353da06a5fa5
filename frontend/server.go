package frontend

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"ticketd/internal/logsum"
	"ticketd/snowflake"
	"ticketd/ticket"
	"ticketd/worker"
)

// IDs is what the API needs of the snowflake side (*worker.Keeper). NextWait
// and NextNWait must be safe for concurrent use and should not allocate while
// an ID can be issued at once; while a replacement generator is on its way
// they may wait for it, until deadline at the latest (the request's deadline:
// RequestTimeout after the handler was called). Status is called off the hot
// path.
// NextAfterWait and NextNAfterWait are the same for IDs greater than after
// (?after=). Reach is what bounds an after= ID or a decoded public form
// (worker.Keeper.Reach, snowflake.Reach): its time may be up to
// MaxAfterAhead past the later of this ticketd's clock plus
// Config.AfterLead and the generator's floor, the clock being the later of
// the wall clock and the generator's clock; or it may be at most the last
// ID issued. Reach is asked only of an ID past the wall clock's bound; it
// must not wait and should not allocate (the zero Reach: the wall clock
// alone bounds them).
type IDs interface {
	NextWait(deadline time.Time) (int64, error)
	NextNWait(dst []int64, deadline time.Time) (int, error)
	NextAfterWait(after int64, deadline time.Time) (int64, error)
	NextNAfterWait(dst []int64, after int64, deadline time.Time) (int, error)
	Reach() snowflake.Reach
	Status() worker.Status
}

// Tickets is what the API needs of the ticket servers (*ticket.Pair). Calls
// must honour ctx's deadline. TryNextN serves values already in memory, with no
// I/O and no context, or reports false and takes nothing.
type Tickets interface {
	TryNextN(name string, dst []uint64) (int, bool)
	NextN(ctx context.Context, name string, dst []uint64) (int, error)
	// NextRun: values of one block, or with block size 1 a claim's tickets
	// a step apart, that no other caller gets (tinyid's segments).
	NextRun(ctx context.Context, name string, most uint64) (ticket.Run, error)
	// TryNextRun is NextRun from memory, as TryNextN is NextN.
	TryNextRun(name string, most uint64) (ticket.Run, bool)
	Ticket64(ctx context.Context) (ticket.Ticket, error)
	Health() []ticket.ServerHealth
}

// Server is ticketd's HTTP API over an ID issuer and a ticket pair. Its
// lifecycle is net/http's: Serve blocks until Shutdown, which drains requests
// in flight. Drain, called first, lets a load balancer move traffic away
// before the listeners close.
type Server struct {
	cfg     Config
	ids     IDs
	tickets Tickets
	log     *slog.Logger
	// warn aggregates the per-request warnings (a failed ticket request, a
	// fallback that could not answer): a flood of failures is one line per
	// kind every 10 s, and ticketd_warnings_total counts them all.
	warn    *logsum.Summary
	metrics *serverMetrics
	hs      *fasthttp.Server
	// events summarises what the log must not repeat without bound
	// (connection errors, refused connections, bad framing), and counts it.
	events *logsum.Summary

	// base is the parent of every MySQL-backed call's context. Shutdown
	// cancels it only when its own deadline runs out, to unblock handlers.
	base   context.Context
	cancel context.CancelFunc

	ready    atomic.Bool // SetReady
	draining atomic.Bool // Drain or Shutdown was called: /readyz 503, Connection: close
	closing  atomic.Bool // Shutdown has begun

	mu        sync.Mutex
	closed    bool
	listeners []*onceCloseListener
	conns     map[net.Conn]struct{}
	serving   sync.WaitGroup // Serve and ServeAdmin calls in progress
	admin     *http.Server   // ServeAdmin's, once called
	// stopped is closed when Shutdown begins: it ends the memory reclaimer
	// and any accept back-off.
	stopped    chan struct{}
	reclaiming bool // the reclaimer goroutine was started

	connMu    sync.Mutex         // guards the connection accounting below
	open      int                // connections admitted and not yet closed
	peak      int                // most open since the last memory reclaim
	perIP     map[netip.Addr]int // by client (conns.go)
	refusals  chan struct{}      // a slot per refusal being answered
	refusing  sync.WaitGroup     // refusals being answered
	reclaimCh chan struct{}
	// reclaimAfter: how many connections must have closed since the peak
	// before memory is given back (reclaimBurst, lowered by tests).
	reclaimAfter int
	refuseTotal  []byte // the whole answer to a connection over MaxConns
	refusePerIP  []byte // the whole answer to a connection over MaxConnsPerIP

	// tls is Config.TLS at TLS 1.2 or later; nil for plain HTTP.
	tls *tls.Config
	// quota holds each token's ticketd_quota_rejections_total counter, by
	// name, made when the tokens are loaded (access.go); tokensMu
	// serialises ReloadTokens.
	quota    atomic.Pointer[map[string]prometheus.Counter]
	tokensMu sync.Mutex
	// timeShift is the layout's: an ID's time is id >> timeShift + epoch.
	timeShift uint
	// afterLead is Config.AfterLead (0 for none), afterBound MaxAfterAhead
	// plus it: how far past this ticketd's clock an after= ID may be
	// (after.go); afterLeadMs and afterBoundMs the same in ms, for the hot
	// path.
	afterLead, afterBound     time.Duration
	afterLeadMs, afterBoundMs int64
}

// workerIdle: how long an idle fasthttp worker goroutine lives, and so how
// long after Shutdown the pool's cleaner goroutine may linger.
const workerIdle = time.Second

// New returns a Server over ids and tickets. It does not listen: call Serve.
// Zero fields of cfg take the defaults documented on Config. When ids reports
// a layout (worker.Status.Layout), it must equal cfg.Layout, or IDs would be
// decoded under the wrong one.
func New(cfg Config, ids IDs, tickets Tickets) (*Server, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if ids == nil || tickets == nil {
		return nil, fmt.Errorf("%w: ids and tickets must not be nil", ErrInvalidConfig)
	}
	if l := ids.Status().Layout; l.Validate() == nil && l != cfg.Layout {
		return nil, fmt.Errorf("%w: layout %s (epoch %d) differs from the keeper's %s (epoch %d)",
			ErrInvalidConfig, cfg.Layout, cfg.Layout.EpochMs, l, l.EpochMs)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Server{
		cfg: cfg, ids: ids, tickets: tickets, log: cfg.Logger, conns: map[net.Conn]struct{}{},
		events:  logsum.New(cfg.Logger, eventPeriod),
		stopped: make(chan struct{}), perIP: map[netip.Addr]int{},
		refusals: make(chan struct{}, maxRefusing), reclaimCh: make(chan struct{}, 1), reclaimAfter: reclaimBurst,
	}
	s.refuseTotal = refusalAnswer(fasthttp.StatusServiceUnavailable,
		fmt.Sprintf("too many open connections (limit %d): try another instance, or again in a second", cfg.MaxConns))
	s.refusePerIP = refusalAnswer(fasthttp.StatusTooManyRequests,
		fmt.Sprintf("too many open connections from your address (limit %d; an IPv6 address counts with its /%d)",
			min(cfg.MaxConnsPerIP, cfg.MaxConns), cfg.ConnsPerIPv6Prefix))
	s.warn = logsum.New(cfg.Logger, logsum.DefaultPeriod)
	s.warn.Declare(slog.LevelWarn, warnKinds...)
	s.warn.Declare(slog.LevelError, errorKinds...)
	s.events.Declare(slog.LevelInfo, kindUnauthorized, kindForbidden, kindOverQuota, kindTinyidRefused)
	s.timeShift = cfg.Layout.SequenceBits + cfg.Layout.WorkerBits + cfg.Layout.DatacenterBits
	s.afterLead = max(cfg.AfterLead, 0)
	s.afterBound = MaxAfterAhead + s.afterLead
	s.afterLeadMs, s.afterBoundMs = s.afterLead.Milliseconds(), s.afterBound.Milliseconds()
	s.base, s.cancel = context.WithCancel(context.Background())
	s.metrics = newServerMetrics(cfg, backendCollector{s})
	if cfg.Tokens != nil {
		s.quotaCounters(cfg.Tokens.Load())
	}
	if cfg.TLS != nil {
		s.tls = cfg.TLS.Clone()
		s.tls.MinVersion = max(s.tls.MinVersion, MinTLSVersion)
	}
	s.hs = HTTPServer(cfg, s.serveHTTP)
	s.hs.ErrorHandler = s.errorHandler
	s.hs.ConnState = s.connState
	s.hs.Logger = connLogger{s}
	// Every connection error reaches connLogger (counted, summarised), and
	// fasthttp's error texts leave out the request bytes they would quote.
	s.hs.LogAllErrors = true
	s.hs.SecureErrorLogMessage = true
	return s, nil
}

// HTTPServer returns a fasthttp.Server with the settings New gives ticketd's
// API (limits, buffer sizes, timeouts), serving h. make bench's bare server is
// built with it, so "the machine's HTTP limit" is measured with ticketd's
// settings. New adds its error answers, connection tracking and logger. Zero
// fields of cfg take their defaults.
func HTTPServer(cfg Config, h fasthttp.RequestHandler) *fasthttp.Server {
	cfg = cfg.withDefaults()
	return &fasthttp.Server{
		Handler: h,
		Name:    "ticketd",
		// The Server's listener enforces MaxConns and answers beyond it in
		// JSON; fasthttp's own limit, which answers in plain text, stays
		// above it. The margin covers connections closed whose worker has
		// not yet gone back to fasthttp's pool.
		Concurrency:        2 * cfg.MaxConns,
		ReadBufferSize:     cfg.MaxHeaderBytes,
		ReadTimeout:        cfg.ReadTimeout,
		WriteTimeout:       cfg.WriteTimeout,
		IdleTimeout:        cfg.IdleTimeout,
		MaxRequestBodySize: maxRequestBody,
		// Every endpoint is a GET; a multipart body is never looked at.
		DisablePreParseMultipartForm: true,
		// ReduceMemoryUsage stays off. It would release the buffers of idle
		// keep-alive connections (5000 of them: 42 MB of RSS instead of 96),
		// but costs every request on a kept-alive connection one more read
		// call and an allocation (measured: 1 alloc/op through Serve, and
		// about 15 % more CPU per request under wrk). After a burst, the
		// reclaimer gives the memory back instead (reclaim.go).
		// Tell keep-alive clients during Shutdown to go elsewhere.
		CloseOnShutdown: true,
		// fasthttp's worker-pool cleaner sleeps this long between rounds and
		// sees Shutdown only when it wakes: the default 10 s would leave a
		// goroutine behind that long. Idle workers are cheap to restart.
		MaxIdleWorkerDuration: workerIdle,
	}
}

// Handler returns the whole API (routing, panic recovery, metrics) without a
// listener: for in-memory tests and benchmarks.
func (s *Server) Handler() fasthttp.RequestHandler { return s.serveHTTP }

// SetReady says whether this ticketd may receive traffic; /readyz also needs
// a usable lease or fallback. serve sets it once the keeper holds a lease.
func (s *Server) SetReady(ready bool) { s.ready.Store(ready) }

// Drain begins a graceful stop without ending anything: /readyz answers 503
// at once, so load balancers take this instance out of rotation, and every
// answer from now on carries Connection: close, so keep-alive clients and
// balancers open their next connection elsewhere. Requests are served as
// before, on new connections too. Shutdown ends the drain.
func (s *Server) Drain() { s.draining.Store(true) }

// Serve accepts connections on ln and blocks until Shutdown, then returns
// nil; it returns another error only if ln fails. After Shutdown it returns
// ErrServerClosed at once. Either way ln is closed when Serve returns.
//
// Connections beyond Config.MaxConns or Config.MaxConnsPerIP are answered
// and closed by Serve itself, before fasthttp sees them.
func (s *Server) Serve(ln net.Listener) error {
	l := &onceCloseListener{Listener: ln}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		l.Close()
		return ErrServerClosed
	}
	s.listeners = append(s.listeners, l)
	s.serving.Add(1)
	if !s.reclaiming {
		s.reclaiming = true
		s.serving.Add(1)
		go func() {
			defer s.serving.Done()
			s.reclaimLoop()
		}()
	}
	s.mu.Unlock()
	defer s.serving.Done()
	defer l.Close()
	var admitted net.Listener = &limitListener{Listener: l, s: s}
	if s.tls != nil {
		// What fasthttp's ServeTLS does, around the connection limits: a
		// connection is admitted before its handshake costs anything.
		admitted = tls.NewListener(admitted, s.tls)
	}
	err := s.hs.Serve(admitted)
	if s.closing.Load() {
		return nil
	}
	return err
}

// Shutdown stops the server: /readyz turns 503 (if Drain has not done so),
// the listeners close, and requests in flight finish, their answers telling
// keep-alive clients to close. It returns when every connection is gone and
// every Serve and ServeAdmin has returned.
//
// If ctx ends first, Shutdown cancels the calls in flight to the ticket
// servers, closes every connection, and returns ctx's error; the handlers
// still running then end within moments, leaving no goroutine behind.
func (s *Server) Shutdown(ctx context.Context) error {
	s.draining.Store(true)
	s.closing.Store(true)
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.stopped)
	}
	lns := s.listeners
	admin := s.admin
	s.mu.Unlock()
	defer s.events.Close()
	// Closing the listeners ourselves covers a Serve that has not reached
	// fasthttp's own list yet; fasthttp's second Close of each is a no-op.
	for _, l := range lns {
		l.Close()
	}
	// The warnings pending when the last request has ended are written out.
	defer s.warn.Close()
	if err := s.hs.ShutdownWithContext(ctx); err != nil {
		s.force(admin)
		return fmt.Errorf("frontend: shutdown: %w", err)
	}
	if admin != nil {
		admin.Close()
	}
	done := make(chan struct{})
	go func() {
		s.serving.Wait()
		s.refusing.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		s.force(admin)
		return fmt.Errorf("frontend: shutdown: %w", ctx.Err())
	}
	s.cancel()
	return nil
}

// force ends what Shutdown could not drain in time.
func (s *Server) force(admin *http.Server) {
	s.cancel()
	if admin != nil {
		admin.Close()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.Close()
	}
}

// connState tracks open connections, for force.
func (s *Server) connState(c net.Conn, st fasthttp.ConnState) {
	switch st {
	case fasthttp.StateNew:
		s.mu.Lock()
		s.conns[c] = struct{}{}
		s.mu.Unlock()
	case fasthttp.StateClosed, fasthttp.StateHijacked:
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
	}
}

// onceCloseListener makes Close idempotent: Shutdown and fasthttp both close
// it, and fasthttp would report the second close as a shutdown error.
type onceCloseListener struct {
	net.Listener
	once sync.Once
	err  error
}

func (l *onceCloseListener) Close() error {
	l.once.Do(func() { l.err = l.Listener.Close() })
	return l.err
}
