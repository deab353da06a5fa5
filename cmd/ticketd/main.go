// Command ticketd hands out unique 64-bit IDs.
//
//	ticketd serve [flags]                           serve IDs over HTTP
//	ticketd inspect [-layout L] [-epoch MS] [-id-key-file F [-from-public]] ID...
//	                                                decode IDs found in logs, and public forms
//	ticketd repair [-dry-run] [flags]               fix counters rewound by a restore
//	ticketd sequence create|adopt|list|check [flags] named sequences on both servers
//	ticketd pair check [flags]                      what a pair lacks for ticketd, and the fixes
//	ticketd upgrade status|finalize [flags]         the releases a deployment runs; closing an upgrade
//	ticketd deployment show|set [flags]             the deployment record: its key check, its balanced bits
//	ticketd import leaf|tinyid [flags]              Leaf's or tinyid's keys as sequences, routes and tokens
//	ticketd version                                 this binary's version and release
//
// main only wires: every subcommand lives in its own file and returns an
// error; main prints it and exits once, with status 2 for bad usage and 1 for
// everything else.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// version is the version ticketd_build_info reports, set at build time:
//
//	go build -ldflags "-X main.version=v1.4.0" ./cmd/ticketd
//
// Left empty, the metric reports the version the Go toolchain stamped into
// the binary (a pseudo-version from the VCS, or "(devel)").
var version string

func main() {
	os.Exit(exitCode(run(os.Args[1:], os.Stdout, os.Stderr), os.Stderr))
}

// usageError marks an error as the caller's fault (bad flag, bad argument):
// exit status 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// errReported is an error whose message was already printed.
type errReported struct{ code int }

func (e errReported) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func exitCode(err error, stderr io.Writer) int {
	var rep errReported
	var use usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &rep):
		return rep.code
	case errors.As(err, &use):
		fmt.Fprintln(stderr, "ticketd:", err)
		return 2
	default:
		fmt.Fprintln(stderr, "ticketd:", err)
		return 1
	}
}

const usage = `usage: ticketd <command> [flags] [args]

commands:
  serve [flags]                           serve IDs over HTTP (see 'ticketd serve -h')
  inspect [-layout L] [-epoch MS] ID...   decode IDs: one JSON object per line (-id-key-file: public forms, both ways)
  repair [-dry-run] [flags]               after a restore: move rewound counters past their marks
  sequence create|adopt|list|check [flags]
                                          named sequences on both ticket servers at once
  pair check [flags]                      what a pair of ticket servers lacks for ticketd, in the order to fix it
  upgrade status|finalize [flags]         the releases a deployment runs; close an upgrade's rollback window
  deployment show|set [flags]             the deployment record; change its key (a key change) or balanced bits
  import leaf|tinyid [flags]              Leaf's or tinyid's keys as sequences, their routes and tokens (docs/migrating.md)
  version                                 this binary's version and release

Run 'ticketd <command> -h' for a command's flags.
`

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errReported{2}
	}
	switch args[0] {
	case "serve":
		return runServe(args[1:], stdout, stderr)
	case "inspect":
		return runInspect(args[1:], stdout, stderr)
	case "repair":
		return runRepair(args[1:], stdout, stderr)
	case "sequence":
		return runSequence(args[1:], stdout, stderr)
	case "upgrade":
		return runUpgrade(args[1:], stdout, stderr)
	case "deployment":
		return runDeployment(args[1:], stdout, stderr)
	case "pair":
		return runPair(args[1:], stdout, stderr)
	case "import":
		return runImport(args[1:], stdout, stderr)
	case "version", "-version", "--version":
		fmt.Fprintln(stdout, versionLine())
		return nil
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprint(stderr, usage)
		return usagef("unknown command %q", args[0])
	}
}
