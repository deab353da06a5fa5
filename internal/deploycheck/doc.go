// Package deploycheck keeps the files of deploy/ working: its tests run
// systemd-analyze on the units, start the ticket server exactly as its unit's
// command lines would, build the static binary the image is made of and run it
// the way deploy/Containerfile says (its entrypoint, environment and user, in
// a root directory that holds nothing but what the image holds).
//
// The package holds the parsers (systemd unit files, their command lines, and
// Containerfiles); the checks are its tests (go test ./internal/deploycheck).
// Under go test -short only the checks that need neither MariaDB nor a build
// run, and a missing systemd-analyze is then skipped instead of failing.
package deploycheck
