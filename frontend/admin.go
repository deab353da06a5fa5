package frontend

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
	"time"

	"ticketd/internal/logsum"
)

// The admin listener: what operators and their tools read, kept off the
// port that clients and load balancers reach. It serves
//
//	GET /metrics              Prometheus text, as the API does without Config.Admin
//	GET /v1/status            the same JSON as the API's
//	/debug/pprof/...          Go's profiling endpoints (net/http/pprof)
//
// over net/http, whose pprof handlers it uses as they are. With
// Config.Tokens it asks for tokens like the API (access.go: metrics for
// /metrics, status for /v1/status, both for /debug/pprof/); without, it has
// no authentication, and ticketd serve keeps it on loopback unless told.
// With Config.TLS it is HTTPS, with the API's certificate.

// kindAdminError: net/http's own error lines on the admin listener (TLS
// handshakes, bad requests). Their text is never printed: it may quote the
// client's bytes.
var kindAdminError = logsum.Kind{ID: "admin_connection_failed", Text: "admin listener: a connection failed"}

// ServeAdmin serves the admin endpoints on ln and blocks until Shutdown,
// then returns nil; another error only if ln fails. After Shutdown it
// returns ErrServerClosed at once. It may be called once.
//
// The admin listener stays up while the API drains, and Shutdown closes it
// once the API's requests have ended, cutting off what it is still
// answering (a CPU profile, a scrape): nothing there is worth waiting for.
func (s *Server) ServeAdmin(ln net.Listener) error {
	s.mu.Lock()
	if s.closed || s.admin != nil {
		s.mu.Unlock()
		ln.Close()
		if s.closed {
			return ErrServerClosed
		}
		return errors.New("frontend: ServeAdmin called twice")
	}
	s.admin = &http.Server{
		Handler:           s.adminAccess(s.adminHandler()),
		ReadHeaderTimeout: s.cfg.ReadTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    s.cfg.MaxHeaderBytes,
		// No WriteTimeout: a CPU profile or trace answers after the
		// seconds it was asked for.
		ErrorLog: log.New(adminErrorLog{s}, "", 0),
	}
	admin := s.admin
	s.serving.Add(1)
	s.mu.Unlock()
	defer s.serving.Done()
	if s.tls != nil {
		ln = tls.NewListener(ln, s.tls)
	}
	if err := admin.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("frontend: admin listener: %w", err)
	}
	return nil
}

// adminErrorLog counts net/http's error lines without printing them.
type adminErrorLog struct{ s *Server }

func (l adminErrorLog) Write(p []byte) (int, error) {
	l.s.events.Note(kindAdminError)
	return len(p), nil
}

func (s *Server) adminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", s.adminGet(epMetrics, func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", string(ctPrometheus))
		s.writeMetrics(w)
	}))
	mux.HandleFunc("/v1/status", s.adminGet(epStatus, func(w http.ResponseWriter) {
		b, err := json.Marshal(s.status())
		if err != nil {
			adminFail(w, http.StatusInternalServerError, "encoding the answer: "+err.Error())
			return
		}
		w.Header().Set("Content-Type", string(ctJSON))
		w.Write(append(b, '\n'))
	}))
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		adminFail(w, http.StatusNotFound, "no such path on the admin listener: see /metrics, /v1/status, /debug/pprof/")
	})
	return mux
}

// adminGet serves GET and HEAD with write, counting the request like the
// API's.
func (s *Server) adminGet(ep endpoint, write func(http.ResponseWriter)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			adminFail(w, http.StatusMethodNotAllowed, "method not allowed: use GET, HEAD")
			s.metrics.count(ep, http.StatusMethodNotAllowed)
			s.metrics.observe(ep, time.Since(start))
			return
		}
		write(w)
		s.metrics.count(ep, http.StatusOK)
		s.metrics.observe(ep, time.Since(start))
	}
}

func adminFail(w http.ResponseWriter, status int, msg string) {
	b, _ := json.Marshal(errorBody{Error: strings.TrimSpace(msg)})
	w.Header().Set("Content-Type", string(ctJSON))
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
