package sequence

import (
	"fmt"
	"strings"

	"ticketd/ticket/internal/schema"
	"ticketd/ticket/internal/spec"
)

// recomputeLocked judges a name from what every server holds of it: which
// servers serve it, whether it is refused, what to report. Called with the
// catalog's mutex held. It builds text only for a name with a problem.
func (sq *Sequences) recomputeLocked(q *Sequence) {
	c := &sq.cat
	name := q.Info.Name
	inUse := c.pack(q.Info)
	var mask, pinned, badPins, changed uint64
	var first packedDef
	differ := false
	for i := range q.defs {
		d := &q.defs[i]
		if d.row.ok {
			if mask == 0 {
				first = d.row
			} else if d.row != first {
				differ = true
			}
			if d.row != inUse {
				changed |= 1 << i
			}
			mask |= 1 << i
		}
		if d.pin.ok {
			if d.pin == inUse {
				pinned |= 1 << i
			} else {
				badPins |= 1 << i
			}
		}
	}
	var err error
	kind := ""
	rows := func(d seqDef) packedDef { return d.row }
	switch {
	case differ && !q.used.Load():
		kind = ProblemDiffers
		err = fmt.Errorf("%w: sequence %q is defined differently on the servers (%s): fix the sequences table, then restart ticketd%s",
			spec.ErrMisconfigured, name, c.listDefs(q, rows, "server"), sq.publicNote(q))
	case changed != 0:
		// The catalog no longer says what this Pair has been serving.
		kind = ProblemRedefined
		err = fmt.Errorf("%w: sequence %q was redefined: the catalog says %s, but it was in use as %s: "+
			"put the definition back, then restart ticketd (or create a sequence with a new name)%s",
			spec.ErrMisconfigured, name, c.listDefs(q, rows, "server"), q.Info, sq.publicNote(q))
	case badPins != 0:
		kind = ProblemRedefined
		err = fmt.Errorf("%w: sequence %q was redefined: the catalog says %s, but ticketd served it as %s: "+
			"put the pinned definition back, then restart ticketd (or create a sequence with a new name)",
			spec.ErrMisconfigured, name, q.Info, c.listDefs(q, func(d seqDef) packedDef {
				if d.pin == inUse {
					return packedDef{}
				}
				return d.pin
			}, "pinned on server"))
	}
	if !q.Info.RowStored() {
		if other := c.byTable[q.Info.Table]; other != nil && other != q {
			shared := fmt.Errorf("%w: sequences %q and %q share table %s", spec.ErrMisconfigured, other.Info.Name, name, q.Info.Table)
			if other.breakWith(shared) {
				sq.reportLocked(other, ProblemSharedTable, shared)
			}
			if err == nil {
				kind, err = ProblemSharedTable, shared
			}
		} else if other == nil {
			c.byTable[q.Info.Table] = q
		}
	}
	q.Servers.Store(mask)
	q.Pinned.Store(pinned)
	if err != nil {
		if q.breakWith(err) {
			sq.reportLocked(q, kind, err)
		}
		return
	}
}

// judgeMissingLocked reports q when this Pair lacks its key (a public
// sequence: refused, whatever the servers hold), or else when some server
// whose catalog was read lacks it, and clears its report once neither
// holds. Called with the catalog's mutex held, after a poll of every server
// (settleCatalog), which judges every name again when the key ring changed.
func (sq *Sequences) judgeMissingLocked(q *Sequence) {
	c := &sq.cat
	if q.err() != nil {
		return // refused for good: its report stays
	}
	name := q.Info.Name
	if err := keyProblem(q.Info, c.ring); err != nil && q.Servers.Load() != 0 {
		sq.reportLocked(q, ProblemNoKey, err)
		return
	}
	mask := q.Servers.Load()
	if missing := c.read &^ mask; missing != 0 && mask != 0 {
		var have, lack []string
		for i := range c.n {
			switch {
			case mask&(1<<i) != 0:
				have = append(have, fmt.Sprint(i+1))
			case missing&(1<<i) != 0:
				lack = append(lack, fmt.Sprint(i+1))
			}
		}
		sq.reportLocked(q, ProblemMissing, fmt.Errorf("sequence %q is defined on server %s and missing on server %s: "+
			"served by the first until it is created there too (ticketd sequence create)",
			name, strings.Join(have, ", "), strings.Join(lack, ", ")))
		return
	}
	if start, ok := c.belowStart[q]; ok && mask != 0 {
		sq.reportLocked(q, ProblemBelowStart, belowStartError(q.Info, start))
		return
	}
	c.problems.clear(name)
}

// publicNote says which servers of a public sequence's rows hold a schema
// without public sequences, where it reads as plain; "" if none. Called
// with c.mu held.
func (sq *Sequences) publicNote(q *Sequence) string {
	public := false
	for _, d := range q.defs {
		public = public || (d.row.ok && d.row.key != 0)
	}
	if !public {
		return ""
	}
	var old []string
	for i, d := range q.defs {
		if d.row.ok && !sq.schemas.Has(i, schema.Public) {
			old = append(old, fmt.Sprint(i+1))
		}
	}
	if len(old) == 0 {
		return ""
	}
	return fmt.Sprintf(" (server %s holds a schema without %s, where a public sequence reads as plain: load this release's schema.sql there)",
		strings.Join(old, ", "), schema.Release1.Missing(schema.Public))
}

// listDefs names, per server, the definition pick returns (skipping none).
// Called with c.mu held.
func (c *catalog) listDefs(q *Sequence, pick func(seqDef) packedDef, label string) string {
	var parts []string
	for i, d := range q.defs {
		if r := pick(d); r.ok {
			parts = append(parts, fmt.Sprintf("%s %d: %s", label, i+1, c.unpack(r, q.Info.Name)))
		}
	}
	return strings.Join(parts, "; ")
}

// reportLocked records a problem of q and logs it (aggregated).
func (sq *Sequences) reportLocked(q *Sequence, kind string, err error) {
	refused := kind != ProblemMissing && kind != ProblemBelowStart
	if !sq.cat.problems.set(Problem{Name: q.Info.Name, Kind: kind, Refused: refused, Detail: err.Error()}) {
		return // already known
	}
	switch kind {
	case ProblemMissing:
		sq.warn.Note(warnSeqMissing, "sequence", q.Info.Name, "err", err)
		return
	case ProblemBelowStart:
		sq.warn.Note(warnSeqBelowStart, "sequence", q.Info.Name, "err", err)
		return
	case ProblemNoKey:
		sq.warn.Note(warnSeqNoKey, "sequence", q.Info.Name, "err", err)
		return
	}
	sq.warn.Note(warnSeqRefused, "sequence", q.Info.Name, "err", err)
}
