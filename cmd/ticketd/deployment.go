package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"text/tabwriter"
	"time"

	"ticketd/publicid"
	"ticketd/ticket/dba/deployment"
)

// deploymentOptions is everything `ticketd deployment show|set` can be
// told, by flag or by TICKETD_DEPLOYMENT_* environment variable.
type deploymentOptions struct {
	cmd string // show, set
	adminOptions

	// set
	idKeyFile    string
	balancedBits string // "" not given
}

const deploymentUsage = `usage: ticketd deployment show [-servers A,B] [-user U] [-password-file F] [-tls-ca F …]
       ticketd deployment set [-id-key-file F] [-balanced-bits N] [flags]

The deployment record: what every ticketd of the deployment shares, as each
ticket server records it (docs/operations.md, "The deployment records its
key").

  show  each server's record: layout, epoch, first start, the release the
        upgrade was finalized at, the check value of the key of public
        forms (never the key) and the balanced low bits; and the public
        sequences by the key they are made under.
  set   changes the record on every server (all must answer):
          -id-key-file F   records the check value of F's encoding key (its
                           first line; the key stays on this host, only its
                           check value is written). A key change: add the
                           new key to every ticketd's key file after the
                           encoding key and send SIGHUP, then run this with
                           a file that has it first, then restart each
                           ticketd with that file. From then on a ticketd
                           whose key file lacks the new key refuses to
                           start. Refused when public sequences use a key F
                           lacks (every ticketd with F would refuse them).
          -balanced-bits N the deployment's balanced low bits: ticketd
                           started without -balanced-bits take N at their
                           next start (restart them one at a time).

The account needs role ticketd_admin (schema.sql, "Accounts"), as for
ticketd upgrade: make db-up creates ticketd_repair with its password in
var/repair.password. The password is never a flag: it comes from
TICKETD_DEPLOYMENT_PASSWORD or -password-file. Every flag can also be set
by TICKETD_DEPLOYMENT_ and its name in upper case, dashes as underscores.

`

// deploymentCommand is `ticketd deployment show|set`.
func deploymentCommand(o *deploymentOptions) adminCommand {
	return adminCommand{name: "deployment", subs: []string{"show", "set"}, usage: deploymentUsage,
		defaults: adminDefaults{user: "ticketd_repair", userHelp: "database user with role ticketd_admin", passwordFile: "var/repair.password",
			passwordEnv: "TICKETD_DEPLOYMENT_PASSWORD", callTimeoutHelp: "deadline of one statement on one server"},
		flags: func(sub string, fs *flag.FlagSet) {
			if sub != "set" {
				return
			}
			fs.StringVar(&o.idKeyFile, "id-key-file", "", "record the check value of this key file's encoding key (its first key), never the key")
			fs.StringVar(&o.balancedBits, "balanced-bits", "", "record the deployment's balanced low bits (0: off)")
		}}
}

func parseDeployment(args []string, stderr io.Writer, getenv func(string) string) (deploymentOptions, error) {
	var o deploymentOptions
	var err error
	o.cmd, err = deploymentCommand(&o).parse(args, stderr, getenv, &o.adminOptions)
	if err == nil && o.cmd == "set" && o.idKeyFile == "" && o.balancedBits == "" {
		return o, usagef("deployment set: give -id-key-file or -balanced-bits")
	}
	return o, err
}

// deploymentChange reads what set is asked for: the key file (its check
// values only) and the balanced bits.
func deploymentChange(o deploymentOptions) (deployment.DeploymentChange, error) {
	var ch deployment.DeploymentChange
	if o.idKeyFile != "" {
		ring, err := publicid.ReadKeyFile(o.idKeyFile)
		if err != nil {
			return ch, usagef("deployment set: -id-key-file: %v", err)
		}
		ch.KeyCheck, ch.Keys = ring.Check(), ring.Checks()
	}
	if o.balancedBits != "" {
		n, err := strconv.Atoi(o.balancedBits)
		if err != nil || n < 0 || n > 62 {
			return ch, usagef("deployment set: -balanced-bits %.20q: want a number from 0 to 62", o.balancedBits)
		}
		ch.BalancedBits = &n
	}
	return ch, nil
}

func runDeployment(args []string, stdout, stderr io.Writer) error {
	o, err := parseDeployment(args, stderr, os.Getenv)
	if err == errHelp {
		return nil
	}
	if err != nil {
		return err
	}
	cfg := adminConfig(o.adminOptions)
	if err := validateAdmin(&cfg, o.tls, "deployment: -servers/-database/-user/-call-timeout"); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.cmd == "show" {
		recs, err := deployment.ReadDeployment(ctx, cfg)
		if err != nil {
			return fmt.Errorf("deployment show: %w", err)
		}
		printDeployment(stdout, recs)
		return nil
	}
	ch, err := deploymentChange(o)
	if err != nil {
		return err
	}
	before, err := deployment.SetDeployment(ctx, cfg, ch)
	if err != nil {
		return adminErr("deployment set", err)
	}
	for _, d := range before {
		if ch.KeyCheck != "" {
			fmt.Fprintf(stdout, "%s: key check %s (was %s)\n", d.Name, ch.KeyCheck, orNone(d.KeyCheck))
		}
		if ch.BalancedBits != nil {
			fmt.Fprintf(stdout, "%s: balanced bits %d (was %s)\n", d.Name, *ch.BalancedBits, bitsText(d.BalancedBits))
		}
	}
	return nil
}

func printDeployment(w io.Writer, recs []deployment.DeploymentServer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tSCHEMA\tLAYOUT\tEPOCH\tFIRST START\tFINALIZED\tKEY CHECK\tBALANCED BITS")
	for _, d := range recs {
		if !d.Record {
			fmt.Fprintf(tw, "%s\trelease %d\tno record\t-\t-\t-\t-\t-\n", d.Name, d.SchemaRelease)
			continue
		}
		fin := "no"
		if d.FinalizedRelease > 0 {
			fin = "release " + strconv.Itoa(d.FinalizedRelease)
		}
		fmt.Fprintf(tw, "%s\trelease %d\t%s\t%d\t%s\t%s\t%s\t%s\n", d.Name, d.SchemaRelease, d.Layout, d.EpochMs,
			time.UnixMilli(d.FirstStartMs).UTC().Format(time.RFC3339), fin, orNone(d.KeyCheck), bitsText(d.BalancedBits))
	}
	tw.Flush()
	for _, d := range recs {
		for k, n := range d.PublicKeys {
			fmt.Fprintf(w, "%s: public sequences made under the key with check value %s: %d\n", d.Name, k, n)
		}
	}
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func bitsText(b int) string {
	if b < 0 {
		return "none"
	}
	return strconv.Itoa(b)
}
