package importer

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"ticketd/auth"
	"ticketd/internal/mysqltest"
	"ticketd/peers"
	"ticketd/ticket"
	"ticketd/ticket/dba"
)

// peerDB is a MariaDB server of the peer's, beside the ticket servers, its
// tables made with the peers' own definitions (testdata), read by an
// account with SELECT only.
type peerDB struct {
	*mysqltest.Server
	user, password string
}

func startPeer(t *testing.T, dbs ...string) *peerDB {
	t.Helper()
	s := mysqltest.Start(t, mysqltest.Options{})
	pw := rand.Text()
	sql := fmt.Sprintf("CREATE USER 'reader'@'%%' IDENTIFIED BY '%s';\n", pw)
	for _, db := range dbs {
		ddl := "leaf_alloc.sql"
		if strings.HasPrefix(db, "tinyid") {
			ddl = "tinyid.sql"
		}
		b, err := os.ReadFile(filepath.Join("testdata", ddl))
		if err != nil {
			t.Fatal(err)
		}
		sql += fmt.Sprintf("CREATE DATABASE %[1]s; USE %[1]s;\n%[2]s\nGRANT SELECT ON %[1]s.* TO 'reader'@'%%';\n", db, b)
	}
	s.Exec(t, sql)
	return &peerDB{Server: s, user: "reader", password: pw}
}

func (p *peerDB) source(db string) Source {
	return Source{Addr: p.Addr(), User: p.user, Password: p.password, Database: db}
}

// ticketsConfig is the sequence account's config of the pair.
func ticketsConfig(mp *mysqltest.Pair) ticket.Config {
	cfg := ticket.DefaultConfig()
	cfg.Servers = []ticket.ServerConfig{{Addr: mp.Servers[0].Addr()}, {Addr: mp.Servers[1].Addr()}}
	cfg.User, cfg.Password = mp.SeqUser, mp.SeqPassword
	return cfg
}

// take takes n values of name from a Pair of the ticket servers, as
// ticketd serve does.
func take(t *testing.T, mp *mysqltest.Pair, name string, n int) []uint64 {
	t.Helper()
	s := startServing(t, mp, name)
	defer s.stop()
	return s.take(t, n)
}

func starts(t *testing.T, mp *mysqltest.Pair, names ...string) []dba.SequenceStart {
	t.Helper()
	out, down, err := dba.Starts(context.Background(), ticketsConfig(mp), names)
	if err != nil || down[0] != nil || down[1] != nil {
		t.Fatalf("dba.Starts: %v %v", err, down)
	}
	return out
}

// TestImportLeaf: a dry run writes nothing; the import makes each key a
// sequence beginning above max_id plus the margin of Leaf's largest step,
// and a route; the values ticketd then hands out are above it. Run again,
// it keeps the start; with Leaf past a start it refuses, writing nothing.
func TestImportLeaf(t *testing.T) {
	peer := startPeer(t, "leaf")
	mp := mysqltest.StartPair(t)
	// Leaf's fetches: max_id moves by the step before a segment is used.
	peer.Exec(t, `USE leaf;
INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES ('leaf-segment-test', 81234567890, 2000, 'test'), ('orders', 1, 1000, NULL), ('broken', 5, 0, NULL);
UPDATE leaf_alloc SET max_id = max_id + step WHERE biz_tag = 'leaf-segment-test';
UPDATE leaf_alloc SET max_id = max_id + step WHERE biz_tag = 'leaf-segment-test';
UPDATE leaf_alloc SET max_id = max_id + step WHERE biz_tag = 'orders';`)
	routes := filepath.Join(t.TempDir(), "peer-routes")
	workers, _ := peers.ParseLeafWorkers("0-31")
	opt := Options{Tickets: ticketsConfig(mp), MarginSegments: 10, RoutesFile: routes, LeafWorkers: &workers, DryRun: true}
	ctx := context.Background()
	src := []Source{peer.source("leaf")}

	rep, err := Run(ctx, peers.Leaf, src, opt)
	if err != nil {
		t.Fatal(err)
	}
	seq := peers.SequenceName("", "leaf-segment-test")
	if len(rep.Items) != 2 || len(rep.Skipped) != 1 || !strings.Contains(rep.Skipped[0], "step 0") {
		t.Fatalf("plan: %+v", rep.Plan)
	}
	want := map[string]uint64{seq: 81234571890 + 10*512_000, "orders": 1001 + 10*512_000}
	for _, it := range rep.Items {
		if it.Start != want[it.Sequence] || it.Exists {
			t.Errorf("%s: start %d (exists %v), want %d", it.Sequence, it.Start, it.Exists, want[it.Sequence])
		}
	}
	if _, err := os.Stat(routes); !errors.Is(err, os.ErrNotExist) || starts(t, mp, seq)[0].Exists {
		t.Fatalf("a dry run wrote something: %v", err)
	}

	opt.DryRun = false
	if _, err := Run(ctx, peers.Leaf, src, opt); err != nil {
		t.Fatal(err)
	}
	got, err := peers.ReadFile(routes)
	if err != nil {
		t.Fatal(err)
	}
	if rt, ok := got.Listed(peers.Leaf, "leaf-segment-test"); !ok || rt.Sequence != seq {
		t.Fatalf("route %+v, %v; want %s", rt, ok, seq)
	}
	if w, declared := got.LeafWorkers(); !declared || w.String() != "0-31" {
		t.Fatalf("leaf-workers %v %v", w, declared)
	}
	if fi, _ := os.Stat(routes); fi.Mode().Perm() != 0o600 {
		t.Errorf("routes file mode %v, want 0600", fi.Mode().Perm())
	}
	for _, v := range take(t, mp, seq, 5) {
		if v <= want[seq] {
			t.Fatalf("%s handed out %d, not above its start %d", seq, v, want[seq])
		}
	}

	// Leaf goes on fetching (within the margin); the import run again keeps
	// the sequences and their starts.
	peer.Exec(t, "USE leaf; UPDATE leaf_alloc SET max_id = max_id + 1000000 WHERE biz_tag = 'leaf-segment-test';")
	rep, err = Run(ctx, peers.Leaf, src, opt)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range rep.Items {
		if !it.Exists || it.Start != want[it.Sequence] {
			t.Errorf("run again: %s exists %v start %d, want kept at %d", it.Sequence, it.Exists, it.Start, want[it.Sequence])
		}
		if it.Sequence == seq && it.Served == 0 {
			t.Errorf("run again: %s handed out nothing, it says", seq)
		}
	}

	// Leaf past the start: refused, nothing written.
	before, _ := os.ReadFile(routes)
	peer.Exec(t, fmt.Sprintf("USE leaf; UPDATE leaf_alloc SET max_id = %d WHERE biz_tag = 'leaf-segment-test';", want[seq]+2))
	peer.Exec(t, "USE leaf; INSERT INTO leaf_alloc (biz_tag, max_id, step) VALUES ('new_key', 1, 10);")
	rep, err = Run(ctx, peers.Leaf, src, opt)
	if !errors.Is(err, ErrPassed) || len(rep.Passed) != 1 || !strings.Contains(rep.Passed[0], seq) {
		t.Fatalf("Leaf past the start: %v %v, want ErrPassed naming %s", err, rep.Passed, seq)
	}
	after, _ := os.ReadFile(routes)
	if string(after) != string(before) || starts(t, mp, "new_key")[0].Exists {
		t.Fatal("a refused import wrote something")
	}
}

// TestImportTinyID: tinyid's keys from two databases (one per remainder of
// a split biz type), residues kept, tokens as digests with the scopes of
// their biz types (none of a biz type without a row) in the tokens file
// beside its other lines; a run again changes nothing; databases whose
// residues cannot be merged are refused.
func TestImportTinyID(t *testing.T) {
	peer := startPeer(t, "tinyid1", "tinyid2")
	mp := mysqltest.StartPair(t)
	tokA, tokB, short := "0f673adf80504e2eaa552f5d791b644c", rand.Text(), "short"
	peer.Exec(t, fmt.Sprintf(`USE tinyid1;
INSERT INTO tiny_id_info (biz_type, begin_id, max_id, step, delta, remainder, version) VALUES
  ('test', 1, 1, 100000, 1, 0, 0), ('test_odd', 1, 1, 100000, 2, 1, 0), ('split', 1000, 1000, 5000, 2, 0, 0);
UPDATE tiny_id_info SET max_id = max_id + step, version = version + 1 WHERE biz_type = 'test';
INSERT INTO tiny_id_token (token, biz_type, remark) VALUES ('%[1]s', 'test', ''), ('%[1]s', 'test_odd', ''), ('%[2]s', 'test_odd', ''),
  ('', 'test', ''), ('%[3]s', 'test_odd', ''), ('%[3]s', 'nosuch_biz', ''), ('%[2]s', 'Not A Name', '');
USE tinyid2;
INSERT INTO tiny_id_info (biz_type, begin_id, max_id, step, delta, remainder, version) VALUES ('split', 1000, 31000, 5000, 2, 1, 6);`, tokA, tokB, short))
	dir := t.TempDir()
	routes, tokens := filepath.Join(dir, "routes"), filepath.Join(dir, "tokens")
	other := "ops " + strings.Repeat("ab", 20) + " status,metrics\n"
	if err := os.WriteFile(tokens, []byte(other), 0o600); err != nil {
		t.Fatal(err)
	}
	opt := Options{Tickets: ticketsConfig(mp), MarginSegments: 3, RoutesFile: routes, TokensFile: tokens}
	src := []Source{peer.source("tinyid1"), peer.source("tinyid2")}
	rep, err := Run(context.Background(), peers.TinyID, src, opt)
	if err != nil {
		t.Fatal(err)
	}
	r, err := peers.ReadFile(routes)
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]peers.Route{
		"test":     {Sequence: "test", Segment: 100000, Delta: 1},
		"test_odd": {Sequence: "test_odd", Segment: 100000, Delta: 2, Remainder: 1},
		"split":    {Sequence: "split", Segment: 5000, Delta: 1}, // the databases' split: every residue
	} {
		if got, _ := r.Listed(peers.TinyID, key); got != want {
			t.Errorf("route of %s: %+v, want %+v", key, got, want)
		}
	}
	st := starts(t, mp, "test", "test_odd", "split")
	for k, want := range []uint64{100001 + 3*100000, 1 + 3*100000, 31000 + 3*5000} {
		if st[k].Start != want || st[k].Def.BlockSize != map[int]uint64{0: 100000, 1: 100000, 2: 5000}[k] {
			t.Errorf("%s: start %d block %d, want start %d", st[k].Name, st[k].Start, st[k].Def.BlockSize, want)
		}
	}
	for _, v := range take(t, mp, "split", 3) {
		if v <= 31000+3*5000 {
			t.Fatalf("split handed out %d", v)
		}
	}

	// The tokens file: the other line kept, a line per token with its
	// digest and scopes, no token in clear; auth reads it.
	b, err := os.ReadFile(tokens)
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range []string{tokA, tokB} {
		if strings.Contains(string(b), tok) {
			t.Fatalf("the tokens file holds a token in clear:\n%s", b)
		}
	}
	set, err := auth.Parse(b, auth.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		tok     string
		allows  []string
		refuses []string
	}{
		{tokA, []string{"test", "test_odd"}, []string{"split"}},
		{tokB, []string{"test_odd"}, []string{"test"}},
		{short, []string{"test_odd"}, []string{"test", "nosuch_biz"}}, // no row of nosuch_biz: no scope of it
	} {
		tok, err := set.AuthenticateToken([]byte(tt.tok))
		if err != nil {
			t.Fatalf("token %.8s…: %v", tt.tok, err)
		}
		for _, s := range tt.allows {
			if !tok.AllowsTickets(s) {
				t.Errorf("%s lacks tickets:%s", tok.Name, s)
			}
		}
		for _, s := range tt.refuses {
			if tok.AllowsTickets(s) {
				t.Errorf("%s holds tickets:%s", tok.Name, s)
			}
		}
	}
	if set.Token("ops") == nil || len(rep.Tokens) != 3 || !rep.Tokens[2].Short {
		t.Fatalf("tokens %+v, skipped %v", rep.Tokens, rep.Skipped)
	}
	for _, want := range []string{"biz type nosuch_biz has no row", "biz type Not%20A%20Name has no row"} {
		if !slices.ContainsFunc(rep.Skipped, func(s string) bool { return strings.Contains(s, want) }) {
			t.Errorf("the plan does not say %q: %q", want, rep.Skipped)
		}
	}
	sum := sha256.Sum256([]byte(tokA))
	if !strings.Contains(string(b), "tinyid-1 sha256:"+hex.EncodeToString(sum[:])) {
		t.Errorf("tokens file:\n%s", b)
	}

	// Run again: the same files, the same sequences.
	routesBefore, _ := os.ReadFile(routes)
	if _, err := Run(context.Background(), peers.TinyID, src, opt); err != nil {
		t.Fatal(err)
	}
	routesAfter, _ := os.ReadFile(routes)
	tokensAfter, _ := os.ReadFile(tokens)
	if string(routesAfter) != string(routesBefore) || string(tokensAfter) != string(b) {
		t.Fatalf("a run again changed the files:\n%s\n%s", routesAfter, tokensAfter)
	}

	// Residues that are neither one nor all: refused, nothing written.
	peer.Exec(t, `USE tinyid2; INSERT INTO tiny_id_info (biz_type, max_id, step, delta, remainder) VALUES ('test_odd', 7, 10, 2, 0), ('three', 1, 10, 3, 1);
USE tinyid1; INSERT INTO tiny_id_info (biz_type, max_id, step, delta, remainder) VALUES ('three', 1, 10, 3, 2);`)
	_, err = Run(context.Background(), peers.TinyID, src, opt)
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "three") {
		t.Fatalf("residues 1 and 2 of delta 3: %v, want refused naming three", err)
	}
	if after, _ := os.ReadFile(routes); string(after) != string(routesBefore) || starts(t, mp, "three")[0].Exists {
		t.Fatal("a refused import wrote something")
	}
}

// TestImportRefuses: a sequence of an imported key's name that exists
// without a start is refused (it may hand out what the peer did), and so
// are options that cannot be carried out.
func TestImportRefuses(t *testing.T) {
	peer := startPeer(t, "leaf")
	mp := mysqltest.StartPair(t)
	peer.Exec(t, "USE leaf; INSERT INTO leaf_alloc (biz_tag, max_id, step) VALUES ('orders', 5000, 1000);")
	if _, err := dba.CreateSequences(context.Background(), ticketsConfig(mp), []dba.NewSequence{{SequenceInfo: ticket.SequenceInfo{Name: "orders", Bits: 64, BlockSize: 1}}}, dba.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	routes := filepath.Join(t.TempDir(), "routes")
	opt := Options{Tickets: ticketsConfig(mp), RoutesFile: routes}
	_, err := Run(context.Background(), peers.Leaf, []Source{peer.source("leaf")}, opt)
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "made without a start") {
		t.Fatalf("%v: want refused, made without a start", err)
	}
	// Under a prefix, the key gets a sequence of its own.
	opt.Prefix = "leaf_"
	if _, err := Run(context.Background(), peers.Leaf, []Source{peer.source("leaf")}, opt); err != nil {
		t.Fatal(err)
	}
	if st := starts(t, mp, "leaf_orders")[0]; st.Start != 5000+peers.DefaultMarginSegments*512_000 {
		t.Fatalf("leaf_orders: %+v", st)
	}
	for _, bad := range []Options{
		{Tickets: opt.Tickets},
		{Tickets: opt.Tickets, RoutesFile: routes, Prefix: "Bad"},
		{Tickets: opt.Tickets, RoutesFile: routes, TokensFile: "x"},
		{Tickets: opt.Tickets, RoutesFile: routes, MarginSegments: -1},
		{Tickets: opt.Tickets, RoutesFile: routes, Cluster: "b"}, // tinyid's tokens'
	} {
		if _, err := Run(context.Background(), peers.Leaf, []Source{peer.source("leaf")}, bad); !errors.Is(err, ErrRefused) {
			t.Errorf("%+v: %v, want refused", bad, err)
		}
	}
	src := peer.source("leaf")
	src.Password = "wrong-password"
	if _, err := Run(context.Background(), peers.Leaf, []Source{src}, opt); err == nil || strings.Contains(err.Error(), "wrong-password") {
		t.Errorf("a wrong password: %v (must fail, and never quote it)", err)
	}
}

// TestGoingBack: docs/migrating.md's way back, its steps in the order the
// guide gives them. ticketd (a Pair here) hands out values, some held in
// memory, until the step that stops it; the step that reads N runs the
// import again with -dry-run (Served); the guide's statements, with N, move
// the peer's table. Then every value ticketd handed out is at or below N,
// and the next segment each peer takes begins above it. Between steps,
// ticketd still serving takes two blocks more: N read while it serves is
// passed.
func TestGoingBack(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "migrating.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := string(doc)
	if i := strings.Index(section, "\n## Going back\n"); i >= 0 {
		section = section[i+1:]
		if j := strings.Index(section, "\n## "); j >= 0 {
			section = section[:j]
		}
	} else {
		t.Fatal(`docs/migrating.md has no section "Going back"`)
	}
	var stmts []string
	for _, line := range strings.Split(section, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "UPDATE leaf_alloc SET max_id = GREATEST") || strings.HasPrefix(line, "UPDATE tiny_id_info SET max_id = GREATEST") {
			stmts = append(stmts, line)
		}
	}
	if len(stmts) != 2 {
		t.Fatalf("docs/migrating.md: %d statements of the way back, want Leaf's and tinyid's", len(stmts))
	}
	// The guide's steps, by where the section first says them.
	type step int
	const (
		stopServing step = iota // reload ticketd without the keys' routes and tokens
		readN                   // the import again with -dry-run
		update                  // the statements
	)
	at := map[step]int{stopServing: strings.Index(section, "reload"), readN: strings.Index(section, "-dry-run"), update: strings.Index(section, "UPDATE ")}
	says := map[step]string{stopServing: "reload", readN: "-dry-run", update: "UPDATE"}
	order := []step{stopServing, readN, update}
	for _, s := range order {
		if at[s] < 0 {
			t.Fatalf("docs/migrating.md, Going back: no step saying %s", says[s])
		}
	}
	slices.SortFunc(order, func(a, b step) int { return at[a] - at[b] })

	peer := startPeer(t, "leaf", "tinyid1")
	mp := mysqltest.StartPair(t)
	peer.Exec(t, `USE leaf; INSERT INTO leaf_alloc (biz_tag, max_id, step) VALUES ('leaf-segment-test', 2001, 2000);
USE tinyid1; INSERT INTO tiny_id_info (biz_type, max_id, step, delta, remainder) VALUES ('test', 100001, 100000, 1, 0);`)
	for k, p := range []peers.Peer{peers.Leaf, peers.TinyID} {
		db, key := []string{"leaf", "tinyid1"}[k], []string{"leaf-segment-test", "test"}[k]
		const block = 1000
		opt := Options{Tickets: ticketsConfig(mp), MarginSegments: 2, RoutesFile: filepath.Join(t.TempDir(), "routes"), Block: block}
		src := []Source{peer.source(db)}
		if _, err := Run(context.Background(), p, src, opt); err != nil {
			t.Fatal(err)
		}
		seq := peers.SequenceName("", key)
		d := startServing(t, mp, seq)
		d.take(t, block+block/2) // a block and a half: the Pair holds the rest
		var n uint64
		for _, s := range order {
			switch s {
			case stopServing:
				d.stop()
			case readN:
				opt.DryRun = true
				rep, err := Run(context.Background(), p, src, opt)
				if err != nil {
					t.Fatal(err)
				}
				n = rep.Items[0].Served
			case update:
				if n == 0 {
					t.Fatal("docs/migrating.md, Going back: the statements come before N is read")
				}
				stmt := regexp.MustCompile(`\bN\b`).ReplaceAllString(stmts[k], strconv.FormatUint(n, 10))
				peer.Exec(t, "USE "+db+"; "+stmt)
			}
			if d.pair != nil {
				d.take(t, 2*block) // ticketd serves on
			}
		}
		d.stop()
		if d.most > n {
			t.Fatalf("%s: ticketd handed out up to %d, above N = %d, which the peer begins above: the guide reads N (%s) while ticketd still serves (before %s)", seq, d.most, n, says[readN], says[stopServing])
		}
		// The peer's next fetch.
		var fetch, first string
		if p == peers.Leaf {
			fetch = "UPDATE leaf_alloc SET max_id = max_id + step WHERE biz_tag = 'leaf-segment-test'"
			first = "SELECT max_id - step FROM leaf_alloc WHERE biz_tag = 'leaf-segment-test'" // [max_id - step, max_id)
		} else {
			fetch = "UPDATE tiny_id_info SET max_id = max_id + step, version = version + 1 WHERE biz_type = 'test'"
			first = "SELECT max_id - step + 1 FROM tiny_id_info WHERE biz_type = 'test'" // (max_id - step, max_id]
		}
		got, err := strconv.ParseUint(strings.TrimSpace(peer.Query(t, "USE "+db+"; "+fetch+"; "+first)), 10, 64)
		if err != nil || got <= n {
			t.Fatalf("%s after the way back: the peer's next segment begins at %d (%v), not above %d", p, got, err, n)
		}
	}
}

// serving is ticketd handing out values of a sequence, as a Pair of the
// ticket servers that stays open (holding what it claimed) until stop.
type serving struct {
	pair *ticket.Pair
	name string
	most uint64 // the largest value handed out
}

func startServing(t *testing.T, mp *mysqltest.Pair, name string) *serving {
	t.Helper()
	cfg := ticketsConfig(mp)
	cfg.User, cfg.Password = mp.User, mp.Password
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pair, err := ticket.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := &serving{pair: pair, name: name}
	t.Cleanup(s.stop)
	return s
}

func (s *serving) take(t *testing.T, n int) []uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	vals := make([]uint64, n)
	if _, err := s.pair.NextN(ctx, s.name, vals); err != nil {
		t.Fatalf("values of %s: %v", s.name, err)
	}
	s.most = max(s.most, slices.Max(vals))
	return vals
}

func (s *serving) stop() {
	if s.pair != nil {
		s.pair.Close()
		s.pair = nil
	}
}

// TestImportKeepsRoutes: a run again under another -prefix would give a
// key already routed to a sequence a new one, beginning where the old one
// may already have handed out values (here it did: the same max_id gives
// the same start): refused, naming the key, its route and the way on,
// with nothing written; under the prefix that made the route, it runs.
func TestImportKeepsRoutes(t *testing.T) {
	peer := startPeer(t, "leaf")
	mp := mysqltest.StartPair(t)
	peer.Exec(t, "USE leaf; INSERT INTO leaf_alloc (biz_tag, max_id, step) VALUES ('orders', 5000, 1000), ('leaf-segment-test', 1, 10);")
	routes := filepath.Join(t.TempDir(), "routes")
	opt := Options{Tickets: ticketsConfig(mp), MarginSegments: 1, RoutesFile: routes}
	src := []Source{peer.source("leaf")}
	ctx := context.Background()
	if _, err := Run(ctx, peers.Leaf, src, opt); err != nil {
		t.Fatal(err)
	}
	vals := take(t, mp, "orders", 10)
	before, err := os.ReadFile(routes)
	if err != nil {
		t.Fatal(err)
	}

	for _, dry := range []bool{true, false} {
		opt.Prefix, opt.DryRun = "leaf_", dry
		rep, err := Run(ctx, peers.Leaf, src, opt)
		if !errors.Is(err, ErrRefused) {
			t.Fatalf("dry run %v: %v, want refused", dry, err)
		}
		for _, want := range []string{"leaf orders", "sequence orders", "leaf_orders", "-prefix", "leaf leaf-segment-test"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("dry run %v: %q does not say %q", dry, err, want)
			}
		}
		if len(rep.Problems) != 2 {
			t.Errorf("dry run %v: problems %q, want one per routed key", dry, rep.Problems)
		}
		after, _ := os.ReadFile(routes)
		if string(after) != string(before) || starts(t, mp, "leaf_orders")[0].Exists {
			t.Fatalf("dry run %v: a refused import wrote something:\n%s", dry, after)
		}
	}
	// The old sequence handed out values above the start leaf_orders would
	// have had: what the refusal prevents.
	if st := uint64(5000 + 1*512_000); vals[len(vals)-1] <= st {
		t.Fatalf("orders handed out %v, none above %d: the test shows nothing", vals, st)
	}

	opt.Prefix, opt.DryRun = "", false
	if _, err := Run(ctx, peers.Leaf, src, opt); err != nil {
		t.Fatalf("run again as before: %v", err)
	}
}
