package importer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"ticketd/peers"
	"ticketd/ticket"
	"ticketd/ticket/dba"
)

// Options is what an import is told besides the peer and its databases.
type Options struct {
	// Tickets is the ticket servers and the account that creates sequences
	// (role ticketd_sequences), as `ticketd sequence create` takes them.
	Tickets ticket.Config
	// Prefix begins every sequence's name (peers.ValidPrefix): to import
	// both peers' keys where they share names. A key the routes file
	// already routes to a sequence keeps it: a run under another prefix is
	// refused (Plan.keepRoutes).
	Prefix string
	// MarginSegments is how many of the peer's largest fetches lie between
	// a key's max_id and its sequence's start. Zero:
	// peers.DefaultMarginSegments.
	MarginSegments int
	// Block is every new sequence's block size. Zero: the key's step (at
	// most ticket.MaxBlockSize).
	Block uint64
	// RoutesFile is the routes file to write (ticketd serve -peer-routes);
	// it keeps the routes it holds. Required.
	RoutesFile string
	// TokensFile, for tinyid, is the tokens file to write (ticketd serve
	// -tokens-file); it keeps its lines but those of an earlier import of
	// Cluster. Empty: tinyid's tokens are not imported (a ticketd without a
	// tokens file checks none).
	TokensFile string
	// Cluster, for tinyid, names the tinyid cluster the sources are
	// (ValidCluster): its lines in TokensFile are tinyid-CLUSTER-ID and
	// end MarkTokens " -cluster CLUSTER", and a run replaces the lines of
	// its own cluster alone (Plan.keepTokens). Empty: the cluster without a
	// name, whose lines are release 4's, tinyid-ID ending MarkTokens.
	Cluster string
	// LeafWorkers, for Leaf, is written to the routes file as its
	// leaf-workers line when not nil: Leaf's snowflake worker IDs.
	LeafWorkers *peers.LeafWorkers
	// DryRun: plan and check, write nothing.
	DryRun bool
	// Timeout bounds reading each of the peer's databases. Zero: 30 s.
	Timeout time.Duration
}

// ErrRefused marks an import that refused to write anything: a problem of
// the plan (Plan.Problems) or a create package dba refused. The command
// exits 2.
var ErrRefused = errors.New("importer: refused, nothing written")

// ErrPassed marks an import that found the peer past a start an earlier
// run gave one of its sequences: the peer and ticketd may both have handed
// out values above it. The command exits 1.
var ErrPassed = errors.New("importer: the peer went past a sequence's start")

// Report is what an import did (or, with DryRun, would do).
type Report struct {
	Plan
	// Created is what dba.CreateSequences did per server (empty for a dry
	// run).
	Created dba.CreateReport
	// RoutesWritten and TokensWritten: the files written, "" for none.
	RoutesWritten, TokensWritten string
	// Passed are the keys the peer went past the start of (ErrPassed).
	Passed []string
}

// Run imports p's keys from sources onto the ticket servers.
func Run(ctx context.Context, p peers.Peer, sources []Source, opt Options) (Report, error) {
	if err := opt.check(p, sources); err != nil {
		return Report{}, err
	}
	if opt.MarginSegments == 0 {
		opt.MarginSegments = peers.DefaultMarginSegments
	}
	timeout := opt.Timeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	var rows []Row
	var toks []TokenRow
	for _, src := range sources {
		r, t, err := read(ctx, p, src, timeout)
		if err != nil {
			return Report{}, err
		}
		rows, toks = append(rows, r...), append(toks, t...)
	}
	rep := Report{Plan: plan(p, rows, opt)}
	var tf *tokensFile
	if p == peers.TinyID && opt.TokensFile != "" {
		rep.planTokens(toks, rows, opt.Cluster)
		var err error
		if tf, err = readTokensFile(opt.TokensFile); err != nil {
			return rep, fmt.Errorf("%w: %w", ErrRefused, err)
		}
		rep.Cluster, rep.TokenLines = opt.Cluster, tf.byCluster()
		rep.keepTokens(tf, opt.Cluster, toks)
	}
	old, err := readRoutes(opt.RoutesFile)
	if err != nil {
		return rep, fmt.Errorf("%w: %w", ErrRefused, err)
	}
	rep.keepRoutes(old, opt.RoutesFile)
	if len(rep.Problems) > 0 {
		return rep, fmt.Errorf("%w: %s", ErrRefused, strings.Join(rep.Problems, "; "))
	}
	if err := rep.againstServers(ctx, opt); err != nil {
		return rep, err
	}
	routes, err := mergeRoutes(old, p, rep.Items, opt.LeafWorkers)
	if err != nil {
		return rep, fmt.Errorf("%w: %w", ErrRefused, err)
	}
	// Written when it gets tokens, or loses the lines of this cluster's
	// earlier import (a token that left tiny_id_token, or one release 4
	// gave a scope it no longer gets).
	var tokens []byte
	if len(rep.Tokens) > 0 || rep.TokenLines[opt.Cluster] > 0 {
		if tokens, err = tf.merge(opt.Cluster, rep.Tokens); err != nil {
			return rep, fmt.Errorf("%w: %w", ErrRefused, err)
		}
	}
	if opt.DryRun {
		return rep, nil
	}
	if len(rep.Items) > 0 {
		rep.Created, err = dba.CreateSequences(ctx, opt.Tickets, rep.defs(), dba.CreateOptions{})
		if err != nil {
			if errors.Is(err, dba.ErrRefused) {
				return rep, fmt.Errorf("%w: %w", ErrRefused, err)
			}
			// Some server was not reached: its sequences are missing
			// there, and no caller may be routed to them before a run that
			// reaches every server.
			return rep, err
		}
	}
	if err := writeAtomic(opt.RoutesFile, routes); err != nil {
		return rep, err
	}
	rep.RoutesWritten = opt.RoutesFile
	if tokens != nil {
		if err := writeAtomic(opt.TokensFile, tokens); err != nil {
			return rep, err
		}
		rep.TokensWritten = opt.TokensFile
	}
	return rep, nil
}

func (opt Options) check(p peers.Peer, sources []Source) error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: %s", ErrRefused, fmt.Sprintf(format, args...)))
	}
	switch {
	case len(sources) == 0:
		bad("no database of the peer to read")
	case p == peers.Leaf && len(sources) > 1:
		bad("Leaf reads one database, not %d", len(sources))
	}
	if !peers.ValidPrefix(opt.Prefix) {
		bad("prefix %q: want a lower-case letter, then lower-case letters, digits or underscores, at most %d", opt.Prefix, peers.MaxPrefixLen)
	}
	if opt.MarginSegments < 0 || opt.MarginSegments > peers.MaxMarginSegments {
		bad("a margin of %d segments: want 1 to %d", opt.MarginSegments, peers.MaxMarginSegments)
	}
	if opt.Block > ticket.MaxBlockSize {
		bad("block %d: at most %d", opt.Block, ticket.MaxBlockSize)
	}
	if opt.RoutesFile == "" {
		bad("no routes file to write")
	}
	if p == peers.Leaf && opt.TokensFile != "" {
		bad("Leaf has no tokens to import")
	}
	if !ValidCluster(opt.Cluster) {
		bad("cluster %q: want a lower-case letter, then lower-case letters, digits or underscores, at most %d", opt.Cluster, MaxClusterLen)
	}
	if p == peers.Leaf && opt.Cluster != "" {
		bad("a cluster names tinyid's tokens: Leaf has none")
	}
	if p == peers.TinyID && opt.LeafWorkers != nil {
		bad("Leaf's workers belong to a Leaf import")
	}
	return errors.Join(errs...)
}

// againstServers reads what the ticket servers hold of the plan's
// sequences: one that exists keeps its definition and start (a run
// again), and must begin above what the peer handed out; one that exists
// without a start, or that the servers hold differently, is a problem.
func (rep *Report) againstServers(ctx context.Context, opt Options) error {
	names := make([]string, len(rep.Items))
	for k, it := range rep.Items {
		names[k] = it.Sequence
	}
	if len(names) == 0 {
		return nil
	}
	held, _, err := dba.Starts(ctx, opt.Tickets, names)
	if err != nil {
		return err
	}
	for k := range rep.Items {
		it, h := &rep.Items[k], held[k]
		if !h.Exists {
			continue
		}
		where := fmt.Sprintf("%s %s (sequence %s)", rep.Peer, peers.Escape(it.Key), it.Sequence)
		switch {
		case h.Differ:
			rep.Problems = append(rep.Problems, where+": the ticket servers hold it differently: see ticketd sequence check")
		case h.Start == 0:
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s exists, made without a start: it may hand out what the peer did; import under another -prefix", where))
		case h.Def.Defined() && (h.Def.Bits != 64 || h.Def.Table != "" || h.Def.Public()):
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s exists as %s, not a plain 64-bit sequence", where, h.Def))
		case peers.Passed(rep.Peer, it.MaxID, h.Start):
			rep.Passed = append(rep.Passed, fmt.Sprintf("%s: the peer's max_id %d is past the sequence's start %d: values from %d to %d may have been handed out by both",
				where, it.MaxID, h.Start, h.Start+1, it.MaxID))
		}
		it.Exists, it.Start, it.Served = true, h.Start, h.Served
		if h.Def.Defined() {
			it.Block = h.Def.BlockSize
			if rep.Peer == peers.TinyID {
				it.Route.Segment = uint32(min(it.Block, peers.MaxSegment))
			}
		}
	}
	if len(rep.Passed) > 0 {
		return fmt.Errorf("%w: %s", ErrPassed, strings.Join(rep.Passed, "; "))
	}
	if len(rep.Problems) > 0 {
		return fmt.Errorf("%w: %s", ErrRefused, strings.Join(rep.Problems, "; "))
	}
	return nil
}
