package client

import (
	"crypto/x509"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"ticketd/publicid"
	"ticketd/snowflake"
)

// Defaults of Config's zero values, and the bounds New enforces. The bounds
// catch unit mistakes (a MaxAge of 1 meaning 1 ns) and settings that could
// not work (a call deadline longer than the age limit would make every
// answer that took that long useless).
const (
	DefaultCallTimeout = 500 * time.Millisecond
	MinCallTimeout     = time.Millisecond

	DefaultMaxAge = time.Second // Twitter's k-sorting window
	MinMaxAge     = 10 * time.Millisecond
	MaxMaxAge     = time.Hour

	DefaultMinBatch = 16
	// DefaultMaxBatch is ticketd's default -max-batch: a larger batch is a 400.
	DefaultMaxBatch = 10_000
	MaxMaxBatch     = 1_000_000 // ticketd's largest -max-batch
	// DefaultMaxTicketBatch is ticketd's default -max-ticket-batch.
	DefaultMaxTicketBatch = 1_000

	MaxBatchPeriodShare = 2 // BatchPeriod is at most MaxAge / 2
	MinBatchPeriod      = time.Millisecond

	DefaultProbeEvery = 250 * time.Millisecond
	MinProbeEvery     = 10 * time.Millisecond
	MaxProbeEvery     = time.Minute
)

// Config configures a Client. The zero value of every field but Endpoints
// is a documented default.
type Config struct {
	// Endpoints are ticketd's base URLs ("http://10.0.0.5:8080"), in order
	// of preference. Required. The client takes values from one endpoint at
	// a time and stays with it until it fails (see the package comment).
	Endpoints []string

	// HTTPClient sends the requests. Zero: a client of the package's own
	// (keep-alive connections, closed by Close). Its Timeout is not used:
	// CallTimeout bounds every call.
	HTTPClient *http.Client

	// Token is the bearer token ticketd gave this application: sent as
	// Authorization: Bearer TOKEN with every request for values (the
	// readiness probes need none). A ticketd with a tokens file answers a
	// request without it, or with a token lacking the scope (ids, or
	// tickets:NAME), 401 or 403: an error wrapping ErrRejected. Over a
	// token's quota (429) refills pause for the Retry-After and callers
	// wait (see the package doc); a batch above the quota per second can
	// never pass, so keep MaxBatch, and MaxTicketBatch, at or below it
	// (a refused batch halves the next one anyway). Never printed:
	// Config's String shows it as [redacted]. Zero: no token (a ticketd on
	// loopback without tokens).
	Token string

	// RootCAs are the certificate authorities an https:// endpoint's
	// certificate must chain to, for the package's own HTTP client (TLS 1.2
	// or later). Zero: the system's. With HTTPClient, set them in its
	// transport instead (New refuses both).
	RootCAs *x509.CertPool

	// CallTimeout is the deadline of one request to one endpoint: a refill
	// or a probe. An endpoint that does not answer within it is skipped
	// (when every endpoint is skipped, or all those tried have failed, a
	// refill tries them all once more with a deadline of MaxAge).
	// Zero: 500 ms, or MaxAge/2 if that is less. From 1 ms to MaxAge.
	CallTimeout time.Duration

	// MaxAge bounds how old a buffered ID may be when Next hands it out,
	// counted from the moment the request that fetched it was sent; older
	// IDs are dropped. It keeps IDs from many clients roughly time-ordered.
	// Sequences (Ticket) carry no time and are not dropped. Zero: 1 s. From
	// 10 ms to 1 h.
	MaxAge time.Duration

	// MinBatch and MaxBatch bound the number of IDs one refill asks for.
	// MaxBatch must not exceed the -max-batch of any endpoint. Zero: 16
	// and 10000. 1 <= MinBatch <= MaxBatch <= 1000000.
	MinBatch, MaxBatch int

	// MaxTicketBatch bounds the values of a sequence one refill asks for
	// (those start at 1). It must not exceed the -max-ticket-batch of any
	// endpoint. Zero: 1000. From 1 to 1000000.
	MaxTicketBatch int

	// BatchPeriod is how long one batch should last. After each refill the
	// next batch doubles if the last one lasted less, and halves if it
	// lasted more than twice as long (Meituan Leaf's step), within the
	// bounds above. Zero: MaxAge / 10. From 1 ms to MaxAge / 2.
	BatchPeriod time.Duration

	// ProbeEvery is how often an endpoint that failed is asked GET /readyz;
	// it rejoins when that answers 200. Zero: 250 ms. From 10 ms to 1 min.
	ProbeEvery time.Duration

	// StrictlyIncreasing makes Next and NextN hand out strictly increasing
	// IDs across the whole client, endpoint switches included: every
	// refill asks with after= the largest ID fetched so far, so that any
	// ticketd answers only larger IDs, and an ID at or below the last one
	// handed out is never handed out (it is dropped: a gap). Its cost: one
	// comparison per ID; after a switch, the new ticketd's IDs carry a time
	// up to the clock difference between the two hosts ahead of its own
	// clock (ticketd moves its generator forward rather than wait), and a
	// ticketd whose clock is more than a second behind refuses the refill
	// (400, ErrRejected): keep the hosts' clocks within a second. Zero:
	// unique IDs, increasing only while the client stays on one ticketd.
	StrictlyIncreasing bool

	// IDKeys, when not nil, are the deployment's keys (publicid.ReadKeyFile
	// of the file ticketd serve has as -id-key-file): Public and FromPublic
	// then work locally, without a round trip. Zero: they return
	// ErrNoKeys.
	IDKeys *publicid.Ring

	// Layout is the deployment's layout (GET /v1/status shows it), used by
	// FromPublic to tell an ID of the deployment (its time between the
	// epoch and a second from now) from what another key would give. Zero:
	// snowflake.DefaultLayout (41 time bits from the Twitter epoch, as
	// ticketd's flat and default layouts both have).
	Layout snowflake.Layout
}

// withDefaults returns c with every zero field set to its default.
func (c Config) withDefaults() Config {
	if c.MaxAge == 0 {
		c.MaxAge = DefaultMaxAge
	}
	if c.CallTimeout == 0 {
		c.CallTimeout = min(DefaultCallTimeout, c.MaxAge/2)
	}
	if c.MaxBatch == 0 {
		c.MaxBatch = max(DefaultMaxBatch, c.MinBatch)
	}
	if c.MinBatch == 0 {
		c.MinBatch = min(DefaultMinBatch, c.MaxBatch)
	}
	if c.MaxTicketBatch == 0 {
		c.MaxTicketBatch = DefaultMaxTicketBatch
	}
	if c.BatchPeriod == 0 {
		c.BatchPeriod = c.MaxAge / 10
	}
	if c.ProbeEvery == 0 {
		c.ProbeEvery = DefaultProbeEvery
	}
	if c.Layout == (snowflake.Layout{}) {
		c.Layout = snowflake.DefaultLayout()
	}
	return c
}

// validate checks a Config with its defaults filled in, and returns the
// endpoints' base URLs without a trailing slash.
func (c Config) validate() ([]string, error) {
	if len(c.Endpoints) == 0 {
		return nil, ErrNoEndpoints
	}
	bases := make([]string, len(c.Endpoints))
	seen := map[string]bool{}
	for i, e := range c.Endpoints {
		u, err := url.Parse(e)
		switch {
		case err != nil:
			return nil, fmt.Errorf("%w %q: %v", ErrBadEndpoint, e, err)
		case u.Scheme != "http" && u.Scheme != "https":
			return nil, fmt.Errorf("%w %q: want an http:// or https:// URL", ErrBadEndpoint, e)
		case u.Host == "":
			return nil, fmt.Errorf("%w %q: no host", ErrBadEndpoint, e)
		case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
			return nil, fmt.Errorf("%w %q: want a base URL without query, fragment or user", ErrBadEndpoint, e)
		}
		bases[i] = strings.TrimRight(u.String(), "/")
		if seen[bases[i]] {
			return nil, fmt.Errorf("%w %q: given twice", ErrBadEndpoint, e)
		}
		seen[bases[i]] = true
	}
	bad := func(format string, args ...any) ([]string, error) {
		return nil, fmt.Errorf("%w: "+format, append([]any{ErrBadConfig}, args...)...)
	}
	switch {
	case c.MaxAge < MinMaxAge || c.MaxAge > MaxMaxAge:
		return bad("MaxAge %v: want %v to %v", c.MaxAge, MinMaxAge, MaxMaxAge)
	case c.CallTimeout < MinCallTimeout || c.CallTimeout > c.MaxAge:
		return bad("CallTimeout %v: want %v to MaxAge (%v)", c.CallTimeout, MinCallTimeout, c.MaxAge)
	case c.MinBatch < 1 || c.MinBatch > c.MaxBatch || c.MaxBatch > MaxMaxBatch:
		return bad("MinBatch %d, MaxBatch %d: want 1 <= MinBatch <= MaxBatch <= %d", c.MinBatch, c.MaxBatch, MaxMaxBatch)
	case c.MaxTicketBatch < 1 || c.MaxTicketBatch > MaxMaxBatch:
		return bad("MaxTicketBatch %d: want 1 to %d", c.MaxTicketBatch, MaxMaxBatch)
	case c.BatchPeriod < MinBatchPeriod || c.BatchPeriod > c.MaxAge/MaxBatchPeriodShare:
		return bad("BatchPeriod %v: want %v to MaxAge/2 (%v)", c.BatchPeriod, MinBatchPeriod, c.MaxAge/MaxBatchPeriodShare)
	case c.ProbeEvery < MinProbeEvery || c.ProbeEvery > MaxProbeEvery:
		return bad("ProbeEvery %v: want %v to %v", c.ProbeEvery, MinProbeEvery, MaxProbeEvery)
	case c.RootCAs != nil && c.HTTPClient != nil:
		return bad("RootCAs with HTTPClient: set the CAs in HTTPClient's transport (TLSClientConfig.RootCAs)")
	case c.Layout.Validate() != nil:
		return bad("Layout: %v", c.Layout.Validate())
	case !tokenSyntax(c.Token):
		// Never quoted: it is a secret.
		return bad("Token: want letters, digits and - . _ ~ + / (then optional =), as ticketd's tokens are")
	}
	return bases, nil
}

// tokenSyntax reports whether tok is empty or RFC 6750's token syntax,
// which ticketd accepts: letters, digits, - . _ ~ + /, then optional '='.
func tokenSyntax(tok string) bool {
	i := 0
	for ; i < len(tok); i++ {
		c := tok[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~+/", c) >= 0) {
			break
		}
	}
	if i == 0 && len(tok) > 0 {
		return false
	}
	for ; i < len(tok); i++ {
		if tok[i] != '=' {
			return false
		}
	}
	return true
}

// String prints the Config with its Token redacted, so that logging a
// Config never logs the token (%v, %+v, %s).
func (c Config) String() string {
	tok := ""
	if c.Token != "" {
		tok = "[redacted]"
	}
	return fmt.Sprintf("client.Config{Endpoints:%q Token:%s RootCAs:%v CallTimeout:%v MaxAge:%v MinBatch:%d MaxBatch:%d MaxTicketBatch:%d BatchPeriod:%v ProbeEvery:%v StrictlyIncreasing:%v IDKeys:%v}",
		c.Endpoints, tok, c.RootCAs != nil, c.CallTimeout, c.MaxAge, c.MinBatch, c.MaxBatch, c.MaxTicketBatch, c.BatchPeriod, c.ProbeEvery, c.StrictlyIncreasing, c.IDKeys)
}

// GoString is String, for %#v.
func (c Config) GoString() string { return c.String() }

// Format prints String whatever the verb: %d or %x of the struct would
// print its fields, the token among them.
func (c Config) Format(f fmt.State, verb rune) { fmt.Fprint(f, c.String()) }
