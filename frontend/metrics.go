package frontend

import (
	"bytes"
	"fmt"
	"io"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"ticketd/internal/promtext"
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
	epMetrics
	epUnknown // no such path
	epInvalid // fasthttp could not read the request (ErrorHandler)
	numEndpoints
)

var endpointNames = [numEndpoints]string{
	epID:      "/v1/id",
	epIDs:     "/v1/ids",
	epDecode:  "/v1/ids/{id}",
	epTickets: "/v1/tickets/{name}",
	epStatus:  "/v1/status",
	epHealthz: "/healthz",
	epReadyz:  "/readyz",
	epMetrics: "/metrics",
	epUnknown: "unknown",
	epInvalid: "invalid",
}

// trackedCodes are the status codes the API answers with. Counters for every
// endpoint × code pair that can occur are created up front, so counting a
// request is an array index and an atomic add: no map lookup, no label string.
var trackedCodes = [...]int{200, 400, 401, 403, 404, 405, 408, 410, 413, 429, 431, 500, 503}

const numCodes = len(trackedCodes)

// endpointCodes lists, per endpoint, the codes it can answer with.
var endpointCodes = [numEndpoints][]int{
	epID:      {200, 400, 401, 403, 405, 429, 500, 503},
	epIDs:     {200, 400, 401, 403, 405, 429, 500, 503},
	epDecode:  {200, 400, 401, 403, 405, 500},
	epTickets: {200, 400, 401, 403, 404, 405, 410, 429, 500, 503},
	epStatus:  {200, 401, 403, 405, 500},
	epHealthz: {200, 405, 500},
	epReadyz:  {200, 405, 500, 503},
	epMetrics: {200, 401, 403, 405, 500},
	epUnknown: {404, 500},
	epInvalid: {400, 408, 413, 431},
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

// serverMetrics are one Server's series. Each Server has its own Set: tests
// create many servers, and the global set would refuse a second registration.
//
// The Set holds the counters the request path bumps, created up front; it
// writes no HELP and (with VictoriaMetrics' metadata off, as here) no TYPE,
// so writeSet announces each of its families from setFamilies. Everything
// else is written at scrape time through promtext (metrics_backend.go).
type serverMetrics struct {
	set             *metrics.Set
	requests        [numEndpoints][numCodes]*metrics.Counter
	idsSnowflake    *metrics.Counter
	idsTicket       *metrics.Counter
	panics          *metrics.Counter
	fallbackRefused *metrics.Counter
	// snowflakeRefused counts snowflake IDs below FallbackCeiling, which a
	// correctly wired keeper never issues.
	snowflakeRefused *metrics.Counter
	// badFraming counts requests refused for ambiguous framing (framing.go),
	// whether fasthttp or serveHTTP found it.
	badFraming *metrics.Counter
	// reclaims counts memory given back after a burst (reclaim.go).
	reclaims *metrics.Counter
	// durations: how long the handler took, per endpoint (not epInvalid,
	// which never reaches it).
	durations [numEndpoints]promtext.DurationHistogram
	// buildInfo is the ticketd_build_info series, made once.
	buildInfo string
}

// setFamilies is the HELP of every family in the Set: all counters. A family
// added to the Set needs its line here (TestMetricsFamilies fails without).
var setFamilies = map[string]string{
	"ticketd_requests_total":              "Answered requests, by endpoint (the route; unknown: no such path; invalid: a request that could not be parsed) and status code.",
	"ticketd_ids_issued_total":            "IDs handed out, by source: snowflake, or ticket (the fallback).",
	"ticketd_panics_total":                "Handler panics recovered and answered 500; the log has the stack.",
	"ticketd_fallback_ids_refused_total":  "Fallback tickets refused because they were not below the fallback ceiling.",
	"ticketd_snowflake_ids_refused_total": "Snowflake IDs refused because they were below the fallback ceiling (never, unless ticketd is wired wrong).",
	"ticketd_bad_framing_total":           "Requests refused (400, connection closed) because their body length could be read two ways.",
	"ticketd_memory_reclaims_total":       "Times memory was given back to the system after a burst of connections ended.",
	"ticketd_quota_rejections_total":      "Requests answered 429 because the bearer token, by its name in the tokens file, was over its quota.",
}

func requestsName(ep endpoint, code int) string {
	return fmt.Sprintf(`ticketd_requests_total{endpoint=%q,code="%d"}`, endpointNames[ep], code)
}

func newServerMetrics(cfg Config) *serverMetrics {
	m := &serverMetrics{set: metrics.NewSet()}
	for ep := range numEndpoints {
		for _, code := range endpointCodes[ep] {
			m.requests[ep][codeIndex(code)] = m.set.NewCounter(requestsName(ep, code))
		}
	}
	m.idsSnowflake = m.set.NewCounter(`ticketd_ids_issued_total{source="snowflake"}`)
	m.idsTicket = m.set.NewCounter(`ticketd_ids_issued_total{source="ticket"}`)
	m.panics = m.set.NewCounter(`ticketd_panics_total`)
	m.fallbackRefused = m.set.NewCounter(`ticketd_fallback_ids_refused_total`)
	m.snowflakeRefused = m.set.NewCounter(`ticketd_snowflake_ids_refused_total`)
	m.badFraming = m.set.NewCounter(`ticketd_bad_framing_total`)
	m.reclaims = m.set.NewCounter(`ticketd_memory_reclaims_total`)
	version, revision, goversion := buildInfo(cfg.Version)
	m.buildInfo = promtext.Series("ticketd_build_info", "version", version, "revision", revision, "goversion", goversion)
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
	// construction, so building the name here costs nothing that matters.
	if ep >= numEndpoints {
		ep = epUnknown
	}
	m.set.GetOrCreateCounter(requestsName(ep, code)).Inc()
}

// observe records how long a request to ep took: atomic adds, no lock.
func (m *serverMetrics) observe(ep endpoint, d time.Duration) {
	if ep < numEndpoints {
		m.durations[ep].Observe(d)
	}
}

// writeMetrics writes /metrics: every family with its HELP and TYPE, each
// written whole.
func (s *Server) writeMetrics(out io.Writer) {
	w := promtext.NewWriter(out)
	s.metrics.writeSet(w)
	w.Family("ticketd_request_duration_seconds", promtext.Histogram,
		"How long the handler took to answer, by endpoint: from the moment the request had been read to the moment its answer was ready to send.")
	for ep := range epInvalid {
		s.metrics.durations[ep].Write(w, "ticketd_request_duration_seconds", promtext.Labels("endpoint", endpointNames[ep]))
	}
	s.writeConnMetrics(w)
	s.writeBackendMetrics(w)
	s.writeSequenceMetrics(w)
	if c := s.cfg.CallDurations; c != nil {
		c.write(w)
	}
	w.Family("ticketd_build_info", promtext.Gauge, "Always 1; the labels say which ticketd this is: its version, VCS revision and Go version.")
	w.Uint(s.metrics.buildInfo, 1)
	promtext.WriteGo(w)
	promtext.WriteProcess(w)
}

// writeSet writes the Set's counters, each family announced from
// setFamilies. The Set sorts its series by family, so each family's lines
// come together.
func (m *serverMetrics) writeSet(w *promtext.Writer) {
	var buf bytes.Buffer
	m.set.WritePrometheus(&buf)
	prev := ""
	for line := range bytes.Lines(buf.Bytes()) {
		name := line
		if i := bytes.IndexAny(line, "{ "); i >= 0 {
			name = line[:i]
		}
		if string(name) != prev {
			prev = string(name)
			w.Family(prev, promtext.Counter, setFamilies[prev])
		}
		w.Raw(line)
	}
}
