package dba

import (
	"context"
	"fmt"
	"strings"

	"ticketd/publicid"
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
// a public sequence is created only on a deployment finalized at this
// release (offline.RequireFinalized) whose record exists on every server
// that answers.
//
// With a start N (-start), the sequence's permutation covers the values
// above N alone (spec/public.go): its definition records N with the key
// check ("CHECK>N"), which release 3 cannot read, and it needs a
// deployment finalized at release 4, so that no ticketd of release 3
// runs on it. The start must leave at least publicid.MinSequenceValues
// values. A public sequence release 3 made with a start keeps its
// permutation, over the whole range: a create repeated on it completes it
// as it is, and says what that means (belowStartNote).

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

// publicKeys sets the key check and the permutation's start (Above) of
// every public sequence of defs: those its name was created with, where a
// server holds it public already (a create repeated after a key change
// completes it under its own key; one repeated on a sequence release 3
// made with a start completes it as release 3 made it, Above 0, since its
// values came from that permutation), and otherwise the deployment's key
// and the start asked for, or recorded. per holds what each server holds
// of each name.
func publicKeys(defs []NewSequence, per [][]held, recorded string) {
	for k := range defs {
		if !defs[k].Public {
			continue
		}
		start, _ := recordedStart(per[k])
		if defs[k].Start != 0 {
			start = defs[k].Start
		}
		defs[k].KeyCheck, defs[k].Above = recorded, start
		for _, h := range per[k] {
			for _, d := range []spec.SequenceInfo{h.def, h.pin} {
				if d.Defined() && d.Public() {
					defs[k].KeyCheck, defs[k].Above = d.KeyCheck, d.Above
				}
			}
		}
	}
}

// fewPublicValues refuses a public sequence whose start leaves fewer
// values than FF1's smallest domain (publicid.MinSequenceValues): its
// permutation covers the values above the start alone.
func fewPublicValues(d NewSequence) []string {
	if !d.SequenceInfo.Public() || d.Above == 0 {
		return nil
	}
	if left := d.Limit() - min(d.Above, d.Limit()); left < publicid.MinSequenceValues {
		wider := ""
		if d.Bits == 32 {
			wider = ", or -bits 64"
		}
		return []string{fmt.Sprintf("%q: -public with -start %d leaves %d values within %d bits, fewer than a public sequence needs (%d, the smallest domain of FF1, NIST SP 800-38G): give a lower start%s",
			d.Name, d.Above, left, d.Bits, publicid.MinSequenceValues, wider)}
	}
	return nil
}

// belowStartNote says what a public sequence release 3 made with a start
// does, and what to do (spec/public.go): the same advice as ticketd's
// report (sequence.ProblemBelowStart).
func belowStartNote(si spec.SequenceInfo, start uint64) string {
	return fmt.Sprintf("public, made by release 3 with -start %d: its permutation covers [1, %d], so about one value in %d is at or below %d "+
		"(never one twice); it keeps that permutation, since another could repeat a value it handed out. "+
		"To hand out only values above %d, move to a sequence of a new name made by this release (docs/named-sequences.md, \"Public sequences release 3 made with a start\")",
		start, si.Limit(), max(si.Limit()/max(start, 1), 1), start, start)
}
