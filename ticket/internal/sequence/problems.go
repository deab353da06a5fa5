package sequence

// The kinds of SequenceProblem.
const (
	// ProblemRedefined: the catalog no longer matches the definition in use
	// or a pin (a sequence redefined behind the triggers' back, e.g. by
	// TRUNCATE and INSERT). Refused.
	ProblemRedefined = "redefined"
	// ProblemDiffers: the servers define the sequence differently. Refused.
	ProblemDiffers = "differs"
	// ProblemSharedTable: two sequences name one counter table. Both refused.
	ProblemSharedTable = "shared_table"
	// ProblemMissing: some servers lack the sequence (a create that did not
	// reach every server). Served by the others; reported.
	ProblemMissing = "missing"
	// ProblemNoKey: a public sequence whose key this ticketd does not hold
	// (no -id-key-file, or a key file without the key whose check value
	// the sequence names). Refused until the key is added (SIGHUP), never
	// served with its counter's raw values.
	ProblemNoKey = "no_key"
	// ProblemBelowStart: a public sequence that release 3 made with a start
	// (sequence create -public -start N): its permutation covers the whole
	// range, so about N/2^bits of its values fall at or below N, where
	// the numbers it replaced are. Served, with the permutation it always
	// had (another could repeat a value it handed out); reported with what
	// to do (public.go).
	ProblemBelowStart = "below_start"
)

// ProblemKinds lists every kind of SequenceProblem.
var ProblemKinds = []string{ProblemRedefined, ProblemDiffers, ProblemSharedTable, ProblemMissing, ProblemNoKey, ProblemBelowStart}

// Problem is a sequence the servers' catalogs disagree on, or that
// was redefined since ticketd served it.
type Problem struct {
	Name string
	Kind string // one of ProblemKinds
	// Refused: no value of it is handed out until the catalog is fixed and
	// ticketd restarted (until the key is added, for ProblemNoKey). Not for
	// ProblemMissing and ProblemBelowStart, which are served.
	Refused bool
	Detail  string // what is wrong, naming both definitions; what to do
}

// recentProblems is how many problems SequenceProblems keeps for its list.
const recentProblems = 20

// problemBook is every current problem, by name, with counts by kind and the
// names most recently found: what SequenceProblems reports costs the same
// whatever the catalog's size.
type problemBook struct {
	byName map[string]Problem
	counts map[string]int
	recent []string // newest last, at most recentProblems, may name solved ones
}

func (b *problemBook) init() {
	b.byName = map[string]Problem{}
	b.counts = map[string]int{}
}

// set records pr; it reports false when that very problem was known.
func (b *problemBook) set(pr Problem) bool {
	old, ok := b.byName[pr.Name]
	if ok && old == pr {
		return false
	}
	if ok {
		b.counts[old.Kind]--
	}
	b.byName[pr.Name] = pr
	b.counts[pr.Kind]++
	for i, n := range b.recent {
		if n == pr.Name {
			b.recent = append(b.recent[:i], b.recent[i+1:]...)
			break
		}
	}
	if len(b.recent) == recentProblems {
		b.recent = b.recent[1:]
	}
	b.recent = append(b.recent, pr.Name)
	return true
}

func (b *problemBook) clear(name string) {
	if old, ok := b.byName[name]; ok {
		b.counts[old.Kind]--
		delete(b.byName, name)
	}
}

// SequenceProblems returns how many sequences have a problem, by kind (every
// kind listed, 0 when none), and up to limit of them, the most recently found
// first. Its cost does not depend on the catalog's size.
func (sq *Sequences) Problems(limit int) (counts map[string]int, list []Problem) {
	c := &sq.cat
	c.mu.Lock()
	defer c.mu.Unlock()
	counts = make(map[string]int, len(ProblemKinds))
	for _, k := range ProblemKinds {
		counts[k] = c.problems.counts[k]
	}
	for i := len(c.problems.recent) - 1; i >= 0 && len(list) < limit; i-- {
		if pr, ok := c.problems.byName[c.problems.recent[i]]; ok {
			list = append(list, pr)
		}
	}
	return counts, list
}
