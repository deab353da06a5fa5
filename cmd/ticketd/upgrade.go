package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"text/tabwriter"
	"time"

	"ticketd/ticket"
	"ticketd/ticket/dba/deployment"
)

// upgradeOptions is everything `ticketd upgrade status|finalize` can be
// told, by flag or by TICKETD_UPGRADE_* environment variable.
type upgradeOptions struct {
	cmd string // status, finalize
	adminOptions
}

const upgradeUsage = `usage: ticketd upgrade status [-servers A,B] [-user U] [-password-file F] [-tls-ca F …]
       ticketd upgrade finalize [flags]

Where a deployment's upgrade between releases stands, and closing it
(docs/upgrading.md, "Upgrading").

  status    each server's schema release and deployment record, every live
            worker lease with the release of the ticketd that holds it, and
            what still keeps the upgrade from being finalized.
  finalize  once every server holds this release's schema.sql and no ticketd
            of an older release holds a lease, records the deployment as
            finalized at this release on every server. That turns on what
            older releases cannot read (creating named sequences, for one)
            and closes the rollback window: a ticketd older than the release
            finalized at must not run again (those of release 3 and later
            refuse to start). Refuses, naming what is left, otherwise (exit
            1). Safe to repeat.

The account needs role ticketd_admin (schema.sql, "Accounts"), as for
ticketd repair: make db-up creates ticketd_repair with its password in
var/repair.password. The password is never a flag: it comes from
TICKETD_UPGRADE_PASSWORD or -password-file. Every flag can also be set by
TICKETD_UPGRADE_ and its name in upper case, dashes as underscores.

`

// upgradeCommand is `ticketd upgrade status|finalize`.
var upgradeCommand = adminCommand{name: "upgrade", subs: []string{"status", "finalize"}, usage: upgradeUsage,
	defaults: adminDefaults{user: "ticketd_repair", userHelp: "database user with role ticketd_admin", passwordFile: "var/repair.password",
		passwordEnv: "TICKETD_UPGRADE_PASSWORD", callTimeoutHelp: "deadline of one statement on one server"}}

func parseUpgrade(args []string, stderr io.Writer, getenv func(string) string) (upgradeOptions, error) {
	var o upgradeOptions
	var err error
	o.cmd, err = upgradeCommand.parse(args, stderr, getenv, &o.adminOptions)
	return o, err
}

func runUpgrade(args []string, stdout, stderr io.Writer) error {
	o, err := parseUpgrade(args, stderr, os.Getenv)
	if err == errHelp {
		return nil
	}
	if err != nil {
		return err
	}
	cfg := adminConfig(o.adminOptions)
	if err := validateAdmin(&cfg, o.tls, "upgrade: -servers/-database/-user/-call-timeout"); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return upgrade(ctx, o.cmd, cfg, stdout)
}

// upgrade runs deployment.Status or deployment.Finalize and prints where
// the upgrade stands. A refused finalize is exit 1, after the status that
// says why.
func upgrade(ctx context.Context, cmd string, cfg ticket.Config, stdout io.Writer) error {
	var st deployment.UpgradeStatus
	var err error
	if cmd == "finalize" {
		st, err = deployment.Finalize(ctx, cfg)
	} else {
		st, err = deployment.Status(ctx, cfg)
	}
	if len(st.Servers) > 0 {
		printUpgrade(stdout, st)
	}
	switch {
	case err != nil:
		return fmt.Errorf("upgrade %s: %w", cmd, err)
	case cmd == "finalize":
		fmt.Fprintf(stdout, "finalized at release %d: the rollback window to older releases is closed\n", st.Finalized)
	}
	return nil
}

func printUpgrade(w io.Writer, st deployment.UpgradeStatus) {
	fmt.Fprintf(w, "this ticketd: %s\n", versionLine())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tSCHEMA\tDEPLOYMENT\tMISSING")
	for _, s := range st.Servers {
		rec := "no record"
		switch {
		case s.Record && s.Finalized > 0:
			rec = fmt.Sprintf("finalized at release %d", s.Finalized)
		case s.Record:
			rec = "not finalized"
		}
		missing := s.Missing
		if missing == "" {
			missing = "-"
		}
		fmt.Fprintf(tw, "%s\trelease %d\t%s\t%s\n", s.Name, s.SchemaRelease, rec, missing)
	}
	tw.Flush()
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "LEASE\tHOLDER\tRELEASE\tEXPIRES IN")
	for _, l := range st.Leases {
		rel := fmt.Sprint(l.Release)
		if l.Release == 0 {
			rel = "1 or 2"
		}
		fmt.Fprintf(tw, "datacenter %d worker %d\t%s\t%s\t%s\n", l.Datacenter, l.Worker, l.Holder, rel, l.ExpiresIn.Round(time.Second))
	}
	tw.Flush()
	if b := st.Blockers(); len(b) > 0 {
		fmt.Fprintf(w, "not ready to finalize at release %d:\n", ticket.Release)
		for _, line := range b {
			fmt.Fprintf(w, "  - %s\n", line)
		}
	} else if st.Finalized < ticket.Release {
		fmt.Fprintf(w, "ready to finalize at release %d: ticketd upgrade finalize\n", ticket.Release)
	}
}
