package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"ticketd/ticket"
	"ticketd/ticket/dba/rewind"
)

// repairOptions is everything `ticketd repair` can be told, by flag or by
// TICKETD_REPAIR_* environment variable.
type repairOptions struct {
	adminOptions
	margin   uint64
	dryRun   bool
	restored string // -restored: server numbers, "all" or empty for every one
}

const repairUsage = `usage: ticketd repair [-servers A,B] [-user U] [-password-file F] [-restored N,…] [-margin N] [-dry-run] [-tls-ca F …]

Run it after a ticket server was restored from a backup, lost its data, or
was replaced by a replica that lagged. A server is taken for restored when
-restored names it, or when a counter of it is at or below its high-water
mark (kept on the OTHER servers). On a
restored server, every counter that has a mark and is short of the mark
plus a margin, a counter equal to its mark included, moves to the mark plus
the margin (ALTER TABLE … AUTO_INCREMENT, UPDATE counters), and lease rows
behind their copies are raised. On the other servers only counters at or
below their marks move. On every server, the marks it holds for the others
are raised to their counters (a restored server's went back with it).
Prints one line per change, or "nothing to repair".
Every server must be reachable. Safe to run at any time, with ticketd
running: counters and marks only move up (gaps, never repeats).

The account needs role ticketd_admin (schema.sql, "Accounts"); make db-up
creates ticketd_repair with its password in var/repair.password. The password
is never a flag: it comes from TICKETD_REPAIR_PASSWORD or -password-file.
Every flag can also be set by TICKETD_REPAIR_ and its name in upper case,
dashes as underscores (-dry-run → TICKETD_REPAIR_DRY_RUN).

`

func parseRepair(args []string, stderr io.Writer, getenv func(string) string) (repairOptions, error) {
	var o repairOptions
	fs := flag.NewFlagSet("repair", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, repairUsage)
		fs.PrintDefaults()
	}
	o.register(fs, adminDefaults{user: "ticketd_repair", userHelp: "database user with role ticketd_admin", passwordFile: "var/repair.password",
		passwordEnv: "TICKETD_REPAIR_PASSWORD", callTimeoutHelp: "deadline of one statement on one server"})
	fs.Uint64Var(&o.margin, "margin", 0, fmt.Sprintf("move a counter this far past its mark, at least %d; 0: %d for 64-bit tables, %d for 32-bit ones",
		ticket.DefaultMargin, ticket.DefaultMargin, ticket.DefaultMargin32))
	fs.BoolVar(&o.dryRun, "dry-run", false, "print what would change, change nothing")
	fs.StringVar(&o.restored, "restored", "", "servers restored from a backup (or replaced by a replica) since the last repair, by number in -servers (1,2), or all; those it finds restored itself (a counter below its mark) need not be named")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, errHelp
		}
		return o, errReported{2}
	}
	if fs.NArg() > 0 {
		return o, usagef("repair: unexpected argument %q", fs.Arg(0))
	}
	if err := applyEnvWith(fs, "TICKETD_REPAIR_", getenv); err != nil {
		return o, err
	}
	var err error
	o.password, err = adminPassword("repair", "TICKETD_REPAIR_PASSWORD", o.passwordFile, getenv)
	return o, err
}

// repairConfig turns options into the ticket package's Config, validated so a
// bad value is a usage error naming the flag.
func repairConfig(o repairOptions) (ticket.Config, error) {
	cfg := adminConfig(o.adminOptions)
	cfg.Margin = o.margin
	if o.margin != 0 && o.margin < ticket.DefaultMargin {
		// ticketd hands out tickets up to half its margin (the default: serve
		// has no flag for it) above their marks; a repair that moves a
		// counter less than twice that could leave it below one of them.
		return cfg, usagef("repair: -margin %d is below %d: ticketd hands out tickets up to %d above their marks (docs/backups.md, \"The bound: what a restore can lose\"), "+
			"so a restored server repaired with less could repeat them; give at least %d, or leave -margin out", o.margin, ticket.DefaultMargin, ticket.Config{}.LeadFor(64), ticket.DefaultMargin)
	}
	return cfg, validateAdmin(&cfg, o.tls, "repair: -servers/-database/-user/-margin/-call-timeout")
}

// parseRestored reads -restored: server numbers (1 is the first of
// -servers), comma-separated, or "all"; empty names none (repair then
// takes for restored only the servers it finds so). The mask has bit i for
// server i+1.
func parseRestored(v string, servers int) (uint64, error) {
	v = strings.TrimSpace(v)
	switch v {
	case "":
		return 0, nil
	case "all":
		return rewind.AllServers, nil
	}
	var mask uint64
	for _, f := range strings.Split(v, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || k < 1 || k > servers {
			return 0, usagef("repair: -restored %q: want server numbers from 1 to %d (their place in -servers), comma-separated, or all", v, servers)
		}
		mask |= 1 << (k - 1)
	}
	return mask, nil
}

func runRepair(args []string, stdout, stderr io.Writer) error {
	o, err := parseRepair(args, stderr, os.Getenv)
	if err == errHelp {
		return nil
	}
	if err != nil {
		return err
	}
	cfg, err := repairConfig(o)
	if err != nil {
		return err
	}
	restored, err := parseRestored(o.restored, len(cfg.Servers))
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return repair(ctx, cfg, rewind.Options{DryRun: o.dryRun, Restored: restored}, stdout, stderr)
}

// repair runs rewind.RepairWith and reports: one line per change on stdout
// (what was changed is printed even when something else failed), notes on
// stderr.
func repair(ctx context.Context, cfg ticket.Config, o rewind.Options, stdout, stderr io.Writer) error {
	rep, err := rewind.RepairWith(ctx, cfg, o)
	changed := false
	for i, why := range rep.Restored {
		if why != "" {
			fmt.Fprintf(stdout, "server %d (%s): taken for restored: %s\n", i+1, cfg.Servers[i].Addr, why)
		}
	}
	for _, c := range rep.Changes {
		switch {
		case o.DryRun:
			fmt.Fprintf(stdout, "%s (dry run: not changed)\n", c)
		case c.Applied:
			fmt.Fprintln(stdout, c)
		}
		changed = true
	}
	for i, n := range rep.MarksRaised {
		if n == 0 {
			continue
		}
		line := fmt.Sprintf("server %d (%s): %d high-water marks it holds for the other servers raised to their counters", i+1, cfg.Servers[i].Addr, n)
		if o.DryRun {
			line += " (dry run: not changed)"
		}
		fmt.Fprintln(stdout, line)
		changed = true
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(stderr, "ticketd repair: note: %s\n", n)
	}
	if err != nil {
		return fmt.Errorf("repair: %w", err)
	}
	if !changed {
		fmt.Fprintln(stdout, "nothing to repair")
	}
	return nil
}
