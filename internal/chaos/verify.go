package chaos

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Figure is one `name value` line of the report. MustBeZero figures break
// the run when they are not.
type Figure struct {
	Name       string
	Value      string
	MustBeZero bool
}

// Result is a run's figures, its fault schedule as it ran, and every
// invariant that broke.
type Result struct {
	Figures  []Figure
	Schedule []Event
	// Broken lists, in words, every invariant that did not hold.
	Broken []string
	// Notes explain figures (where the slowest request went, …).
	Notes []string
	// Tail is /v1/id's open-loop latency per window, the steady load's
	// first (tail.go).
	Tail   []TailWindow
	OutDir string
}

// OK reports whether every invariant held.
func (res *Result) OK() bool { return len(res.Broken) == 0 }

// Figure returns the value of the named figure ("" if none).
func (res *Result) Figure(name string) string {
	for _, f := range res.Figures {
		if f.Name == name {
			return f.Value
		}
	}
	return ""
}

// Write prints the figures, one `name value` line each, then the fault
// schedule, then what broke.
func (res *Result) Write(w io.Writer) error {
	bw := bufio.NewWriter(w)
	for _, f := range res.Figures {
		fmt.Fprintf(bw, "%s %s\n", f.Name, f.Value)
	}
	fmt.Fprintf(bw, "\n# fault schedule as it ran (offset from the start of the load, fault, target, outcome)\n")
	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
	for _, e := range res.Schedule {
		fmt.Fprintf(tw, "+%s\t%s\t%s\t%s\n", e.At.Round(100*time.Millisecond), e.Fault, e.Target, e.Outcome)
	}
	tw.Flush()
	res.writeTail(bw)
	for _, n := range res.Notes {
		fmt.Fprintf(bw, "\n# %s", n)
	}
	if len(res.Notes) > 0 {
		fmt.Fprintln(bw)
	}
	if len(res.Broken) == 0 {
		fmt.Fprintf(bw, "\n# every invariant held\n")
	} else {
		fmt.Fprintf(bw, "\n# FAILED: %d invariant(s) broke\n", len(res.Broken))
		for _, b := range res.Broken {
			fmt.Fprintf(bw, "# - %s\n", b)
		}
	}
	if res.OutDir != "" {
		fmt.Fprintf(bw, "# logs and report: %s\n", res.OutDir)
	}
	return bw.Flush()
}

func (res *Result) add(name string, v any, mustBeZero bool) {
	s := fmt.Sprint(v)
	res.Figures = append(res.Figures, Figure{Name: name, Value: s, MustBeZero: mustBeZero})
	if mustBeZero && s != "0" {
		res.Broken = append(res.Broken, fmt.Sprintf("%s is %s, must be 0", name, s))
	}
}

// verify runs every check over what the load collected. Call it once every
// client has finished.
func (r *run) verify() *Result {
	res := &Result{OutDir: r.cfg.OutDir}
	r.mu.Lock()
	recs := append([]*recorder(nil), r.recorders...)
	res.Schedule = append([]Event(nil), r.events...)
	r.mu.Unlock()
	t := r.totals()

	// Every ID, sorted: equal neighbours are duplicates.
	total := 0
	for _, rec := range recs {
		total += len(rec.ids)
	}
	all := make([]int64, 0, total)
	decreasing := 0
	var decExamples []string
	for _, rec := range recs {
		all = append(all, rec.ids...)
		if rec.kind == kindJunk {
			continue
		}
		for i := 1; i < len(rec.ids); i++ {
			if rec.ids[i] <= rec.ids[i-1] {
				decreasing++
				if len(decExamples) < 5 {
					decExamples = append(decExamples, fmt.Sprintf("%s: %d after %d", rec.in.name, rec.ids[i], rec.ids[i-1]))
				}
			}
		}
	}
	slices.Sort(all)
	dups := 0
	var dupIDs []int64
	for i := 1; i < len(all); i++ {
		if all[i] == all[i-1] {
			dups++
			if len(dupIDs) < 5 {
				dupIDs = append(dupIDs, all[i])
			}
		}
	}
	all = nil
	shared, sharedEx := r.sharedWorkerMs(recs)

	// Tickets, per sequence.
	tickets, dupTickets := 0, 0
	var dupTicketEx []string
	for i, s := range sequences {
		var vals []int64
		for _, rec := range recs {
			if rec.tickets != nil {
				vals = append(vals, rec.tickets[i]...)
			}
		}
		tickets += len(vals)
		slices.Sort(vals)
		for k := 1; k < len(vals); k++ {
			if vals[k] == vals[k-1] {
				dupTickets++
				if len(dupTicketEx) < 5 {
					dupTicketEx = append(dupTicketEx, fmt.Sprintf("%s %d", s.name, vals[k]))
				}
			}
		}
	}

	panics, switches, unexpected := 0, int64(0), 0
	var panicEx []string
	for _, in := range r.allInstances() {
		in.mu.Lock()
		p, sw := in.panics, in.switches
		in.mu.Unlock()
		switches += sw
		recovered, crashed := logPanics(in.logPath)
		if n := max(int(p), recovered) + crashed; n > 0 {
			panics += n
			panicEx = append(panicEx, fmt.Sprintf("%s: %d (see %s)", in.name, n, in.logPath))
		}
		if in.ready() && in.exited() {
			doom, exit := in.doomAt.Load(), in.exitAt.Load()
			if doom == 0 || exit < doom {
				unexpected++
				r.breakf("%s exited by itself (%v): %s", in.name, in.waitErr, lastLogLine(in.logPath))
			}
		}
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	res.add("ids_collected", total, false)
	res.add("duplicates", dups, true)
	res.add("decreasing_per_instance", decreasing, true)
	res.add("failed_id_requests_live", t.failedLive, true)
	res.add("failed_id_requests_killed", t.failedKilled, false)
	res.add("tickets_collected", tickets, false)
	res.add("duplicate_tickets", dupTickets, true)
	res.add("failed_ticket_requests_live", t.ticketLive, true)
	res.add("failed_ticket_requests_killed", t.ticketKilled, false)
	res.add("panics", panics, true)
	res.add("worker_switches", switches, false)
	res.add("max_id_latency_ms", fmt.Sprintf("%.1f", float64(t.maxLatency.Microseconds())/1000), false)
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d.Microseconds())/1000) }
	res.add("id_latency_p50_ms", ms(t.latency.quantile(0.50)), false)
	res.add("id_latency_p99_ms", ms(t.latency.quantile(0.99)), false)
	res.add("id_latency_p999_ms", ms(t.latency.quantile(0.999)), false)
	res.add("ticket_latency_p50_ms", ms(t.ticketLatency.quantile(0.50)), false)
	res.add("ticket_latency_p99_ms", ms(t.ticketLatency.quantile(0.99)), false)
	res.add("worker_ms_shared", shared, true)
	res.add("racing_same_worker", r.raceSame, true)
	res.add("junk_5xx", r.junk5xx, true)
	res.add("junk_left_unready", r.junkUnready, true)
	res.add("unexpected_exits", unexpected, true)
	res.add("failed_starts", r.failedStarts, true)
	res.add("id_requests", t.requests, false)
	res.add("ticket_requests", t.ticketRequests, false)
	res.add("ticketd_processes", len(r.instances), false)
	res.add("faults", len(r.events)-1, false)
	res.add("racing_pairs", r.racePairs, false)
	res.add("clock_behind_floor_used", r.clockFloorUsed, false)
	res.add("junk_requests", r.junkRequests, false)
	res.add("disk_full_faults", r.diskFulls, false)
	res.add("disk_full_samples_out", r.diskSamplesOut, false)
	res.add("disk_full_samples_in_rotation", r.diskSamplesUp, true)
	res.add("duration_s", fmt.Sprintf("%.0f", time.Since(r.t0).Seconds()), false)
	res.add("ticket_servers", r.cfg.Servers, false)
	res.add("leases_per_server_at_start", strings.Trim(strings.Join(strings.Fields(fmt.Sprint(r.startLeases)), ","), "[]"), false)
	res.add("seed", r.cfg.Seed, false)
	r.addTail(res, recs)
	if total == 0 {
		res.Broken = append(res.Broken, "no ID was collected")
	}

	for _, id := range dupIDs {
		p, _ := r.layout.Decompose(id)
		res.Broken = append(res.Broken, fmt.Sprintf("duplicate ID %d (ms %d, datacenter %d, worker %d, sequence %d), issued by %s",
			id, p.UnixMs, p.Datacenter, p.Worker, p.Sequence, strings.Join(owners(recs, id), ", ")))
	}
	for _, e := range decExamples {
		res.Broken = append(res.Broken, "decreasing: "+e)
	}
	for _, e := range sharedEx {
		res.Broken = append(res.Broken, "worker millisecond shared: "+e)
	}
	for _, e := range dupTicketEx {
		res.Broken = append(res.Broken, "duplicate ticket: "+e)
	}
	for _, e := range panicEx {
		res.Broken = append(res.Broken, "panics: "+e)
	}
	if t.maxLatencyOf != "" {
		res.Notes = append(res.Notes, fmt.Sprintf("max_id_latency_ms: %s", t.maxLatencyOf))
	}
	res.Notes = append(res.Notes, r.repairNotes...)
	for _, e := range t.liveErrors {
		res.Broken = append(res.Broken, "failed live request: "+e)
	}
	res.Broken = append(res.Broken, r.broken...)
	return res
}

// sharedWorkerMs counts (datacenter, worker, millisecond) triples that IDs of
// more than one instance carry. The lease floor makes every holder of a
// worker ID start above every timestamp of the one before, so no two
// processes ever issue in the same millisecond on one worker ID: a stricter
// check than equal IDs, which also needs the same sequence number.
func (r *run) sharedWorkerMs(recs []*recorder) (int, []string) {
	seqBits := r.layout.SequenceBits
	type keyInst struct {
		key  int64
		inst int
	}
	per := map[*instance][]int64{}
	for _, rec := range recs {
		keys := per[rec.in]
		n := len(keys)
		for _, id := range rec.ids {
			// A client's IDs mostly come in order: skip repeats at once.
			if k := id >> seqBits; len(keys) == n || keys[len(keys)-1] != k {
				keys = append(keys, k)
			}
		}
		per[rec.in] = keys
	}
	var all []keyInst
	for in, keys := range per {
		slices.Sort(keys)
		keys = slices.Compact(keys)
		for _, k := range keys {
			all = append(all, keyInst{k, in.id})
		}
	}
	slices.SortFunc(all, func(a, b keyInst) int {
		if a.key != b.key {
			if a.key < b.key {
				return -1
			}
			return 1
		}
		return a.inst - b.inst
	})
	shared := 0
	var ex []string
	for i := 1; i < len(all); i++ {
		if all[i].key == all[i-1].key && (i < 2 || all[i-1].key != all[i-2].key) {
			shared++
			if len(ex) < 5 {
				p, _ := r.layout.Decompose(all[i].key << seqBits)
				ex = append(ex, fmt.Sprintf("ms %d worker %d: t%d and t%d", p.UnixMs, p.Worker, all[i-1].inst, all[i].inst))
			}
		}
	}
	return shared, ex
}

func owners(recs []*recorder, id int64) []string {
	seen := map[string]bool{}
	var out []string
	for _, rec := range recs {
		for _, v := range rec.ids {
			if v == id && !seen[rec.in.name] {
				seen[rec.in.name] = true
				out = append(out, rec.in.name)
			}
		}
	}
	return out
}

// logPanics counts, in a ticketd log, recovered handler panics and crashes
// (a Go panic or fatal error that ended the process, or a data race report).
func logPanics(path string) (recovered, crashed int) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.Contains(l, "panic in handler"):
			recovered++
		case strings.HasPrefix(l, "panic: "), strings.HasPrefix(l, "fatal error: "), strings.HasPrefix(l, "WARNING: DATA RACE"):
			crashed++
		}
	}
	return recovered, crashed
}

// writeFiles saves report.txt and instances.txt in the run folder.
func (res *Result) writeFiles(r *run) error {
	f, err := os.Create(filepath.Join(r.cfg.OutDir, "report.txt"))
	if err != nil {
		return err
	}
	if err := res.Write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "instance\trole\tclock\tstarted\tready\tstopped\texit\tworkers\tids\tlog\n")
	r.mu.Lock()
	recs := append([]*recorder(nil), r.recorders...)
	r.mu.Unlock()
	for _, in := range r.allInstances() {
		ids := 0
		for _, rec := range recs {
			if rec.in == in {
				ids += len(rec.ids)
			}
		}
		at := func(ns int64) string {
			if ns == 0 {
				return "-"
			}
			return "+" + r.since(time.Unix(0, ns)).String()
		}
		in.mu.Lock()
		workers := fmt.Sprint(in.workers)
		in.mu.Unlock()
		exit := "-"
		if in.exited() {
			exit = fmt.Sprint(in.cmd.ProcessState.ExitCode())
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", in.name, in.role, in.offset, "+"+r.since(in.startAt).String(),
			at(in.readyAt.Load()), at(in.doomAt.Load()), exit, workers, ids, filepath.Base(in.logPath))
	}
	tw.Flush()
	return os.WriteFile(filepath.Join(r.cfg.OutDir, "instances.txt"), []byte(b.String()), 0o644)
}
