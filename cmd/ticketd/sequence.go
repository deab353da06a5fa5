package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"

	"ticketd/ticket"
	"ticketd/ticket/dba"
)

// sequenceOptions is everything `ticketd sequence create|list|check` can be
// told, by flag or by TICKETD_SEQUENCE_* environment variable.
type sequenceOptions struct {
	cmd string // create, adopt, list, check
	adminOptions

	// create
	names []string
	file  string
	bits  int
	block uint64
	start uint64
	// public: values are a keyed permutation of the counter's (the key the
	// deployment records)
	public bool
	// besideTables: create even beside a table of Flickr's shape of a name like it
	besideTables bool
	// adopt
	table string
	// list, check
	name, prefix string
	limit        int
}

const sequenceUsage = `usage: ticketd sequence create NAME... [-bits 64|32] [-block B] [-start N] [-public] [flags]
       ticketd sequence create -file F [-bits 64|32] [-block B] [-start N] [-public] [flags]
       ticketd sequence adopt NAME -table T [flags]
       ticketd sequence list [-name N | -prefix P] [-limit L] [flags]
       ticketd sequence check [-name N | -prefix P] [flags]

Named sequences, on both ticket servers at once (docs/named-sequences.md, "Adding a named
sequence").

  create  defines each sequence on every server: its row of counters (the
          server's start and step), its catalog row and its pin, in one
          transaction per thousand. Safe to repeat; a create that did not
          reach every server (one was down) is completed by running it again.
          Refuses, creating nothing, when a name exists otherwise anywhere
          (exit 2). -start N: every value the sequence ever hands out, on
          every server, is above N (moving from Leaf, tinyid or a table's
          AUTO_INCREMENT: docs/dba.md gives the query for N); refused for a
          sequence that exists with another start or none.
          A new name like that of a table of Flickr's shape on the pair
          (photos, TicketsPhotos) is refused, naming the table and sequence
          adopt, unless -beside-tables.
          -public: ticketd hands out a keyed permutation of the counter's
          values over the sequence's range (63 or 32 bits; with -start N,
          over the values above N alone, at least 1,000,000 of them):
          unique, but saying nothing of how many came before, nor of their
          order (docs/named-sequences.md, "Public sequences"). Under the key the
          deployment records (the first ticketd started with -id-key-file
          records its check value; no key is given here); for good. Only
          once the upgrade is finalized (older ticketd would hand out other
          values).
          -file F: one sequence per line, "NAME [BITS [BLOCK [START]]]
          [public|plain]" (missing fields: -bits, -block, -start and
          -public), '#' starts a comment.
  adopt   serves an existing table of Flickr's shape (an AUTO_INCREMENT id,
          a unique stub: TicketsPhotos) as sequence NAME, beside the
          applications that use it (docs/dba.md, "Adopting a running pair"):
          checks the table on every server (its shape, its rows of the
          server's parity), then grants ticketd what it needs on it and
          writes the catalog row and the pin. Safe to repeat. Every server
          must answer; the account must be able to grant (the DBA's, -user).
          A table not named Tickets64, Tickets32 or seq_* only once the
          upgrade is finalized (ticketd upgrade finalize).
  list    every sequence, in name order: its definition, each server's
          counter (a row's value: the last ticket it handed out), the
          values left on the fuller server, and the values it can still
          hand out on all servers together (TOTAL LEFT).
  check   compares the servers: catalog rows missing or different, rows
          redefined since ticketd served them, rows of counters missing or
          rewound. Prints each difference; exits 1 if there is one.

The account needs role ticketd_sequences (schema.sql, "Accounts"): SELECT on
the schema and INSERT into sequences, counters and sequence_pins, nothing
else. make db-up creates ticketd_seq with its password in
var/sequences.password. The password is never a flag: it comes from
TICKETD_SEQUENCE_PASSWORD or -password-file. Every flag can also be set by
TICKETD_SEQUENCE_ and its name in upper case, dashes as underscores.

`

func parseSequence(args []string, stderr io.Writer, getenv func(string) string) (sequenceOptions, error) {
	var o sequenceOptions
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
			fmt.Fprint(stderr, sequenceUsage)
			return o, errHelp
		}
		fmt.Fprint(stderr, sequenceUsage)
		return o, usagef("sequence: want create, adopt, list or check")
	}
	o.cmd, args = args[0], args[1:]
	fs := flag.NewFlagSet("sequence "+o.cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, sequenceUsage)
		fs.PrintDefaults()
	}
	o.register(fs, adminDefaults{user: "ticketd_seq", userHelp: "database user with role ticketd_sequences", passwordFile: "var/sequences.password",
		passwordEnv: "TICKETD_SEQUENCE_PASSWORD", callTimeoutHelp: "how long to wait for a server to answer (a page or a batch gets 10 times as long, at least 30s)"})
	switch o.cmd {
	case "create":
		fs.StringVar(&o.file, "file", "", `file of sequences to create, one per line: "NAME [BITS [BLOCK [START]]] [public|plain]"`)
		fs.IntVar(&o.bits, "bits", 64, "width of the values: 64 (up to 2^63-1) or 32 (up to 2^32-1)")
		fs.Uint64Var(&o.block, "block", 1, "block size B: each ticket stands for B values served from ticketd's memory (1: one round trip per value)")
		fs.Uint64Var(&o.start, "start", 0, "every value handed out is above N, on every server (0: none): where the numbers the sequence replaces ended")
		fs.BoolVar(&o.public, "public", false, "public sequence: ticketd hands out a keyed permutation of the counter's values, under the key the deployment records (ticketd serve -id-key-file); for good")
		fs.BoolVar(&o.besideTables, "beside-tables", false, "create a name even where a table of Flickr's shape has a name like it (photos, TicketsPhotos), beside it: its numbers are not continued (sequence adopt does)")
	case "adopt":
		fs.StringVar(&o.table, "table", "", "the table of Flickr's shape to serve as the sequence (in -database), on every server")
	case "list", "check":
		fs.StringVar(&o.name, "name", "", "only this sequence")
		fs.StringVar(&o.prefix, "prefix", "", "only the sequences whose name starts with this")
		if o.cmd == "list" {
			fs.IntVar(&o.limit, "limit", 0, "at most this many (0: all)")
		}
	default:
		fmt.Fprint(stderr, sequenceUsage)
		return o, usagef("sequence: unknown command %q: want create, adopt, list or check", o.cmd)
	}
	// Names may come before, between or after the flags.
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return o, errHelp
			}
			return o, errReported{2}
		}
		if fs.NArg() == 0 {
			break
		}
		o.names = append(o.names, fs.Arg(0))
		args = fs.Args()[1:]
	}
	switch {
	case o.cmd == "adopt" && (len(o.names) != 1 || o.table == ""):
		return o, usagef("sequence adopt: want one NAME and -table T")
	case o.cmd != "create" && o.cmd != "adopt" && len(o.names) > 0:
		return o, usagef("sequence %s: unexpected argument %q (use -name)", o.cmd, o.names[0])
	}
	if err := applyEnvWith(fs, "TICKETD_SEQUENCE_", getenv); err != nil {
		return o, err
	}
	if o.cmd == "create" && len(o.names) == 0 && o.file == "" {
		return o, usagef("sequence create: name a sequence, or give -file")
	}
	if o.name != "" && o.prefix != "" {
		return o, usagef("sequence %s: -name and -prefix exclude each other", o.cmd)
	}
	if o.limit < 0 {
		return o, usagef("sequence list: -limit %d: want 0 or more", o.limit)
	}
	var err error
	o.password, err = adminPassword("sequence", "TICKETD_SEQUENCE_PASSWORD", o.passwordFile, getenv)
	return o, err
}

// sequenceConfig turns options into the ticket package's Config, validated
// so a bad value is a usage error naming the flag.
func sequenceConfig(o sequenceOptions) (ticket.Config, error) {
	cfg := adminConfig(o.adminOptions)
	return cfg, validateAdmin(&cfg, o.tls, "sequence: -servers/-database/-user/-call-timeout")
}

// sequenceDefs is what create is asked for: the names on the command line
// and the lines of -file, each checked, so that a bad one is a usage error
// before anything is written.
func sequenceDefs(o sequenceOptions, open func(string) (io.ReadCloser, error)) ([]dba.NewSequence, error) {
	var defs []dba.NewSequence
	for _, n := range o.names {
		defs = append(defs, dba.NewSequence{SequenceInfo: ticket.SequenceInfo{Name: n, Bits: o.bits, BlockSize: o.block}, Start: o.start, Public: o.public})
	}
	if o.file != "" {
		f, err := open(o.file)
		if err != nil {
			return nil, usagef("sequence create: -file: %v", err)
		}
		defer f.Close()
		more, err := parseDefs(f, o.file, o.bits, o.block, o.start, o.public)
		if err != nil {
			return nil, err
		}
		defs = append(defs, more...)
	}
	for _, d := range defs {
		if err := ticket.CheckSequenceInfo(d.SequenceInfo); err != nil {
			return nil, usagef("sequence create: %v", err)
		}
	}
	if len(defs) == 0 {
		return nil, usagef("sequence create: %s holds no sequence", o.file)
	}
	return defs, nil
}

// parseDefs reads a file of definitions: one per line, "NAME [BITS [BLOCK
// [START]]] [public|plain]", fields separated by blanks; '#' starts a
// comment. The last word, when it is public or plain, says whether the
// sequence is public (otherwise public says). A bad line is a usage error
// naming the file and the line.
func parseDefs(r io.Reader, path string, bits int, block, start uint64, public bool) ([]dba.NewSequence, error) {
	var defs []dba.NewSequence
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 4096)
	for line := 1; sc.Scan(); line++ {
		text, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(text)
		if len(f) == 0 {
			continue
		}
		d := dba.NewSequence{SequenceInfo: ticket.SequenceInfo{Name: f[0], Bits: bits, BlockSize: block}, Start: start, Public: public}
		bad := func(format string, args ...any) error {
			return usagef("sequence create: %s:%d: %s", path, line, fmt.Sprintf(format, args...))
		}
		if last := f[len(f)-1]; len(f) > 1 && (last == "public" || last == "plain") {
			d.Public, f = last == "public", f[:len(f)-1]
		}
		switch {
		case len(f) > 4:
			return nil, bad("%d fields, want NAME [BITS [BLOCK [START]]] [public|plain]", len(f))
		case len(f) >= 2:
			b, err := strconv.Atoi(f[1])
			if err != nil {
				return nil, bad("bits %.20q: want 64 or 32", f[1])
			}
			d.Bits = b
		}
		if len(f) >= 3 {
			b, err := strconv.ParseUint(f[2], 10, 64)
			if err != nil {
				return nil, bad("block %.20q: want a positive number", f[2])
			}
			d.BlockSize = b
		}
		if len(f) == 4 {
			n, err := strconv.ParseUint(f[3], 10, 64)
			if err != nil {
				return nil, bad("start %.24q: want a number from 0 to %d", f[3], uint64(math.MaxUint64))
			}
			d.Start = n
		}
		if err := ticket.CheckSequenceInfo(d.SequenceInfo); err != nil {
			return nil, bad("%v", err)
		}
		defs = append(defs, d)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, usagef("sequence create: %s: a line longer than 4096 bytes", path)
		}
		return nil, usagef("sequence create: %s: %v", path, err)
	}
	return defs, nil
}

func runSequence(args []string, stdout, stderr io.Writer) error {
	o, err := parseSequence(args, stderr, os.Getenv)
	if err == errHelp {
		return nil
	}
	if err != nil {
		return err
	}
	cfg, err := sequenceConfig(o)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch o.cmd {
	case "create":
		defs, err := sequenceDefs(o, func(p string) (io.ReadCloser, error) { return os.Open(p) })
		if err != nil {
			return err
		}
		return createSequences(ctx, cfg, defs, dba.CreateOptions{BesideTables: o.besideTables}, stdout)
	case "adopt":
		return adoptTable(ctx, cfg, o.names[0], o.table, stdout)
	case "list":
		return listSequences(ctx, cfg, dba.ListOptions{Name: o.name, Prefix: o.prefix, Limit: o.limit}, stdout, stderr)
	default:
		return checkSequences(ctx, cfg, dba.ListOptions{Name: o.name, Prefix: o.prefix}, stdout)
	}
}

// createSequences runs dba.CreateSequences and says, per server, what it
// did (also when it failed part of the way). A create refused before
// anything was written is bad input: exit 2.
func createSequences(ctx context.Context, cfg ticket.Config, defs []dba.NewSequence, opt dba.CreateOptions, stdout io.Writer) error {
	rep, err := dba.CreateSequences(ctx, cfg, defs, opt)
	for _, s := range rep.Servers {
		if (s.Err == nil && err == nil) || s.Created+s.Existing > 0 {
			fmt.Fprintf(stdout, "%s: %d created, %d already there\n", s.Name, s.Created, s.Existing)
		}
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(stdout, "note: %s\n", n)
	}
	return adminErr("sequence create", err)
}

// adoptTable runs dba.AdoptTable and says what it did on each server.
func adoptTable(ctx context.Context, cfg ticket.Config, name, table string, stdout io.Writer) error {
	rep, err := dba.AdoptTable(ctx, cfg, name, table)
	if err != nil {
		return adminErr("sequence adopt", err)
	}
	for _, s := range rep.Servers {
		did := "adopted"
		if !s.Adopted {
			did = "already there"
		}
		fmt.Fprintf(stdout, "%s: %s: table %s served as %s (%d bits; its counter at %d)\n", s.Name, did, table, name, rep.Sequence.Bits, s.Counter)
	}
	return nil
}

// listSequences prints one line per sequence, aligned a page at a time.
func listSequences(ctx context.Context, cfg ticket.Config, opt dba.ListOptions, stdout, stderr io.Writer) error {
	n := len(cfg.Servers)
	tw := tabwriter.NewWriter(stdout, 0, 8, 2, ' ', 0)
	header := "NAME\tBITS\tBLOCK\tSTORAGE\tPUBLIC"
	for i := range n {
		header += fmt.Sprintf("\tCOUNTER%d", i+1)
	}
	fmt.Fprintln(tw, header+"\tLEFT\tLEFT%\tTOTAL LEFT\tNOTE")
	rows := 0
	down, err := dba.ListSequences(ctx, cfg, opt, func(l dba.SequenceListing) error {
		fmt.Fprintln(tw, listLine(l))
		if rows++; rows%1000 == 0 {
			return tw.Flush()
		}
		return nil
	})
	if ferr := tw.Flush(); err == nil {
		err = ferr
	}
	for i, d := range down {
		if d != nil {
			fmt.Fprintf(stderr, "ticketd sequence list: column COUNTER%d shows -: %v\n", i+1, d)
		}
	}
	if err != nil {
		return fmt.Errorf("sequence list: %w", err)
	}
	return nil
}

func listLine(l dba.SequenceListing) string {
	var def ticket.SequenceInfo
	for _, d := range l.Defs {
		if d.Bits != 0 {
			def = d
			break
		}
	}
	notes := l.Notes
	storage := "counters"
	if def.Table != "" {
		storage = "table " + def.Table
	}
	// A public sequence shows the check value of its key, never the key,
	// and the start its permutation begins above.
	public := "-"
	switch {
	case def.Public() && def.Above != 0:
		public = fmt.Sprintf("key %s above %d", def.KeyCheck, def.Above)
	case def.Public():
		public = "key " + def.KeyCheck
	}
	line := fmt.Sprintf("%s\t%d\t%d\t%s\t%s", l.Name, def.Bits, def.BlockSize, storage, public)
	if def.Bits == 0 {
		line = l.Name + "\t-\t-\t-\t-"
		if !slices.Contains(notes, "no catalog row") {
			notes = append(notes, "no catalog row")
		}
	}
	for i := range l.Counters {
		if l.Known[i] {
			line += "\t" + strconv.FormatUint(l.Counters[i], 10)
		} else {
			line += "\t-"
		}
	}
	total := strconv.FormatUint(l.Total, 10)
	if l.Total == math.MaxUint64 {
		total = "more than " + total
	}
	return line + fmt.Sprintf("\t%d\t%.1f%%\t%s\t%s", l.Left, 100*l.LeftShare, total, strings.Join(notes, "; "))
}

// checkSequences prints each difference and exits non-zero if there is one.
func checkSequences(ctx context.Context, cfg ticket.Config, opt dba.ListOptions, stdout io.Writer) error {
	found := 0
	checked, err := dba.CheckSequences(ctx, cfg, opt, func(d dba.Difference) error {
		found++
		fmt.Fprintln(stdout, d)
		return nil
	})
	if err != nil {
		return fmt.Errorf("sequence check: %w", err)
	}
	if found > 0 {
		fmt.Fprintf(stdout, "%s checked, %s\n", count(checked, "sequence", "sequences"), count(found, "difference", "differences"))
		return errReported{1}
	}
	fmt.Fprintf(stdout, "ok: %s checked, the servers agree\n", count(checked, "sequence", "sequences"))
	return nil
}
