package dba

import (
	"context"
	"fmt"
	"strings"

	"ticketd/ticket/internal/conn"
	"ticketd/ticket/internal/spec"
)

// Public sequences (`ticketd sequence create NAME -public`): a sequence
// whose values ticketd permutes under the operator's key, named in the
// definition by its check value. The create never sees a key: it takes the
// check value the deployment records (deployment.key_check, written by the
// first ticketd started with -id-key-file, which every ticketd's key file
// must then hold, or it refuses to start), so a public sequence is made
// under a key the deployment's ticketd hold. A sequence keeps that key for
// good (its pin records it), through later key changes: the key files must
// keep it, as a decoding key.
//
// Releases 1 and 2 ignore sequences.key_check and would hand out the
// counter's raw values, which can equal public values already handed out:
// a public sequence is created only on a deployment finalized at release 3
// (offline.RequireFinalized) whose record exists on every server that answers.

// recordedKey reads the key check every server that is up records for the
// deployment, and refuses, saying what to do, unless they all record the
// same one.
func (inv *inventory) recordedKey(ctx context.Context) (string, error) {
	recs := make([][]string, len(inv.servers)) // each goroutine its own
	err := inv.each(ctx, func(ctx context.Context, s *conn.Server) error {
		return s.Pool().SelectContext(ctx, &recs[s.Idx], "SELECT key_check FROM deployment WHERE id = 1")
	})
	if err != nil {
		return "", fmt.Errorf("reading the deployment's key: %w", err)
	}
	var problems []string
	checks := map[string][]string{}
	for i, s := range inv.servers {
		switch {
		case !inv.up(i):
		case len(recs[i]) == 0:
			problems = append(problems, fmt.Sprintf("%s holds no deployment record: start a ticketd of this release on the deployment first (it records the deployment)", s.Name))
		case recs[i][0] == "":
			problems = append(problems, fmt.Sprintf("%s records no key: start a ticketd with -id-key-file first (it records its encoding key's check value; docs/operations.md, \"The deployment records its key\")", s.Name))
		default:
			checks[recs[i][0]] = append(checks[recs[i][0]], fmt.Sprint(i+1))
		}
	}
	if len(checks) > 1 {
		var parts []string
		for c, on := range checks {
			parts = append(parts, fmt.Sprintf("%s on server %s", c, strings.Join(on, ", ")))
		}
		problems = append(problems, "the servers record different keys ("+strings.Join(parts, "; ")+"): ticketd deployment set -id-key-file F sets one on every server")
	}
	if len(problems) > 0 {
		return "", fmt.Errorf("%w: a public sequence is made under the key the deployment records: %s", spec.ErrMisconfigured, strings.Join(problems, "; "))
	}
	for c := range checks {
		return c, nil
	}
	return "", fmt.Errorf("%w: no server answered for the deployment's key", spec.ErrNoServer)
}

// publicKeys sets the key check of every public sequence of defs: the one
// its name was created with, where a server holds it public already (a
// create repeated after a key change completes it under its own key), and
// the deployment's otherwise. per holds what each server holds of each
// name.
func publicKeys(defs []NewSequence, per [][]held, recorded string) {
	for k := range defs {
		if !defs[k].Public {
			continue
		}
		defs[k].KeyCheck = recorded
		for _, h := range per[k] {
			for _, d := range []spec.SequenceInfo{h.def, h.pin} {
				if d.Defined() && d.Public() {
					defs[k].KeyCheck = d.KeyCheck
				}
			}
		}
	}
}
