package dba

import (
	"context"

	"ticketd/ticket/dba/internal/offline"
	"ticketd/ticket/internal/spec"
)

// SequenceStart is what the servers hold of one name, as a command that
// creates sequences past another source's numbers needs it when it runs
// again (ticketd import): whether the name exists, as what, where it was
// made to begin, and the most it handed out.
type SequenceStart struct {
	Name string
	// Exists: a server that answered holds something of the name (a
	// catalog row, a pin, a row of counters or a start).
	Exists bool
	// Def is the definition a server holds (the first that holds one);
	// Differ says the servers hold different definitions or starts.
	Def    spec.SequenceInfo
	Differ bool
	// Start is the start it was created with (sequence_starts; 0: none).
	Start uint64
	// Served is the largest value a row of counters handed out on any
	// server (the end of its last ticket's block; 0: none yet).
	Served uint64
}

// Starts reads what every server that answers holds of names, in their
// order. down[i] is why server i could not be read (nil for the others).
// The account needs SELECT on the schema (role ticketd_sequences).
func Starts(ctx context.Context, cfg spec.Config, names []string) (out []SequenceStart, down []error, err error) {
	inv, err := openInventory(ctx, cfg, ListOptions{}, true)
	if err != nil {
		return nil, nil, err
	}
	defer offline.CloseServers(inv.servers)
	out = make([]SequenceStart, 0, len(names))
	for b := 0; b < len(names); b += createBatch {
		batch := names[b:min(b+createBatch, len(names))]
		per, err := inv.details(ctx, batch)
		if err != nil {
			return nil, inv.down, err
		}
		for k, name := range batch {
			s := SequenceStart{Name: name}
			s.Start, s.Differ = recordedStart(per[k])
			for _, h := range per[k] {
				s.Exists = s.Exists || h.exists()
				switch {
				case !h.def.Defined():
				case !s.Def.Defined():
					s.Def = h.def
				case h.def != s.Def:
					s.Differ = true
				}
			}
			for i, h := range per[k] {
				if h.row != nil {
					s.Served = max(s.Served, lastServed(h.row.Value, max(s.Def.BlockSize, h.pin.BlockSize, 1), i))
				}
			}
			out = append(out, s)
		}
	}
	return out, inv.down, nil
}
