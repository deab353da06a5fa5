package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"ticketd/ticket"
	"ticketd/ticket/dba/rewind"
)

// repairOptions is everything `ticketd repair` can be told, by flag or by
// TICKETD_REPAIR_* environment variable.
type repairOptions struct {
	adminOptions
	margin uint64
	dryRun bool
}

const repairUsage = `usage: ticketd repair [-servers A,B] [-user U] [-password-file F] [-margin N] [-dry-run] [-tls-ca F …]

After a ticket server was restored from a backup (or lost its data), moves
every counter that is at or below its high-water mark (kept on the OTHER
server) to the mark plus a margin, with ALTER TABLE … AUTO_INCREMENT, and
raises every lease row whose reservation is behind its copy on the other
server. Prints one line per change, or "nothing to repair". Every server of
the pair must be reachable. Safe to run at any time, with ticketd running.

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
	fs.Uint64Var(&o.margin, "margin", 0, fmt.Sprintf("move a rewound counter this far past its mark; 0: %d for 64-bit tables, %d for 32-bit ones",
		ticket.DefaultMargin, ticket.DefaultMargin32))
	fs.BoolVar(&o.dryRun, "dry-run", false, "print what would change, change nothing")
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
	return cfg, validateAdmin(&cfg, o.tls, "repair: -servers/-database/-user/-margin/-call-timeout")
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return repair(ctx, cfg, o.dryRun, stdout, stderr)
}

// repair runs rewind.Repair and reports: one line per change on stdout (what
// was changed is printed even when something else failed), notes on stderr.
func repair(ctx context.Context, cfg ticket.Config, dryRun bool, stdout, stderr io.Writer) error {
	rep, err := rewind.Repair(ctx, cfg, dryRun)
	for _, c := range rep.Changes {
		switch {
		case dryRun:
			fmt.Fprintf(stdout, "%s (dry run: not changed)\n", c)
		case c.Applied:
			fmt.Fprintln(stdout, c)
		}
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(stderr, "ticketd repair: note: %s\n", n)
	}
	if err != nil {
		return fmt.Errorf("repair: %w", err)
	}
	if len(rep.Changes) == 0 {
		fmt.Fprintln(stdout, "nothing to repair")
	}
	return nil
}
