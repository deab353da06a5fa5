// Command benchtool is the Go side of make bench (bench/run.sh drives it):
//
//	benchtool freeport N                      print N free TCP ports on 127.0.0.1
//	benchtool check -url URL -lines N         wait until URL answers 200 with N lines (or times out)
//	benchtool raw -servers A,B -table T ...   Flickr baseline: REPLACE INTO + LastInsertId straight to the pair
//	benchtool client -url URL [-d D] [-rate R] ticketd's Go client against one ticketd, and uuid.NewV7 beside it
//	benchtool clientsgo -url URL              the Go client's Next beside UUIDs and a plain HTTP call (bench/clients.sh)
//	benchtool report -dir DIR                 read DIR/raw/*, write DIR/report.md, summary.txt, bench.dat, bench.gp
//	benchtool seqready|seqfirst|seqwarm …     the named-sequence bench (seq.go)
//	benchtool rate|seqstat …                  the far bench (far.go)
//	benchtool tailrate|tailround|tailreport … the open-loop tail bench (tail.go)
package main

import (
	"fmt"
	"os"
)

const usage = `usage: benchtool freeport N | check -url URL [-lines N] | raw [flags] | client -url URL [flags] | clientsgo -url URL | report -dir DIR | seqready|seqfirst|seqwarm [flags] | rate|seqstat [flags] | tailrate|tailround|tailreport [flags]`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "freeport":
		err = runFreeport(os.Args[2:])
	case "check":
		err = runCheck(os.Args[2:])
	case "raw":
		err = runRaw(os.Args[2:])
	case "client":
		err = runClient(os.Args[2:])
	case "clientsgo":
		err = runClientsGo(os.Args[2:])
	case "report":
		err = runReport(os.Args[2:])
	case "seqready":
		err = runSeqReady(os.Args[2:])
	case "seqfirst":
		err = runSeqFirst(os.Args[2:])
	case "seqwarm":
		err = runSeqWarm(os.Args[2:])
	case "rate":
		err = runRate(os.Args[2:])
	case "seqstat":
		err = runSeqStat(os.Args[2:])
	case "tailrate":
		err = runTailRate(os.Args[2:])
	case "tailround":
		err = runTailRound(os.Args[2:])
	case "tailreport":
		err = runTailReport(os.Args[2:])
	default:
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtool:", err)
		os.Exit(1)
	}
}
