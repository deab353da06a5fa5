package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"ticketd/snowflake"
)

// runInspect decodes IDs for DBAs and on-call engineers who find them in logs.
// Every good ID is printed even when others are bad; any bad one makes the
// exit status 2.
func runInspect(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: ticketd inspect [-layout L] [-epoch MS] ID...\n\n"+
			"Prints one JSON object per ID: id, time (UTC), unix_ms, datacenter, worker, node, sequence.\n\n")
		fs.PrintDefaults()
	}
	layoutText := fs.String("layout", "twitter", "bit layout: a preset (twitter, flat) or time/datacenter/worker/sequence widths like 41/5/5/12")
	epoch := fs.Int64("epoch", snowflake.TwitterEpochMs, "epoch in Unix milliseconds")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return errReported{2} // flag already printed the message and usage
	}
	layout, err := snowflake.ParseLayout(*layoutText)
	if err != nil {
		return usageError{err}
	}
	layout.EpochMs = *epoch
	if err := layout.Validate(); err != nil {
		return usageError{err}
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return usagef("inspect: no ID given")
	}
	bad := 0
	enc := json.NewEncoder(stdout)
	for _, arg := range fs.Args() {
		d, err := describe(layout, arg)
		if err != nil {
			fmt.Fprintf(stderr, "ticketd: inspect: %v\n", err)
			bad++
			continue
		}
		if err := enc.Encode(d); err != nil {
			return fmt.Errorf("inspect: writing output: %w", err)
		}
	}
	if bad > 0 {
		return errReported{2}
	}
	return nil
}

func describe(l snowflake.Layout, s string) (snowflake.Decoded, error) {
	id, err := snowflake.ParseID(s)
	if err != nil {
		return snowflake.Decoded{}, err
	}
	return l.Describe(id)
}
