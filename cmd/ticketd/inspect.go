package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"ticketd/publicid"
	"ticketd/snowflake"
	"ticketd/ticket/dba/deployment"
)

// runInspect decodes IDs for DBAs and on-call engineers who find them in logs.
// Every good ID is printed even when others are bad; any bad one makes the
// exit status 2. The layout and epoch: -layout and -epoch when given, else
// the deployment's, read from the ticket servers when -servers is given,
// else those a new deployment records; stderr says which it took when
// -layout was not given.
func runInspect(args []string, stdout, stderr io.Writer) error {
	return inspect(args, stdout, stderr, os.Getenv)
}

const inspectUsage = `usage: ticketd inspect [-layout L] [-epoch MS] [-servers A,B [-user U] [-password-file F] …] [-id-key-file F [-from-public]] ID...

Prints one JSON object per ID: id, time (UTC), unix_ms, datacenter, worker, node, sequence;
with -id-key-file, its public form too; with -from-public, the arguments are public forms.

The layout and epoch are -layout's and -epoch's when given; else the deployment's, read
from the ticket servers with -servers (an account that may read table deployment:
ticketd's own; the password from TICKETD_INSPECT_PASSWORD or -password-file); else what a
new deployment records (` + "`ticketd serve`" + ` without -layout and -datacenter). When -layout is
not given, stderr says which it took. Every flag can also be set by TICKETD_INSPECT_ and
its name in upper case, dashes as underscores.

`

func inspect(args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, inspectUsage)
		fs.PrintDefaults()
	}
	def := newDeploymentLayout(false)
	layoutText := fs.String("layout", "", fmt.Sprintf("bit layout: a preset (twitter, flat) or time/datacenter/worker/sequence widths like 41/5/5/12; when not given, the deployment's (with -servers), else %s (what a new deployment records)", def))
	epoch := fs.Int64("epoch", def.EpochMs, "epoch in Unix milliseconds; when not given, the deployment's (with -servers), else this")
	var admin adminOptions
	admin.register(fs, adminDefaults{user: "ticketd", userHelp: "database user that may read table deployment (ticketd's own)", passwordFile: "var/ticketd.password",
		passwordEnv: "TICKETD_INSPECT_PASSWORD", callTimeoutHelp: "deadline of one statement on one server", optionalServers: true})
	keyFile := fs.String("id-key-file", "", "the deployment's key file (ticketd serve -id-key-file): print each ID's public form; the key is never given on the command line")
	fromPublic := fs.Bool("from-public", false, "the arguments are public forms: print the ID each stands for (needs -id-key-file)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return errReported{2} // flag already printed the message and usage
	}
	if err := applyEnvWith(fs, "TICKETD_INSPECT_", getenv); err != nil {
		return err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if fs.NArg() == 0 {
		fs.Usage()
		return usagef("inspect: no ID given")
	}
	layout, how, firstStartMs, err := inspectLayout(*layoutText, *epoch, given["epoch"], admin, getenv)
	if err != nil {
		return err
	}
	floor := lowestID(layout, firstStartMs)
	if *layoutText == "" {
		fmt.Fprintf(stderr, "ticketd: inspect: layout %s, epoch %d: %s\n", layout, layout.EpochMs, how)
	}
	var ring *publicid.Ring
	switch {
	case *keyFile != "":
		if ring, err = publicid.ReadKeyFile(*keyFile); err != nil {
			return usagef("inspect: -id-key-file: %v", err)
		}
	case *fromPublic:
		return usagef("inspect: -from-public needs -id-key-file")
	}
	bad := 0
	enc := json.NewEncoder(stdout)
	for _, arg := range fs.Args() {
		var d any
		var err error
		switch {
		case *fromPublic:
			d, err = fromPublicForm(layout, ring, arg)
		case ring != nil:
			d, err = describePublic(layout, ring, arg)
		default:
			d, err = describe(layout, arg)
		}
		if err != nil {
			fmt.Fprintf(stderr, "ticketd: inspect: %v\n", err)
			bad++
			continue
		}
		if err := enc.Encode(d); err != nil {
			return fmt.Errorf("inspect: writing output: %w", err)
		}
		if id, _ := snowflake.ParseID(arg); !*fromPublic && id < floor.id {
			fmt.Fprintf(stderr, "ticketd: inspect: %d is no snowflake ID of %s: it is below %d, the smallest one issued (%s); it may be %s\n",
				id, floor.of, floor.id, floor.when, floor.other)
		}
	}
	if bad > 0 {
		return errReported{2}
	}
	return nil
}

// describePublic is describe with the ID's public form.
func describePublic(l snowflake.Layout, ring *publicid.Ring, s string) (any, error) {
	d, err := describe(l, s)
	if err != nil {
		return nil, err
	}
	id, _ := strconv.ParseInt(d.ID, 10, 64)
	pub, err := ring.Public(id)
	if err != nil {
		return nil, err
	}
	return struct {
		snowflake.Decoded
		Public string `json:"public"`
	}{d, strconv.FormatInt(pub, 10)}, nil
}

// fromPublicForm decodes a public form under every key of the ring, keeping
// the IDs whose time lies between the epoch and a second from now (inspect
// knows no deployment's first start); the first is printed with its fields,
// the others under "also", as GET /v1/ids/{form}?from=public does.
func fromPublicForm(l snowflake.Layout, ring *publicid.Ring, s string) (any, error) {
	form, err := snowflake.ParseID(s)
	if err != nil {
		return nil, fmt.Errorf("public form: %w", err)
	}
	latest := time.Now().Add(time.Second).UnixMilli()
	found, err := ring.Decode(form, func(id int64) bool {
		p, err := l.Decompose(id)
		return err == nil && p.UnixMs <= latest
	})
	if err != nil {
		return nil, err
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("public form %d is no ID of layout %s and epoch %d under any of the %d keys", form, l, l.EpochMs, ring.Len())
	}
	d, err := l.Describe(found[0].ID)
	if err != nil {
		return nil, err
	}
	type also struct {
		ID  string `json:"id"`
		Key int    `json:"key"`
	}
	out := struct {
		Public string `json:"public"`
		snowflake.Decoded
		Key  int    `json:"key"`
		Also []also `json:"also"`
	}{Public: strconv.FormatInt(form, 10), Decoded: d, Key: found[0].Key, Also: []also{}}
	for _, f := range found[1:] {
		out.Also = append(out.Also, also{strconv.FormatInt(f.ID, 10), f.Key})
	}
	return out, nil
}

func describe(l snowflake.Layout, s string) (snowflake.Decoded, error) {
	id, err := snowflake.ParseID(s)
	if err != nil {
		return snowflake.Decoded{}, err
	}
	return l.Describe(id)
}

// inspectLayout is the layout and epoch inspect decodes with, and where
// they come from (for stderr): layoutText and epoch when given; else the
// deployment's, read from the servers of admin when its -servers is given;
// else newDeploymentLayout's.
func inspectLayout(layoutText string, epoch int64, epochGiven bool, admin adminOptions, getenv func(string) string) (snowflake.Layout, string, int64, error) {
	how := "what a new deployment records (ticketd serve without -layout and -datacenter); give -layout, or -servers to read the deployment's"
	layoutGiven := layoutText != ""
	var firstStartMs int64
	if !layoutGiven {
		layoutText = newDeploymentLayout(false).String()
	}
	if admin.servers != "" {
		var err error
		admin.password, err = adminPassword("inspect", "TICKETD_INSPECT_PASSWORD", admin.passwordFile, getenv)
		if err != nil {
			return snowflake.Layout{}, "", 0, err
		}
		cfg := adminConfig(admin)
		if err := validateAdmin(&cfg, admin.tls, "inspect: -servers/-database/-user/-call-timeout"); err != nil {
			return snowflake.Layout{}, "", 0, err
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		rec, err := deployment.ReadLayout(ctx, cfg)
		if err != nil {
			return snowflake.Layout{}, "", 0, fmt.Errorf("inspect: reading the deployment's layout: %w", err)
		}
		firstStartMs = rec.FirstStartMs
		if !layoutGiven {
			layoutText, how = rec.Layout, "recorded on the ticket servers"
		}
		if !epochGiven {
			epoch = rec.EpochMs
		}
	}
	layout, err := snowflake.ParseLayout(layoutText)
	if err != nil {
		return snowflake.Layout{}, "", 0, usageError{err}
	}
	layout.EpochMs = epoch
	if err := layout.Validate(); err != nil {
		return snowflake.Layout{}, "", 0, usageError{err}
	}
	return layout, how, firstStartMs, nil
}

// releaseOneMs is the day ticketd's first release was cut (CHANGELOG.md,
// "Release 1"): no deployment started before it, and no snowflake ID of
// ticketd's is older, whatever its epoch.
const releaseOneMs = 1795305600000 // 2026-11-22T00:00:00Z

// idFloor is the smallest snowflake ID inspect's deployment can have
// issued, and what for the word it adds below it.
type idFloor struct {
	id       int64
	of, when string // "this deployment", "(its first start, …)"
	other    string // what else a number below may be
}

// lowestID is the smallest snowflake ID of layout a deployment first
// started at firstStartMs issued (ticketd never issues an ID older than
// its deployment's first start); with firstStartMs 0 (not read from the
// servers), the smallest of any deployment of ticketd's with that layout.
// A number below it (a small one decodes to a time at the epoch) is a
// counter's value taken for an ID, or another system's ID.
func lowestID(layout snowflake.Layout, firstStartMs int64) idFloor {
	f := idFloor{of: "this deployment",
		when:  fmt.Sprintf("its first start, %s, recorded on the ticket servers", time.UnixMilli(firstStartMs).UTC().Format(snowflake.TimeFormat)),
		other: "a value of a named sequence or a fallback ID (from Tickets64)"}
	if firstStartMs <= 0 {
		firstStartMs = max(layout.EpochMs, releaseOneMs)
		f.of = fmt.Sprintf("layout %s and epoch %d", layout, layout.EpochMs)
		f.when = "no ticketd started before " + time.UnixMilli(firstStartMs).UTC().Format(time.DateOnly)
		f.other = "a value of a named sequence, a fallback ID (from Tickets64) or another system's ID"
	}
	id, err := layout.MinIDAt(firstStartMs)
	if err != nil {
		return idFloor{} // past the layout's end of life: nothing to say
	}
	f.id = id
	return f
}
