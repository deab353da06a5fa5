package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"ticketd/ticket/dba/paircheck"
)

// pairOptions is everything `ticketd pair check` can be told, by flag or by
// TICKETD_PAIR_* environment variable.
type pairOptions struct {
	cmd string // check
	adminOptions
}

const pairUsage = `usage: ticketd pair check [-servers A,B] [-database D] [-user U] [-password-file F] [-tls-ca F …]

Reads a live pair of ticket servers (read-only) and lists, in the order to
apply them, what differs from what ticketd needs: the auto_increment
settings, the lock mode, durability and the binary log, the database, its
schema and its tables' character sets, the roles' grants (on every table
the catalog serves too) and the accounts that hold them; each with the
statement or option line that fixes it, and whether that needs a restart
(docs/dba.md, "Adopting a running pair"). What differs but harms nothing
(the time zone, the server's character set, tables that could be adopted)
is a note. Exit 0 when ticketd can serve the pair without harming anyone
else on it; 1 otherwise, with a line per problem.

The account: the DBA's own reads everything (the accounts and every role's
grants need SELECT on mysql.*); with another (ticketd_repair, the default,
which make db-up creates), what it may not read is a note. The password is
never a flag: it comes from TICKETD_PAIR_PASSWORD or -password-file. Every
flag can also be set by TICKETD_PAIR_ and its name in upper case, dashes as
underscores.

`

// pairCommand is `ticketd pair check`.
var pairCommand = adminCommand{name: "pair", subs: []string{"check"}, usage: pairUsage,
	defaults: adminDefaults{user: "ticketd_repair", userHelp: "database user: the DBA's own reads everything; with another, what it may not read is a note",
		passwordFile: "var/repair.password", passwordEnv: "TICKETD_PAIR_PASSWORD", callTimeoutHelp: "deadline of one statement on one server"}}

func parsePair(args []string, stderr io.Writer, getenv func(string) string) (pairOptions, error) {
	var o pairOptions
	var err error
	o.cmd, err = pairCommand.parse(args, stderr, getenv, &o.adminOptions)
	return o, err
}

func runPair(args []string, stdout, stderr io.Writer) error {
	o, err := parsePair(args, stderr, os.Getenv)
	if err == errHelp {
		return nil
	}
	if err != nil {
		return err
	}
	cfg := adminConfig(o.adminOptions)
	if err := validateAdmin(&cfg, o.tls, "pair: -servers/-database/-user/-call-timeout"); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := paircheck.CheckPair(ctx, cfg)
	if err != nil {
		return fmt.Errorf("pair check: %w", err)
	}
	printPair(stdout, rep, cfg.Database)
	if len(rep.Problems) > 0 {
		return errReported{1}
	}
	return nil
}

// printPair prints the problems in the order to fix them, then the notes.
func printPair(w io.Writer, rep paircheck.PairReport, database string) {
	where := func(servers []int) string {
		if len(servers) == len(rep.Servers) && len(servers) > 1 {
			return "every server"
		}
		var names []string
		for _, s := range servers {
			names = append(names, rep.Servers[s-1])
		}
		return strings.Join(names, ", ")
	}
	fmt.Fprintf(w, "pair check of %s, database %s\n", strings.Join(rep.Servers, ", "), database)
	if len(rep.Problems) == 0 {
		fmt.Fprintln(w, "ok: ticketd can serve this pair; nothing on it needs changing for ticketd")
	} else {
		fmt.Fprintf(w, "%s, in the order to fix them:\n", count(len(rep.Problems), "problem", "problems"))
	}
	for k, p := range rep.Problems {
		how := "fix, no restart"
		if p.Restart {
			how = "fix, with a restart of each server, one at a time"
		}
		fmt.Fprintf(w, "%d. %s: %s\n   %s: %s\n", k+1, where(p.Servers), p.What, how, p.Fix)
	}
	if len(rep.Notes) > 0 {
		fmt.Fprintln(w, "notes (nothing ticketd needs changed):")
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "- %s: %s\n", where(n.Servers), n.What)
	}
}
