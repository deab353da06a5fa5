package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"ticketd/peers"
	"ticketd/peers/importer"
)

// importOptions is everything `ticketd import leaf|tinyid` can be told, by
// flag or by TICKETD_IMPORT_* environment variable.
type importOptions struct {
	peer peers.Peer
	adminOptions
	from, fromDatabase, fromUser, fromPasswordFile string
	fromPassword                                   string // TICKETD_IMPORT_FROM_PASSWORD or the file; never a flag
	routesFile, tokensFile, cluster                string
	leafWorkers                                    string
	prefix                                         string
	marginSegments                                 int
	block                                          uint64
	dryRun                                         bool
}

const importUsage = `usage: ticketd import leaf|tinyid -from HOST:PORT -from-database DB -from-user USER -routes-file F [flags]

Moves Leaf's or tinyid's keys onto the ticket servers, so that their callers
take IDs from ticketd by changing a URL (docs/migrating.md):

  leaf    reads leaf_alloc from Leaf's database
  tinyid  reads tiny_id_info and tiny_id_token from each of tinyid's
          databases (-from a,b with -from-database db1,db2)

For each key, a sequence on every ticket server (ticketd sequence create),
named after the key, beginning above its max_id plus -margin-segments of the
peer's largest fetches (what the peer's running servers may still take:
Leaf's step grows up to 1,000,000, tinyid's is the table's); its route in
-routes-file (ticketd serve -peer-routes), with tinyid's delta and
remainder; and for tinyid, each token's SHA-256 in -tokens-file with the
tickets:NAME scopes of its biz types' sequences (never the token itself; a
biz type this import does not make or route gets no scope, said in the
plan).

A second tinyid cluster imported into the same tokens file takes -cluster
NAME: each run replaces the lines of its own cluster alone, and one that
would take out another cluster's lines is refused.

Safe to run again: a key whose sequence exists keeps its start, and the
import checks the peer is still below it (exit 1 if not). Run it once more
after the peer is stopped: that says the margin held. -dry-run prints the
plan and writes nothing. A plan that cannot be carried out as asked writes
nothing (exit 2).

The ticket servers' account needs role ticketd_sequences (as ticketd
sequence create); its password comes from TICKETD_IMPORT_PASSWORD or
-password-file. The peer's account needs SELECT on its tables; its password
comes from TICKETD_IMPORT_FROM_PASSWORD or -from-password-file. Neither is
ever a flag. Every flag can also be set by TICKETD_IMPORT_ and its name in
upper case, dashes as underscores.

`

var importCommand = adminCommand{
	name: "import", subs: []string{"leaf", "tinyid"}, usage: importUsage,
	defaults: adminDefaults{user: "ticketd_seq", userHelp: "ticket servers' account, with role ticketd_sequences", passwordFile: "var/sequences.password",
		passwordEnv: "TICKETD_IMPORT_PASSWORD", callTimeoutHelp: "how long to wait for a ticket server to answer (a batch gets 10 times as long, at least 30s)"},
}

func parseImport(args []string, stderr io.Writer, getenv func(string) string) (importOptions, error) {
	var o importOptions
	cmd := importCommand
	cmd.flags = func(sub string, fs *flag.FlagSet) {
		fs.StringVar(&o.from, "from", "", "the peer's MySQL, HOST:PORT; tinyid: each of its databases, comma-separated")
		fs.StringVar(&o.fromDatabase, "from-database", "", "the peer's schema (Leaf's leaf_alloc, tinyid's tiny_id_info); tinyid: one per -from, comma-separated, or one for all")
		fs.StringVar(&o.fromUser, "from-user", "", "the peer's account: SELECT on its tables is enough")
		fs.StringVar(&o.fromPasswordFile, "from-password-file", "", "file holding the peer's account's password (ignored when TICKETD_IMPORT_FROM_PASSWORD is set)")
		fs.StringVar(&o.routesFile, "routes-file", "", "the routes file to write, the one ticketd serve -peer-routes reads; its routes are kept")
		fs.StringVar(&o.prefix, "prefix", "", "begin every sequence's name with this (to import Leaf's and tinyid's keys where they share names)")
		fs.IntVar(&o.marginSegments, "margin-segments", peers.DefaultMarginSegments, "how many of the peer's largest fetches lie between a key's max_id and its sequence's start: more than the peer's running servers and clients may take before the last caller has moved")
		fs.Uint64Var(&o.block, "block", 0, "block size of every new sequence (0: the key's step)")
		fs.BoolVar(&o.dryRun, "dry-run", false, "print what would be done; write nothing")
		if sub == "tinyid" {
			fs.StringVar(&o.tokensFile, "tokens-file", "", "the tokens file to write, the one ticketd serve -tokens-file reads: a line per tinyid token (its SHA-256, never the token); its other lines are kept; empty: tokens not imported")
			fs.StringVar(&o.cluster, "cluster", "", "names the tinyid cluster these databases are, for -tokens-file: its lines are tinyid-NAME-ID, end \"# ticketd import tinyid -cluster NAME\", and a run replaces only its own cluster's (empty: the lines without a name, as release 4 wrote them)")
		} else {
			fs.StringVar(&o.leafWorkers, "leaf-workers", "", "Leaf's snowflake worker IDs in ZooKeeper (0-63,100), or none, for the routes file's leaf-workers line: ticketd serves /api/snowflake/get/{key} only once it is there")
		}
	}
	sub, err := cmd.parse(args, stderr, getenv, &o.adminOptions)
	if err != nil {
		return o, err
	}
	o.peer, _ = peers.ParsePeer(sub)
	switch {
	case o.from == "" || o.fromDatabase == "" || o.fromUser == "":
		return o, usagef("import %s: -from, -from-database and -from-user say where the peer's tables are", sub)
	case o.routesFile == "":
		return o, usagef("import %s: -routes-file names the routes file to write (ticketd serve -peer-routes)", sub)
	}
	if o.fromPassword = getenv("TICKETD_IMPORT_FROM_PASSWORD"); o.fromPassword == "" {
		if o.fromPasswordFile == "" {
			return o, usagef("import %s: no password for the peer's account: set TICKETD_IMPORT_FROM_PASSWORD or -from-password-file", sub)
		}
		if o.fromPassword, err = readSecret(o.fromPasswordFile); err != nil {
			return o, usagef("import %s: -from-password-file: %v", sub, err)
		}
	}
	return o, nil
}

// sources are the peer's databases the options name.
func (o importOptions) sources() ([]importer.Source, error) {
	addrs := strings.Split(o.from, ",")
	dbs := strings.Split(o.fromDatabase, ",")
	if len(dbs) != 1 && len(dbs) != len(addrs) {
		return nil, usagef("import: -from names %d databases and -from-database %d: give one schema, or one per database", len(addrs), len(dbs))
	}
	var out []importer.Source
	for k, a := range addrs {
		db := dbs[0]
		if len(dbs) > 1 {
			db = dbs[k]
		}
		out = append(out, importer.Source{Addr: strings.TrimSpace(a), User: o.fromUser, Password: o.fromPassword, Database: strings.TrimSpace(db)})
	}
	return out, nil
}

func runImport(args []string, stdout, stderr io.Writer) error {
	o, err := parseImport(args, stderr, os.Getenv)
	if err == errHelp {
		return nil
	}
	if err != nil {
		return err
	}
	cfg := adminConfig(o.adminOptions)
	if err := validateAdmin(&cfg, o.tls, "import: -servers/-database/-user/-call-timeout"); err != nil {
		return err
	}
	sources, err := o.sources()
	if err != nil {
		return err
	}
	opt := importer.Options{Tickets: cfg, Prefix: o.prefix, MarginSegments: o.marginSegments, Block: o.block,
		RoutesFile: o.routesFile, TokensFile: o.tokensFile, Cluster: o.cluster, DryRun: o.dryRun}
	if o.marginSegments < 1 {
		return usagef("import: -margin-segments %d: want 1 to %d", o.marginSegments, peers.MaxMarginSegments)
	}
	if o.leafWorkers != "" {
		w, err := peers.ParseLeafWorkers(o.leafWorkers)
		if err != nil {
			return usagef("import leaf: -leaf-workers: %v", err)
		}
		opt.LeafWorkers = &w
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := importer.Run(ctx, o.peer, sources, opt)
	printImport(stdout, o.peer, rep, o.dryRun)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, importer.ErrRefused):
		return usageError{fmt.Errorf("import %s: %w", o.peer, err)}
	default:
		return fmt.Errorf("import %s: %w", o.peer, err)
	}
}

// printImport says what the import did, or would do: one line per key, the
// keys left out, the servers, the files.
func printImport(w io.Writer, p peers.Peer, rep importer.Report, dry bool) {
	would := func(did, will string) string {
		if dry {
			return will
		}
		return did
	}
	for _, it := range rep.Items {
		verb := would("created", "would create")
		if it.Exists {
			verb = would("kept", "would keep")
		}
		values, fetches := it.Room()
		line := fmt.Sprintf("%s %s: %s sequence %s (block %d), every value above %d: max_id %d, step %d (a fetch moves it by up to %d), %d values (%d fetches) of room above max_id",
			p, peers.Escape(it.Key), verb, it.Sequence, it.Block, it.Start, it.MaxID, it.Step, it.Largest, values, fetches)
		if p == peers.TinyID {
			line += fmt.Sprintf("; segments of %d, delta %d, remainder %d", it.Route.Segment, it.Route.Delta, it.Route.Remainder)
		}
		if it.Served > 0 {
			line += fmt.Sprintf("; it handed out up to %d", it.Served)
		}
		fmt.Fprintln(w, line)
	}
	for _, t := range rep.Tokens {
		line := fmt.Sprintf("token %s: %s %s", t.Name, would("written", "would be written"), strings.Join(t.Scopes, ","))
		if t.Short {
			line += " (a token shorter than 32 characters: replace it when its callers can move to a new one)"
		}
		fmt.Fprintln(w, line)
	}
	if rep.TokenLines != nil {
		fmt.Fprintln(w, tokenLines(rep.Plan, would))
	}
	for _, s := range rep.Skipped {
		fmt.Fprintln(w, "left out: "+s)
	}
	for _, s := range rep.Problems {
		fmt.Fprintln(w, "refused: "+s)
	}
	for _, s := range rep.Passed {
		fmt.Fprintln(w, "PASSED: "+s)
	}
	for _, s := range rep.Created.Servers {
		if s.Created+s.Existing > 0 || s.Err != nil {
			fmt.Fprintf(w, "%s: %d created, %d already there\n", s.Name, s.Created, s.Existing)
		}
	}
	if rep.RoutesWritten != "" {
		fmt.Fprintf(w, "routes: %s (send ticketd serve SIGHUP to read it)\n", rep.RoutesWritten)
	}
	if rep.TokensWritten != "" {
		fmt.Fprintf(w, "tokens: %s (send ticketd serve SIGHUP to read it)\n", rep.TokensWritten)
	}
}

// tokenLines says what the tokens file gets of this run's tinyid cluster and
// keeps of the others', each by the comment that ends its lines.
func tokenLines(pl importer.Plan, would func(did, will string) string) string {
	lines := func(n int, cluster string) string {
		s := "s"
		if n == 1 {
			s = ""
		}
		return fmt.Sprintf("%d line%s ending %q", n, s, importer.ClusterMark(cluster))
	}
	line := "tokens file: " + lines(len(pl.Tokens), pl.Cluster)
	if n := pl.TokenLines[pl.Cluster]; n > 0 {
		line += fmt.Sprintf(", %s the %d it had", would("replacing", "which would replace"), n)
	}
	var kept []string
	for _, c := range slices.Sorted(maps.Keys(pl.TokenLines)) {
		if c != pl.Cluster {
			kept = append(kept, lines(pl.TokenLines[c], c))
		}
	}
	if len(kept) > 0 {
		line += fmt.Sprintf("; %s: %s", would("kept", "would keep"), strings.Join(kept, ", "))
	}
	return line
}
