package importer

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"

	"ticketd/auth"
	"ticketd/peers"
	"ticketd/ticket"
	"ticketd/ticket/dba"
)

// Item is one key of the plan.
type Item struct {
	Key      string
	Sequence string
	// MaxID is the peer's max_id for the key (the largest over its
	// databases), Step its step there, Largest the most one fetch of the
	// peer's moves max_id (peers.LargestStep).
	MaxID, Step, Largest int64
	// Start: every value the sequence hands out is above it. For a
	// sequence that exists, the start it was created with.
	Start uint64
	// Block is the sequence's block size.
	Block uint64
	Route peers.Route
	// Exists: the sequence was created by an earlier run (or by hand, with
	// the same definition and start): the run keeps it.
	Exists bool
	// Served is the most the sequence handed out already (0: nothing).
	Served uint64
}

// Room is how far the start lies above what the peer handed out, in
// values and in the peer's largest fetches.
func (it Item) Room() (values uint64, fetches uint64) {
	top := uint64(max(it.MaxID, 0))
	if it.Start <= top {
		return 0, 0
	}
	return it.Start - top, (it.Start - top) / uint64(max(it.Largest, 1))
}

// TokenLine is one tinyid token as the tokens file gets it.
type TokenLine struct {
	Name   string   // tinyid-ID (tinyid-CLUSTER-ID), ID the token's first row in tiny_id_token
	Digest [32]byte // SHA-256 of the token
	Scopes []string // tickets:NAME of its biz types that the plan holds, sorted
	Short  bool     // shorter than auth.MinTokenLen: worth replacing
}

// Plan is what an import does.
type Plan struct {
	Peer  peers.Peer
	Items []Item
	// Tokens are tinyid's, in the order of their first rows.
	Tokens []TokenLine
	// Cluster names the tinyid cluster Tokens are of (Options.Cluster),
	// and TokenLines counts, per cluster, the lines earlier tinyid
	// imports wrote in the tokens file: Cluster's are replaced by Tokens,
	// the others kept.
	Cluster    string
	TokenLines map[string]int
	// Skipped are keys the peer cannot hand out anything of (a step below
	// 1), biz types of a token that the plan holds no sequence of, and
	// tokens left with none: said, not imported.
	Skipped []string
	// Problems refuse the whole import: nothing is written.
	Problems []string
}

// plan merges what the sources hold per key and decides each key's
// sequence, block, start and route.
func plan(p peers.Peer, rows []Row, opt Options) Plan {
	pl := Plan{Peer: p}
	byKey := map[string][]Row{}
	for _, r := range rows {
		byKey[r.Key] = append(byKey[r.Key], r)
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	names := map[string]string{} // sequence → key
	for _, key := range keys {
		rs := byKey[key]
		it, problem, skip := planKey(p, key, rs, opt)
		switch {
		case skip != "":
			pl.Skipped = append(pl.Skipped, skip)
			continue
		case problem != "":
			pl.Problems = append(pl.Problems, problem)
			continue
		}
		if other, dup := names[it.Sequence]; dup {
			pl.Problems = append(pl.Problems, fmt.Sprintf("%s %s and %s would both be sequence %s: import one of them with -prefix into another run",
				p, peers.Escape(other), peers.Escape(key), it.Sequence))
			continue
		}
		names[it.Sequence] = key
		pl.Items = append(pl.Items, it)
	}
	return pl
}

// planKey is one key's item, or why it cannot be imported (problem) or is
// left out (skip).
func planKey(p peers.Peer, key string, rs []Row, opt Options) (it Item, problem, skip string) {
	it = Item{Key: key, Sequence: peers.SequenceName(opt.Prefix, key)}
	where := fmt.Sprintf("%s %s", p, peers.Escape(key))
	switch {
	case key == "":
		return it, "", where + ": an empty key: no caller can ask for it"
	case len(key) > peers.MaxKeyLen:
		return it, fmt.Sprintf("%s: a key of %d bytes (at most %d)", where, len(key), peers.MaxKeyLen), ""
	}
	for _, r := range rs {
		if r.Step < 1 {
			return it, "", fmt.Sprintf("%s: step %d in %s: the peer hands out nothing of it", where, r.Step, r.From)
		}
		it.MaxID = max(it.MaxID, r.MaxID)
		it.Step = max(it.Step, r.Step)
	}
	it.Largest = peers.LargestStep(p, it.Step)
	start, err := peers.Start(p, it.MaxID, it.Step, opt.MarginSegments)
	if err != nil {
		return it, fmt.Sprintf("%s: %v", where, err), ""
	}
	it.Start = start
	it.Block = opt.Block
	if it.Block == 0 {
		it.Block = uint64(min(it.Step, int64(maxBlock)))
	}
	it.Route = peers.Route{Sequence: it.Sequence}
	if p == peers.TinyID {
		delta, rem, msg := residue(rs)
		if msg != "" {
			return it, fmt.Sprintf("%s: %s", where, msg), ""
		}
		it.Route.Delta, it.Route.Remainder = uint32(delta), uint32(rem)
		it.Route.Segment = uint32(min(it.Block, peers.MaxSegment))
	}
	return it, "", ""
}

// maxBlock is the largest block size of a sequence (schema.sql's bound).
const maxBlock = ticket.MaxBlockSize

// residue is the delta and remainder a biz type's IDs keep, from its rows
// in each of tinyid's databases: theirs, when they agree; 1 and 0 when the
// databases split the residues of one delta among them (one database per
// remainder, tinyid's way of running several), since ticketd's servers
// then hand out what all of them did.
func residue(rs []Row) (delta, rem int64, msg string) {
	d := rs[0].Delta
	seen := map[int64]bool{}
	for _, r := range rs {
		if r.Delta < 1 || r.Delta > peers.MaxDelta || r.Remainder < 0 || r.Remainder >= r.Delta {
			return 0, 0, fmt.Sprintf("delta %d remainder %d in %s: want delta 1 to %d and remainder 0 to delta-1", r.Delta, r.Remainder, r.From, peers.MaxDelta)
		}
		if r.Delta != d {
			return 0, 0, fmt.Sprintf("its databases disagree on delta (%d in %s, %d in %s)", d, rs[0].From, r.Delta, r.From)
		}
		seen[r.Remainder] = true
	}
	switch {
	case len(seen) == 1:
		return d, rs[0].Remainder, ""
	case int64(len(seen)) == d:
		return 1, 0, ""
	}
	var from []string
	for _, r := range rs {
		from = append(from, fmt.Sprintf("%d in %s", r.Remainder, r.From))
	}
	return 0, 0, fmt.Sprintf("its databases hold remainders %s of delta %d: neither one residue nor all of them", strings.Join(from, ", "), d)
}

// planTokens makes a tokens-file line of each tinyid token that may ask for
// a biz type the plan holds, its scopes the sequences of those biz types
// alone. A biz type the plan does not hold gets no scope, and the plan
// says so per token: ticketd serves a name without a route from the
// sequence of that name (peers.Routes.Lookup), one this import neither
// made nor routed, and tinyid's tokens, sent in query strings, would reach
// whatever that sequence hands out. rows are the keys the peer's
// databases hold, to say why a biz type is not there; cluster, the
// tokens' cluster (Options.Cluster), names them.
func (pl *Plan) planTokens(toks []TokenRow, rows []Row, cluster string) {
	seq := map[string]string{}
	for _, it := range pl.Items {
		seq[it.Key] = it.Sequence
	}
	held := map[string]bool{}
	for _, r := range rows {
		held[r.Key] = true
	}
	type acc struct {
		first  int64
		scopes []string
		out    []TokenRow // rows of biz types the plan does not hold
	}
	byToken := map[string]*acc{}
	var order []string
	for _, r := range toks {
		a := byToken[r.Token]
		if a == nil {
			a = &acc{first: r.ID}
			byToken[r.Token] = a
			order = append(order, r.Token)
		}
		if name, ok := seq[r.BizType]; ok {
			a.scopes = append(a.scopes, "tickets:"+name)
		} else {
			a.out = append(a.out, r)
		}
	}
	for _, tok := range order {
		a := byToken[tok]
		if tok == "" {
			pl.Skipped = append(pl.Skipped, fmt.Sprintf("tiny_id_token row %d: an empty token: tinyid refuses it", a.first))
			continue
		}
		name := tokenName(cluster, a.first)
		for _, r := range a.out {
			why := "has no row of tiny_id_info in this import's databases"
			if held[r.BizType] {
				why = "is not imported (above)"
			}
			pl.Skipped = append(pl.Skipped, fmt.Sprintf("tiny_id_token row %d (token %s): biz type %s %s: the token gets no scope of it",
				r.ID, name, peers.Escape(r.BizType), why))
		}
		if len(a.scopes) == 0 {
			pl.Skipped = append(pl.Skipped, fmt.Sprintf("token %s (tiny_id_token row %d): for no biz type this import creates or routes: not written", name, a.first))
			continue
		}
		slices.Sort(a.scopes)
		pl.Tokens = append(pl.Tokens, TokenLine{Name: name, Digest: sha256.Sum256([]byte(tok)),
			Scopes: slices.Compact(a.scopes), Short: len(tok) < auth.MinTokenLen})
	}
}

// defs is the plan's sequences as package dba creates them.
func (pl *Plan) defs() []dba.NewSequence {
	out := make([]dba.NewSequence, 0, len(pl.Items))
	for _, it := range pl.Items {
		out = append(out, dba.NewSequence{Start: it.Start,
			SequenceInfo: ticket.SequenceInfo{Name: it.Sequence, Bits: 64, BlockSize: it.Block}})
	}
	return out
}

// keepRoutes refuses to route a key that the routes file (old, read from
// path) already routes to another sequence: the sequence it has may have
// handed out values above the start this run would give the new one
// (which begins above the peer's max_id, not above the old sequence's
// counters), and the key's callers would get them twice. A run under
// another -prefix is how that happens; the way on is the prefix of the run
// that wrote the route.
func (pl *Plan) keepRoutes(old *peers.Routes, path string) {
	for _, it := range pl.Items {
		rt, ok := old.Listed(pl.Peer, it.Key)
		if !ok || rt.Sequence == it.Sequence {
			continue
		}
		pl.Problems = append(pl.Problems, fmt.Sprintf("%s %s is routed to sequence %s in %s; this run would route it to sequence %s, "+
			"beginning at %d, where %s may already have handed out values: run the import with the -prefix of the run that wrote the route (which keeps it and %s)",
			pl.Peer, peers.Escape(it.Key), rt.Sequence, path, it.Sequence, it.Start, rt.Sequence, rt.Sequence))
	}
}
