package dba

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"ticketd/ticket/dba/internal/offline"
	"ticketd/ticket/internal/conn"
	"ticketd/ticket/internal/schema"
	"ticketd/ticket/internal/spec"
)

// SequenceListing is one sequence as `ticketd sequence list` shows it.
type SequenceListing struct {
	Name string
	// Defs holds each server's definition (Config.Servers order); Bits 0:
	// none there, or the server could not be read.
	Defs []spec.SequenceInfo
	// Counters holds each server's counter: a row's value (the last ticket
	// it handed out) or a table's AUTO_INCREMENT; Known[i] is false when
	// there was none to read.
	Counters []uint64
	Known    []bool
	// Left is how many values are left on the server that issued the most,
	// LeftShare that as a share of the sequence's range, in [0, 1].
	Left      uint64
	LeftShare float64
	// Total is how many values the sequence can still hand out, on every
	// server whose counter was read (a server's last block cut at the
	// sequence's top as ticketd cuts it): exactly as many as ticketd hands
	// out before it answers that the sequence is exhausted everywhere,
	// blocks in memory included (they were taken from the counters).
	// math.MaxUint64 when more than fits.
	Total uint64
	// Start is the start the sequence was created with (sequence_starts;
	// 0: none).
	Start uint64
	// Notes is what sequence check finds wrong with it, each in short
	// (the check says it in full): on the servers that could be read.
	Notes []string
}

// ListOptions narrows a listing or a check.
type ListOptions struct {
	Name   string // only this sequence
	Prefix string // only the sequences whose name starts with this
	Limit  int    // at most this many; 0: every one
}

func (o ListOptions) validate() error {
	if o.Name != "" && !spec.ValidName(o.Name) {
		return fmt.Errorf("%w: name %.64q does not match %s", spec.ErrBadName, o.Name, spec.NameRE)
	}
	if o.Limit < 0 {
		return fmt.Errorf("%w: limit %d", spec.ErrInvalidArgument, o.Limit)
	}
	return nil
}

// ListSequences calls f for every sequence of the pair's catalogs, in name
// order, a page (a thousand names) at a time. Servers that cannot be reached
// are left out and named in down (nil for the others); a server in the wrong
// place fails the call. cfg's account needs SELECT on the schema (role
// ticketd_sequences).
func ListSequences(ctx context.Context, cfg spec.Config, opt ListOptions, f func(SequenceListing) error) (down []error, err error) {
	inv, err := openInventory(ctx, cfg, opt, false)
	if err != nil {
		return nil, err
	}
	defer offline.CloseServers(inv.servers)
	inv.withMarks = true
	err = inv.walk(ctx, opt, func(name string, per []held) error {
		return f(inv.listing(name, per))
	})
	return inv.down, err
}

func openInventory(ctx context.Context, cfg spec.Config, opt ListOptions, all bool) (*inventory, error) {
	if err := opt.validate(); err != nil {
		return nil, err
	}
	cfg, err := offline.Prepare(cfg)
	if err != nil {
		return nil, err
	}
	servers, down, err := offline.Connect(ctx, cfg)
	if err != nil {
		return nil, err
	}
	inv := &inventory{cfg: cfg, servers: servers, down: down, withAll: all, prefix: opt.Prefix, schemas: make([]schema.Feature, len(servers))}
	up := 0
	for i := range servers {
		if inv.up(i) {
			up++
		}
	}
	if up == 0 {
		offline.CloseServers(servers)
		return nil, fmt.Errorf("%w: %w", spec.ErrNoServer, errors.Join(down...))
	}
	if err := inv.each(ctx, func(ctx context.Context, s *conn.Server) error {
		f, err := schema.Detect(ctx, conn.PoolQuerier{Server: s}, cfg.Database)
		inv.schemas[s.Idx] = f
		return err
	}); err != nil {
		offline.CloseServers(servers)
		return nil, err
	}
	return inv, nil
}

// walk calls f for every name the options select, with what each server
// holds of it.
func (inv *inventory) walk(ctx context.Context, opt ListOptions, f func(string, []held) error) error {
	if opt.Name != "" {
		per, err := inv.details(ctx, []string{opt.Name})
		if err != nil {
			return err
		}
		if !inv.anyHeld(per[0]) {
			return fmt.Errorf("%w: %q is on no server that answered", spec.ErrUnknownSequence, opt.Name)
		}
		return f(opt.Name, per[0])
	}
	after, n := "", 0
	for {
		names, more, err := inv.names(ctx, after)
		if err != nil || len(names) == 0 {
			return err
		}
		per, err := inv.details(ctx, names)
		if err != nil {
			return err
		}
		for k, name := range names {
			if opt.Limit > 0 && n == opt.Limit {
				return nil
			}
			if err := f(name, per[k]); err != nil {
				return err
			}
			n++
		}
		if !more {
			return nil
		}
		after = names[len(names)-1]
	}
}

func (inv *inventory) anyHeld(per []held) bool {
	for _, h := range per {
		if h.def.Defined() || h.pin.Defined() || h.row != nil {
			return true
		}
	}
	return false
}

// listing turns what the servers hold of name into a SequenceListing.
func (inv *inventory) listing(name string, per []held) SequenceListing {
	n := len(inv.servers)
	l := SequenceListing{Name: name, Defs: make([]spec.SequenceInfo, n), Counters: make([]uint64, n), Known: make([]bool, n), LeftShare: 1}
	var def spec.SequenceInfo
	for i, h := range per {
		if h.def.Defined() {
			l.Defs[i] = h.def
			if !def.Defined() {
				def = h.def
			}
		}
		switch {
		case h.def.Defined() && h.def.Table != "":
			l.Counters[i], l.Known[i] = h.table, h.tableSet
		case h.row != nil:
			l.Counters[i], l.Known[i] = h.row.Value, true
		}
	}
	for _, fd := range inv.judge(name, per) {
		l.Notes = append(l.Notes, fd.note)
	}
	l.Start, _ = recordedStart(per)
	if !def.Defined() {
		return l
	}
	maxT := def.MaxTicket()
	span := maxT / uint64(n)
	leftT := uint64(math.MaxUint64)
	for i := range per {
		if !l.Known[i] {
			continue
		}
		next := l.Counters[i] // a table's AUTO_INCREMENT: at most the next ticket
		if def.Table == "" {
			next = l.Counters[i] + uint64(n) // a row's value is the last ticket
		}
		var left uint64
		if next <= maxT {
			left = (maxT-next)/uint64(n) + 1
		}
		leftT = min(leftT, left)
		l.Total = addSat(l.Total, valuesOf(def, next, left, uint64(n)))
	}
	if leftT == math.MaxUint64 {
		return l // no counter read
	}
	l.Left = leftT * def.BlockSize
	if leftT != 0 && l.Left/leftT != def.BlockSize {
		l.Left = math.MaxUint64 // saturate: a 64-bit sequence has more than fits
	}
	if span > 0 {
		l.LeftShare = min(float64(leftT)/float64(span), 1)
	}
	return l
}

// valuesOf is how many values the tickets next, next+step, … (left of
// them) stand for: left blocks of the sequence's block size, the one of
// its last usable ticket cut at its top (Limit), as ticketd cuts it.
func valuesOf(def spec.SequenceInfo, next, left, step uint64) uint64 {
	if left == 0 {
		return 0
	}
	b := max(def.BlockSize, 1)
	total := left * b
	if total/left != b {
		return math.MaxUint64
	}
	last := next + (left-1)*step // within MaxTicket: last·b ≤ Limit
	if end := last*b + (b - 1); end > def.Limit() {
		total -= end - def.Limit()
	}
	return total
}

// addSat adds without wrapping: math.MaxUint64 stands for "more".
func addSat(a, b uint64) uint64 {
	if a > math.MaxUint64-b {
		return math.MaxUint64
	}
	return a + b
}

// Difference is one thing `ticketd sequence check` found wrong with a
// sequence.
type Difference struct {
	Name string
	What string // what is wrong, naming both sides, and what to do
}

func (d Difference) String() string { return d.Name + ": " + d.What }

// CheckSequences compares, for every sequence the options select, what each
// server holds: the catalog rows (missing on one server, or defined
// differently), the pins (a catalog row that no longer matches the definition
// ticketd served), the rows of counters (missing, made for another place),
// and the counters against the high-water marks the other servers hold
// (rewound by a restore). It calls f for each difference and returns how many
// names it checked. Every server must be reachable.
func CheckSequences(ctx context.Context, cfg spec.Config, opt ListOptions, f func(Difference) error) (int, error) {
	inv, err := openInventory(ctx, cfg, opt, true)
	if err != nil {
		return 0, err
	}
	defer offline.CloseServers(inv.servers)
	if err := errors.Join(inv.down...); err != nil {
		return 0, fmt.Errorf("%w: every server must be reachable to compare them: %w", spec.ErrNoServer, err)
	}
	inv.withMarks = true
	checked := 0
	err = inv.walk(ctx, opt, func(name string, per []held) error {
		for _, fd := range inv.judge(name, per) {
			if err := f(Difference{Name: name, What: fd.what}); err != nil {
				return err
			}
		}
		checked++
		return nil
	})
	return checked, err
}

// finding is one thing wrong with a sequence: in full, naming both sides
// and what to do (sequence check prints it), and in short (sequence list's
// NOTE), so that the list shows what the check knows.
type finding struct{ what, note string }

// judge lists what is wrong with one name. Servers that are down (list
// runs without them) say nothing of it.
func (inv *inventory) judge(name string, per []held) []finding {
	n := len(inv.servers)
	var out []finding
	add := func(note, format string, args ...any) {
		out = append(out, finding{fmt.Sprintf(format, args...), note})
	}
	var have, lack []string
	var def spec.SequenceInfo
	differ := false
	for i, h := range per {
		if !inv.up(i) {
			continue
		}
		if !h.def.Defined() {
			lack = append(lack, fmt.Sprint(i+1))
			continue
		}
		have = append(have, fmt.Sprint(i+1))
		if !def.Defined() {
			def = h.def
		} else if h.def != def {
			differ = true
		}
	}
	defs := func(pick func(held) spec.SequenceInfo, label string) string {
		var parts []string
		for i, h := range per {
			if d := pick(h); d.Defined() {
				parts = append(parts, fmt.Sprintf("%s %d: %s", label, i+1, d))
			}
		}
		return strings.Join(parts, "; ")
	}
	switch {
	case differ:
		add("defined differently: see check", "defined differently on the servers (%s): ticketd refuses it", defs(func(h held) spec.SequenceInfo { return h.def }, "server"))
	case len(have) > 0 && len(lack) > 0:
		add("missing on server "+strings.Join(lack, ", "), "defined on server %s, missing on server %s: run the same `ticketd sequence create` again to complete it",
			strings.Join(have, ", "), strings.Join(lack, ", "))
	}
	for i, h := range per {
		on := fmt.Sprintf(" on server %d", i+1)
		switch {
		case h.pin.Defined() && h.def.Defined() && h.pin != h.def:
			add("redefined"+on+": refused, see check", "redefined on server %d: the catalog says %s, but it was served as %s (pinned): ticketd refuses it",
				i+1, h.def, h.pin)
		case h.pin.Defined() && !h.def.Defined():
			add("catalog row gone"+on+", see check", "its catalog row is gone from server %d (emptied with TRUNCATE?); it was served as %s (pinned): put that row back",
				i+1, h.pin)
		}
		if h.row != nil && (h.row.Start != i+1 || h.row.Step != n) {
			add("row of counters"+on+" not for its place, see check", "its row of counters on server %d has start %d and step %d, want %d and %d: ticketd does not use it",
				i+1, h.row.Start, h.row.Step, i+1, n)
		}
		if !h.def.Defined() {
			continue
		}
		if h.def.Table == "" && h.row == nil {
			add("no row of counters"+on+", see check", "no row of counters on server %d: run the same `ticketd sequence create` again to complete it", i+1)
			continue
		}
		rewound := "rewound" + on + ": refused there until ticketd repair runs, see check"
		switch {
		case !h.rewound():
		case h.def.Table == "":
			add(rewound, "rewound on server %d (restored from a backup?): its value %d is below the highest ticket it issued, %d: ticketd refuses it there until `ticketd repair` runs",
				i+1, h.row.Value, h.mark)
		default:
			add(rewound, "rewound on server %d (restored from a backup?): table %s's AUTO_INCREMENT %d is at or below the highest ticket it issued, %d: ticketd refuses it there until `ticketd repair` runs",
				i+1, h.def.Table, h.table, h.mark)
		}
	}
	if rec, _ := recordedStart(per); spec.PublicBelowStart(def, rec) {
		add(fmt.Sprintf("made by release 3: values at or below -start %d too, see check", rec), "%s", belowStartNote(def, rec))
	} else if def.Public() && def.Above != 0 && rec != def.Above {
		add("its start not as created, see check", "its permutation covers the values above %d (its definition, pinned), but sequence_starts records %s: put that row back as it was created (-start %d)",
			def.Above, startText(rec), def.Above)
	}
	if rec, differ := recordedStart(per); differ {
		var parts []string
		for i, h := range per {
			parts = append(parts, fmt.Sprintf("server %d: %s", i+1, startText(h.start)))
		}
		add("created with different starts, see check", "created with different starts on the servers (%s)", strings.Join(parts, "; "))
	} else if rec != 0 {
		var without []string
		for i, h := range per {
			if h.exists() && h.start != rec {
				without = append(without, fmt.Sprint(i+1))
			}
		}
		if len(without) > 0 {
			add("its start missing on server "+strings.Join(without, ", ")+", see check", "created with -start %d, but server %s holds it without that start: it may hand out values at or below %d there",
				rec, strings.Join(without, ", "), rec)
		}
	}
	if !def.Defined() && !inv.anyPinned(per) {
		for i, h := range per {
			if h.row != nil {
				add("no catalog row", "a row of counters on server %d, but no catalog row anywhere", i+1)
			}
		}
	}
	return out
}

func (inv *inventory) anyPinned(per []held) bool {
	for _, h := range per {
		if h.pin.Defined() {
			return true
		}
	}
	return false
}
