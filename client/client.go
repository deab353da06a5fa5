package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Client hands out snowflake IDs and sequence values from local buffers that
// it refills from ticketd in the background. It is safe for concurrent use.
// Create it with New and release it with Close.
type Client struct {
	cfg     Config
	tr      transport
	ownHTTP *http.Client // closed by Close; nil when the caller gave one
	clk     clock
	fake    bool      // clk is not the system clock
	start   time.Time // origin of the system clock's readings

	ctx      context.Context // cancelled by Close: aborts calls in flight
	cancel   context.CancelFunc
	done     chan struct{} // closed by Close
	closed   atomic.Bool
	wg       sync.WaitGroup // every goroutine the client started
	probeNow chan struct{}  // capacity 1: an endpoint just failed

	emu sync.Mutex // guards eps' fields and cur
	eps []*endpoint
	cur int // the endpoint refills try first

	ids  *stream
	smu  sync.RWMutex
	seqs map[string]*stream
}

// New validates cfg and returns a Client. It does no I/O itself, but starts
// fetching a first batch of IDs in the background at once.
func New(cfg Config) (*Client, error) {
	return newClient(cfg, nil, nil)
}

// newClient is New with the transport and the clock injected (tests).
func newClient(cfg Config, tr transport, clk clock) (*Client, error) {
	cfg = cfg.withDefaults()
	bases, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg, tr: tr, clk: clk, start: time.Now(), done: make(chan struct{}),
		probeNow: make(chan struct{}, 1), seqs: map[string]*stream{}}
	if clk == nil {
		c.clk = sysClock{c.start}
	} else {
		c.fake = true
	}
	if tr == nil {
		hc := cfg.HTTPClient
		if hc == nil {
			hc = &http.Client{Transport: &http.Transport{
				Proxy:               http.ProxyFromEnvironment,
				MaxIdleConnsPerHost: 4,
				IdleConnTimeout:     90 * time.Second,
				ForceAttemptHTTP2:   true,
				TLSClientConfig:     &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: cfg.RootCAs},
			}}
			c.ownHTTP = hc
		}
		c.tr = newHTTPTransport(hc, cfg.Token)
	}
	for _, b := range bases {
		c.eps = append(c.eps, &endpoint{base: b, up: true})
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.ids = newStream(c, "", "/v1/ids", true, cfg.MinBatch, cfg.MaxBatch)
	c.ids.strict = cfg.StrictlyIncreasing
	c.wg.Add(2)
	go c.ids.refillLoop()
	go c.probeLoop()
	c.ids.signal()
	return c, nil
}

// now is the client's monotonic clock.
func (c *Client) now() time.Duration {
	if c.fake {
		return c.clk.now()
	}
	return time.Since(c.start)
}

// Next returns a snowflake ID from the buffer. It waits (within ctx) only
// when the buffer is empty; an ID already buffered is returned whatever ctx
// says. It allocates nothing and holds no lock across I/O.
//
// When nothing is buffered and no endpoint can issue, the error wraps
// ErrUnavailable and each endpoint's last error.
func (c *Client) Next(ctx context.Context) (int64, error) {
	v, err := c.ids.one(ctx)
	return int64(v), err
}

// NextN fills dst with snowflake IDs and returns how many it filled: all of
// dst, or fewer and an error (the IDs filled are valid and unique). It waits
// for refills as needed, within ctx.
func (c *Client) NextN(ctx context.Context, dst []int64) (int, error) {
	return take(c.ids, ctx, dst)
}

// Ticket returns a value of the named sequence (GET /v1/tickets/{name}),
// from a buffer of its own. Values are unique, not ordered; values fetched
// and never handed out are gaps, never repeats.
func (c *Client) Ticket(ctx context.Context, name string) (uint64, error) {
	s, err := c.sequence(name)
	if err != nil {
		return 0, err
	}
	return s.one(ctx)
}

// Tickets fills dst with values of the named sequence and returns how many
// it filled: all of dst, or fewer and an error.
func (c *Client) Tickets(ctx context.Context, name string, dst []uint64) (int, error) {
	s, err := c.sequence(name)
	if err != nil {
		return 0, err
	}
	return take(s, ctx, dst)
}

// sequence returns the stream of a sequence, starting it on first use.
func (c *Client) sequence(name string) (*stream, error) {
	c.smu.RLock()
	s := c.seqs[name]
	c.smu.RUnlock()
	if s != nil {
		return s, nil
	}
	if !validName(name) {
		return nil, &nameError{name}
	}
	c.smu.Lock()
	defer c.smu.Unlock()
	if s := c.seqs[name]; s != nil {
		return s, nil
	}
	if c.closed.Load() {
		return nil, ErrClosed
	}
	s = newStream(c, name, "/v1/tickets/"+name, false, 1, c.cfg.MaxTicketBatch)
	c.seqs[name] = s
	c.wg.Add(1)
	go s.refillLoop()
	return s, nil
}

// validName is ticketd's rule for sequence names.
func validName(name string) bool {
	if len(name) == 0 || len(name) > 48 || name[0] < 'a' || name[0] > 'z' {
		return false
	}
	for i := 1; i < len(name); i++ {
		if c := name[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return true
}

type nameError struct{ name string }

func (e *nameError) Error() string {
	name := e.name
	if len(name) > 64 {
		name = name[:64]
	}
	return "client: bad sequence name " + strconv.Quote(name) +
		": want a lowercase letter, then up to 47 lowercase letters, digits or underscores"
}
func (e *nameError) Unwrap() error { return ErrBadName }

// String prints the client's configuration, its token redacted
// (Config.String): printing or logging a client never shows the token.
func (c *Client) String() string { return "client.Client(" + c.cfg.String() + ")" }

// GoString is String, for %#v.
func (c *Client) GoString() string { return c.String() }

// Format prints String whatever the verb: %d or %x of the struct would
// print its fields, the token among them.
func (c *Client) Format(f fmt.State, verb rune) { fmt.Fprint(f, c.String()) }

// wakeAll asks every stream to look at its buffer (an endpoint rejoined).
func (c *Client) wakeAll() {
	c.ids.signal()
	c.smu.RLock()
	defer c.smu.RUnlock()
	for _, s := range c.seqs {
		s.signal()
	}
}

// Close stops the client: calls waiting for a refill return ErrClosed, calls
// in flight to ticketd are cancelled, and every goroutine the client started
// has returned when Close does. Buffered values are dropped (gaps, never
// repeats). Later calls return ErrClosed. Close is idempotent.
func (c *Client) Close() error {
	// Under smu, so that no sequence starts a goroutine once Close waits.
	c.smu.Lock()
	if c.closed.Load() {
		c.smu.Unlock()
		return nil
	}
	c.closed.Store(true)
	c.smu.Unlock()
	c.cancel()
	close(c.done)
	c.wg.Wait()
	c.discard(c.ids)
	c.smu.RLock()
	for _, s := range c.seqs {
		c.discard(s)
	}
	c.smu.RUnlock()
	if c.ownHTTP != nil {
		c.ownHTTP.CloseIdleConnections()
	}
	return nil
}

// discard empties a stream's buffer: after Close nothing is handed out.
func (c *Client) discard(s *stream) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.segs, s.buffered = nil, 0
}

func isRejected(err error) bool { return errors.Is(err, ErrRejected) }
