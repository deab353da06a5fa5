package frontend

import (
	"io"
	"strconv"
	"time"

	"ticketd/internal/logsum"
	"ticketd/ticket"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/common/expfmt"
)

// endpoint labels a request in ticketd_requests_total. The router sets it
// before anything can fail, so a panic is counted against the right one.
type endpoint uint8

const (
	epID endpoint = iota
	epIDs
	epDecode
	epTickets
	epStatus
	epHealthz
	epReadyz
	epReadyzTickets
	epMetrics
	// Leaf's and tinyid's routes (peers.go), with Config.Peers only.
	epLeafSegment
	epLeafSnowflake
	epTinyNextID
	epTinyNextIDSimple
	epTinySegment
	epTinySegmentSimple
	epUnknown // no such path
	epInvalid // fasthttp could not read the request (ErrorHandler)
	numEndpoints
)

var endpointNames = [numEndpoints]string{
	epID:            "/v1/id",
	epIDs:           "/v1/ids",
	epDecode:        "/v1/ids/{id}",
	epTickets:       "/v1/tickets/{name}",
	epStatus:        "/v1/status",
	epHealthz:       "/healthz",
	epReadyz:        "/readyz",
	epReadyzTickets: "/readyz/tickets",
	epMetrics:       "/metrics",
	epUnknown:       "unknown",
	epInvalid:       "invalid",

	// Leaf's and tinyid's (peers.go).
	epLeafSegment:       "/api/segment/get/{key}",
	epLeafSnowflake:     "/api/snowflake/get/{key}",
	epTinyNextID:        "/tinyid/id/nextId",
	epTinyNextIDSimple:  "/tinyid/id/nextIdSimple",
	epTinySegment:       "/tinyid/id/nextSegmentId",
	epTinySegmentSimple: "/tinyid/id/nextSegmentIdSimple",
}

// trackedCodes are the status codes the API answers with. Counters for every
// endpoint × code pair that can occur are created up front, so counting a
// request is an array index and an atomic add: no map lookup, no label string.
var trackedCodes = [...]int{200, 400, 401, 403, 404, 405, 408, 410, 413, 429, 431, 500, 503}

const numCodes = len(trackedCodes)

// endpointCodes lists, per endpoint, the codes it can answer with.
var endpointCodes = [numEndpoints][]int{
	epID:            {200, 400, 401, 403, 405, 429, 500, 503},
	epIDs:           {200, 400, 401, 403, 405, 429, 500, 503},
	epDecode:        {200, 400, 401, 403, 405, 500},
	epTickets:       {200, 400, 401, 403, 404, 405, 410, 429, 500, 503},
	epStatus:        {200, 401, 403, 405, 500},
	epHealthz:       {200, 405, 500},
	epReadyz:        {200, 405, 500, 503},
	epReadyzTickets: {200, 405, 500, 503},
	epMetrics:       {200, 401, 403, 405, 500},
	epUnknown:       {404, 500},
	epInvalid:       {400, 408, 413, 431},

	// Leaf's and tinyid's (peers.go): Leaf's callers get a 5xx for every
	// failure, tinyid's the way tinyid refuses (200) or a 5xx.
	epLeafSegment:       {200, 401, 403, 405, 429, 500, 503},
	epLeafSnowflake:     {200, 401, 403, 405, 429, 500, 503},
	epTinyNextID:        {200, 400, 405, 429, 500, 503},
	epTinyNextIDSimple:  {200, 400, 405, 429, 500, 503},
	epTinySegment:       {200, 400, 405, 429, 500, 503},
	epTinySegmentSimple: {200, 400, 405, 429, 500, 503},
}

func codeIndex(code int) int {
	switch code {
	case 200:
		return 0
	case 400:
		return 1
	case 401:
		return 2
	case 403:
		return 3
	case 404:
		return 4
	case 405:
		return 5
	case 408:
		return 6
	case 410:
		return 7
	case 413:
		return 8
	case 429:
		return 9
	case 431:
		return 10
	case 500:
		return 11
	case 503:
		return 12
	}
	return -1
}

// durationBuckets are the upper bounds, in seconds, of every duration
// histogram (requests, and statements on the ticket servers). They span what
// ticketd times: an ID answered from memory (microseconds, all in the first
// bucket), a ticket-server round trip on a LAN (0.1–1 ms) or across
// datacenters (tens of ms), and the longest a statement may take (8 × the
// 500 ms call timeout). Fixed, so that every histogram of every ticketd can
// be aggregated with every other.
var durationBuckets = func() []float64 {
	bounds := [...]time.Duration{
		100 * time.Microsecond, 250 * time.Microsecond, 500 * time.Microsecond,
		time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond,
		10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond,
		100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
		time.Second, 2500 * time.Millisecond, 5 * time.Second,
	}
	b := make([]float64, len(bounds))
	for i, d := range bounds {
		b[i] = d.Seconds()
	}
	return b
}()

// seconds is d for a histogram: a negative duration (a clock step) counts
// as 0.
func seconds(d time.Duration) float64 { return max(d, 0).Seconds() }

// serverMetrics are one Server's metrics, in a registry of its own: tests
// create many Servers, and a registry refuses a second family of one name.
//
// The request path's series (counters, request durations) are created up
// front, children of their vectors held in arrays: counting a request is an
// array index and an atomic add, observing its duration a scan of 15 bounds
// and a few atomic adds; no lock, no allocation, no label string built.
// Everything else is read at scrape time by the collectors registered
// beside them (metrics_backend.go, CallDurations, the Go runtime's and the
// process's), and every family's HELP and TYPE come from its definition.
type serverMetrics struct {
	reg             *prometheus.Registry
	requestsVec     *prometheus.CounterVec
	requests        [numEndpoints][numCodes]prometheus.Counter
	idsSnowflake    counter
	idsTicket       counter
	panics          prometheus.Counter
	fallbackRefused prometheus.Counter
	// snowflakeRefused counts snowflake IDs below FallbackCeiling, which a
	// correctly wired keeper never issues.
	snowflakeRefused prometheus.Counter
	// badFraming counts requests refused for ambiguous framing (framing.go),
	// whether fasthttp or serveHTTP found it.
	badFraming prometheus.Counter
	// reclaims counts memory given back after a burst (reclaim.go).
	reclaims prometheus.Counter
	// quota is ticketd_quota_rejections_total, a child per token name
	// (access.go, quotaCounters).
	quota *prometheus.CounterVec
	// durations: how long the handler took, per endpoint (not epInvalid,
	// which never reaches it; not Leaf's and tinyid's without Config.Peers).
	durations [epInvalid]prometheus.Observer
	// tinyidRefusals: ticketd_tinyid_refusals_total{reason} (peers.go).
	tinyidRefusals *prometheus.CounterVec
}

// counter is a Counter of whole things: Add takes the int a batch counts in.
type counter struct{ prometheus.Counter }

func (c counter) Add(n int) { c.Counter.Add(float64(n)) }

// newServerMetrics makes the request path's series and registers them with
// backend (the scrape-time figures), cfg.CallDurations when set, and the Go
// runtime's and the process's collectors.
func newServerMetrics(cfg Config, backend prometheus.Collector) *serverMetrics {
	m := &serverMetrics{reg: prometheus.NewRegistry()}
	m.requestsVec = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ticketd_requests_total",
		Help: "Answered requests, by endpoint (the route; unknown: no such path; invalid: a request that could not be parsed) and status code.",
	}, []string{"endpoint", "code"})
	for ep := range numEndpoints {
		if peerEndpoint(ep) && cfg.Peers == nil {
			continue // no such route: the series would say nothing
		}
		for _, code := range endpointCodes[ep] {
			m.requests[ep][codeIndex(code)] = m.requestsVec.WithLabelValues(endpointNames[ep], strconv.Itoa(code))
		}
	}
	ids := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ticketd_ids_issued_total",
		Help: "IDs handed out, by source: snowflake, or ticket (the fallback).",
	}, []string{"source"})
	m.idsSnowflake = counter{ids.WithLabelValues("snowflake")}
	m.idsTicket = counter{ids.WithLabelValues("ticket")}
	newCounter := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
		m.reg.MustRegister(c)
		return c
	}
	m.panics = newCounter("ticketd_panics_total",
		"Handler panics recovered and answered 500; the log has the stack.")
	m.fallbackRefused = newCounter("ticketd_fallback_ids_refused_total",
		"Fallback tickets refused because they were not below the fallback ceiling.")
	m.snowflakeRefused = newCounter("ticketd_snowflake_ids_refused_total",
		"Snowflake IDs refused because they were below the fallback ceiling (never, unless ticketd is wired wrong).")
	m.badFraming = newCounter("ticketd_bad_framing_total",
		"Requests refused (400, connection closed) because their body length could be read two ways.")
	m.reclaims = newCounter("ticketd_memory_reclaims_total",
		"Times memory was given back to the system after a burst of connections ended.")
	m.quota = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ticketd_quota_rejections_total",
		Help: "Requests answered 429 because the bearer token, by its name in the tokens file, was over its quota.",
	}, []string{"token"})
	durations := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "ticketd_request_duration_seconds",
		Help:    "How long the handler took to answer, by endpoint: from the moment the request had been read to the moment its answer was ready to send.",
		Buckets: durationBuckets,
	}, []string{"endpoint"})
	for ep := range epInvalid {
		if !peerEndpoint(ep) || cfg.Peers != nil {
			m.durations[ep] = durations.WithLabelValues(endpointNames[ep])
		}
	}
	version, revision, goversion := buildInfo(cfg.Version)
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "ticketd_build_info",
		Help:        "Always 1; the labels say which ticketd this is: its version, release (the number upgrades count in), VCS revision and Go version.",
		ConstLabels: prometheus.Labels{"version": version, "release": strconv.Itoa(ticket.Release), "revision": revision, "goversion": goversion},
	})
	build.Set(1)
	m.tinyidRefusals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ticketd_tinyid_refusals_total",
		Help: "Calls of tinyid's routes (-peer-routes) refused the way tinyid refuses them (200, and an empty answer or code 5 or 6), by reason: token (none, unknown, or without the biz type's tickets: scope) or biz_type (no sequence serves it).",
	}, []string{"reason"})
	for _, r := range tinyidRefusalReasons {
		m.tinyidRefusals.WithLabelValues(r)
	}
	m.reg.MustRegister(m.requestsVec, ids, m.quota, durations, build, backend, m.tinyidRefusals,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if cfg.CallDurations != nil {
		m.reg.MustRegister(cfg.CallDurations)
	}
	return m
}

// count records one answered request.
func (m *serverMetrics) count(ep endpoint, code int) {
	if i := codeIndex(code); i >= 0 && ep < numEndpoints {
		if c := m.requests[ep][i]; c != nil {
			c.Inc()
			return
		}
	}
	// A code this endpoint is not expected to answer with: rare by
	// construction, so making its series here costs nothing that matters.
	if ep >= numEndpoints {
		ep = epUnknown
	}
	m.requestsVec.WithLabelValues(endpointNames[ep], strconv.Itoa(code)).Inc()
}

// observe records how long a request to ep took.
func (m *serverMetrics) observe(ep endpoint, d time.Duration) {
	if ep < epInvalid && m.durations[ep] != nil {
		m.durations[ep].Observe(seconds(d))
	}
}

// errMetricsGather is the warning of a scrape that could not gather every
// family: a bug of ticketd's, since every series is made by its own code.
var errMetricsGather = logsum.Kind{ID: "metrics_gather", Text: "metrics: some series could not be gathered"}

// writeMetrics writes /metrics in the Prometheus text format (version
// 0.0.4, whatever the scraper asks for: ctPrometheus): every family of the
// registry, each with its HELP and TYPE, families and series sorted. A
// series that could not be gathered is left out and logged; the others are
// written.
func (s *Server) writeMetrics(out io.Writer) {
	families, err := s.metrics.reg.Gather()
	if err != nil {
		s.warn.Note(errMetricsGather, "err", err)
	}
	enc := expfmt.NewEncoder(out, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, f := range families {
		if err := enc.Encode(f); err != nil {
			// Only a write fails here (the registry has checked every
			// name), and only the admin listener's, when the client went
			// away: the fasthttp answer is a buffer.
			return
		}
	}
}
