package offline

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"ticketd/ticket/internal/conn"
	"ticketd/ticket/internal/spec"
)

// Connect opens one pool per server and checks each server's place in the
// pair, as a Pair does at Open. down[i] is why server i cannot be used
// (unreachable); a server in the wrong place (or refusing TLS) fails the
// whole call. The pools must be closed with CloseServers.
func Connect(ctx context.Context, cfg spec.Config) (servers []*conn.Server, down []error, err error) {
	servers = make([]*conn.Server, len(cfg.Servers))
	cred := conn.NewCredential(cfg)
	for i := range cfg.Servers {
		s, err := conn.NewServer(cfg, i, cred)
		if err != nil {
			CloseServers(servers)
			return nil, nil, err
		}
		servers[i] = s
	}
	down = make([]error, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, cfg.EffectiveConnectTimeout()+cfg.CallTimeout)
			defer cancel()
			ss := conn.NewSession(s, conn.OpCheck, nil)
			ss.Long = false // a check, bounded by its caller: the request deadline
			down[i] = s.CheckSettings(cctx, ss)
			ss.Close()
		})
	}
	wg.Wait()
	var misplaced []error
	for _, e := range down {
		if errors.Is(e, spec.ErrMisconfigured) {
			misplaced = append(misplaced, e)
		}
	}
	if len(misplaced) > 0 {
		CloseServers(servers)
		return nil, nil, errors.Join(misplaced...)
	}
	return servers, down, nil
}

// Prepare fills in cfg's defaults and validates it: how every command
// begins.
func Prepare(cfg spec.Config) (spec.Config, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// OpenAll validates cfg and connects to every server of it (connectAll):
// how a command that needs the whole pair begins. The caller closes the
// servers (CloseServers).
func OpenAll(ctx context.Context, cfg spec.Config) (spec.Config, []*conn.Server, error) {
	return OpenAllFor(ctx, cfg, "")
}

// OpenAllFor is OpenAll for a command that says why it needs every server
// (why: "the marks for one server live on the others"), in the error it
// returns when one is missing.
func OpenAllFor(ctx context.Context, cfg spec.Config, why string) (spec.Config, []*conn.Server, error) {
	cfg, err := Prepare(cfg)
	if err != nil {
		return cfg, nil, err
	}
	servers, err := connectAll(ctx, cfg, why)
	return cfg, servers, err
}

// connectAll is Connect, for the calls that need every server: a repair of
// half a pair is refused, because the marks for a server live on the
// others, and a misplaced server (the list in the wrong order) would be
// compared with another server's marks; the deployment record, and what
// an upgrade or an adoption reads and writes, are on every server too.
func connectAll(ctx context.Context, cfg spec.Config, because string) ([]*conn.Server, error) {
	why := "every server of the pair must be reachable and in its place"
	if because != "" {
		why += " (" + because + ")"
	}
	servers, down, err := Connect(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", why, err)
	}
	if err := errors.Join(down...); err != nil {
		CloseServers(servers)
		return nil, fmt.Errorf("%s: %w", why, err)
	}
	return servers, nil
}

// EachServer runs fn on every server whose down entry is nil (down may be
// nil: every server) in parallel, each under the tools' statement timeout (a
// read of 100,000 catalog rows takes a few pages), and joins the errors.
func EachServer(ctx context.Context, cfg spec.Config, servers []*conn.Server, down []error, fn func(context.Context, *conn.Server) error) error {
	errs := make([]error, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		if down != nil && down[i] != nil {
			continue
		}
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, cfg.StatementTimeout())
			defer cancel()
			errs[i] = fn(cctx, s)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// CloseServers closes the pools of servers (nil ones skipped).
func CloseServers(servers []*conn.Server) {
	for _, s := range servers {
		if s != nil {
			s.Pool().Close()
		}
	}
}
