package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"syscall"
	"time"

	"ticketd/frontend"
)

// How ticketd stops, in order (SIGTERM or SIGINT):
//
//  1. Drain: /readyz answers 503 at once, so a load balancer that checks it
//     takes this instance out of rotation within its check interval × fall
//     count; every answer carries Connection: close, so balancers and
//     keep-alive clients open their next connection elsewhere. Requests are
//     served as usual, on new connections too, for -drain-delay (a second
//     signal cuts it short).
//  2. The listener closes: new connections are refused. Requests in flight
//     finish; idle keep-alive connections are closed.
//  3. serve returns, and its deferred keeper.Close stops the generator and
//     releases the worker lease, so no ID is issued after the release.
//
// A second signal ends the drain delay at once; requests in flight still
// finish. -shutdown-timeout bounds steps 1 and 2 together: when it runs out,
// requests still in flight are cut off. Step 3 has its own bound
// (-lease-op-timeout).

// stop runs steps 1 and 2 on api.
func stop(log *slog.Logger, api *frontend.Server, hurry <-chan struct{}, drainDelay, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	api.Drain()
	log.Info("shutting down: draining (/readyz answers 503, requests still served), then closing the listener; a second signal ends the drain delay",
		"drain_delay", drainDelay, "shutdown_timeout", timeout)
	if drainDelay > 0 {
		t := time.NewTimer(drainDelay)
		select {
		case <-t.C:
		case <-hurry:
			t.Stop()
			log.Info("second signal: drain delay cut short")
		}
	}
	log.Info("closing the listener: requests in flight finish, then the worker ID is released")
	if err := api.Shutdown(ctx); err != nil {
		log.Warn("draining requests", "err", err)
	}
}

// checkAdminAddr refuses an admin address that is not loopback, unless
// allowRemote: -tokens-file (then it asks for tokens), -admin-allow-remote
// or -insecure-listen.
func checkAdminAddr(addr string, allowRemote bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usagef("-admin-listen %q: %v", addr, err)
	}
	if allowRemote || host == "localhost" {
		return nil
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.IsLoopback() {
		return nil
	}
	return usagef("-admin-listen %q is not a loopback address, and without -tokens-file /metrics, /v1/status and /debug/pprof/ have no authentication: "+
		"use 127.0.0.1:PORT, give -tokens-file, or add -admin-allow-remote if only a private network reaches it", addr)
}

// listenAdmin opens the admin listener, and checks the address it got is
// loopback unless allowRemote ("localhost" could resolve elsewhere).
func listenAdmin(addr string, allowRemote bool) (net.Listener, error) {
	ln, err := listenNamed("-admin-listen", addr)
	if err != nil {
		return nil, err
	}
	if a, ok := ln.Addr().(*net.TCPAddr); ok && !allowRemote && !a.IP.IsLoopback() {
		ln.Close()
		return nil, fmt.Errorf("admin listener: %s is not a loopback address (-admin-allow-remote to allow it)", a)
	}
	return ln, nil
}

// warnFileLimit warns when the open-file limit is below what -max-conns
// lets in: connections beyond it fail to be accepted (counted in
// ticketd_accept_errors_total) rather than being answered 503.
func warnFileLimit(log *slog.Logger, maxConns int) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return
	}
	// The process's own files (listeners, database connections, logs) need a
	// margin too.
	if need := uint64(maxConns) + 128; lim.Cur < need {
		log.Warn("the open-file limit is below -max-conns: raise it (LimitNOFILE=, ulimit -n) or lower -max-conns",
			"limit", lim.Cur, "max_conns", maxConns)
	}
}
