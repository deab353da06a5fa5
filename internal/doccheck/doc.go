// Package doccheck keeps ticketd's documentation honest: its tests read
// README.md and every .md file under docs/ and fail when a link, a path, a
// flag, a metric or a runnable example no longer matches the repository and
// the running program, and where one fact is written twice and can
// disagree: a make target's duration, a figure of bench/results, a default
// quoted beside its flag, a section the code names.
//
// The package holds the Markdown reading and the output comparison; the
// checks themselves are its tests (go test ./internal/doccheck). Under
// go test -short only the checks that need neither MariaDB nor a build run
// (links, paths, block syntax, the README's length, the troubleshooting
// page's messages against the code, the glossary, durations, figures, the
// code's references to sections); the full run builds ticketd, checks every
// command's flags against the docs, starts a real pair of ticket servers and
// runs every example marked runnable. docs/design.md ("Keeping the docs
// honest") describes the conventions a doc follows.
//
// # Runnable blocks
//
// A fenced code block is runnable when the line before it (blank lines
// aside) is one of
//
//	<!-- runnable -->
//	<!-- runnable: exact -->
//	<!-- runnable: per server -->
//
// A runnable console block holds commands, each on a line starting with
// "$ " (a line ending in a backslash continues on the next), each followed
// by the output it prints, stdout and stderr together. A runnable sql block
// is run as root on both ticket servers and must succeed. A per-server sql
// block is a recipe for any number of servers: S stands for the server's
// offset and N for the number of servers (ForServer); it runs on the pair,
// and TestDocsOnFourServers runs every sql block on four servers and takes
// values of every sequence the recipes made from all four. Output is compared
// after digit runs are replaced by one placeholder (IDs, times, ports and
// worker IDs differ on every run), or by JSON shape when the documented output
// is JSON; "exact" compares it verbatim.
//
// # Java blocks
//
// Every java block compiles as shown against the Java client's jar
// (JavaUnit: its import lines, then the rest as a method's body).
package doccheck
