package main

// The open-loop tail bench's Go side (bench/tail.sh drives it, with vegeta
// doing the load):
//
//	benchtool tailrate -json CAP.json -fraction F
//	                      print the constant rate to run at: F of the
//	                      throughput in vegeta's JSON report CAP.json (the bare
//	                      server's capacity), in whole hundreds
//	benchtool tailround -dir D -label L -target T -round N -json R.json
//	                      read `vegeta encode --to csv` on stdin: every
//	                      successful request's latency kept in D/L-T-N.lat
//	                      (ns, one a line), one line of the run's figures
//	                      appended to D/runs.txt and printed
//	benchtool tailreport -dir OUT
//	                      read OUT/raw/tail (meta.txt, runs.txt, *.lat), write
//	                      OUT/tail.txt (rows tail_*), tail.md, tail.dat, tail.gp

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// tailPcts are the percentiles the tail bench reports, by their row names;
// 100 is the max.
var tailPcts = []struct {
	name, title string
	p           float64
}{
	{"p50", "p50", 50}, {"p99", "p99", 99}, {"p999", "p99.9", 99.9}, {"p9999", "p99.99", 99.99}, {"max", "max", 100},
}

// tailEndpoints are the endpoints measured beside the bare server, in the
// report's order, by the labels bench/tail.sh gives their runs.
var tailEndpoints = []struct{ label, title string }{
	{"id", "/v1/id"}, {"ids", "/v1/ids?n=N"}, {"tickets", "/v1/tickets/NAME (block 1000)"},
}

// pctOf is the p-th percentile of sorted by nearest rank: the smallest value
// that at least p % of them do not exceed (p = 100: the max); 0 for none.
func pctOf(sorted []int64, p float64) int64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	// Less a hair: 99.9 % of 10,000 is 9990.000000000002 in floating point.
	rank := int(math.Ceil(p/100*float64(n) - 1e-9))
	return sorted[min(max(rank, 1), n)-1]
}

// vegetaReport is what the tail bench reads of `vegeta report -type json`.
type vegetaReport struct {
	Requests   int64   `json:"requests"`
	Rate       float64 `json:"rate"`
	Throughput float64 `json:"throughput"`
	Success    float64 `json:"success"`
	Latencies  struct {
		P99 int64 `json:"99th"`
	} `json:"latencies"`
}

func readVegetaReport(path string) (vegetaReport, error) {
	var r vegetaReport
	b, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

func runTailRate(args []string) error {
	fs := flag.NewFlagSet("tailrate", flag.ContinueOnError)
	path := fs.String("json", "", "vegeta's JSON report of the capacity run")
	fraction := fs.Float64("fraction", 0.1, "share of the capacity to run at")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *fraction <= 0 || *fraction > 1 {
		return fmt.Errorf("tailrate: -fraction %v: want above 0, at most 1", *fraction)
	}
	r, err := readVegetaReport(*path)
	if err != nil {
		return err
	}
	rate := math.Floor(r.Throughput**fraction/100) * 100
	if rate < 100 {
		return fmt.Errorf("tailrate: %s: a capacity of %.0f requests/s leaves %.0f at %v of it: want 100 or more", *path, r.Throughput, rate, *fraction)
	}
	fmt.Printf("%.0f\n", rate)
	return nil
}

// readVegetaCSV reads `vegeta encode --to csv`: the latencies (ns) of the
// answers with a 2xx status, and how many were not 2xx or failed outright.
func readVegetaCSV(r io.Reader) (lat []int64, non2xx, errs int, err error) {
	cr := csv.NewReader(bufio.NewReaderSize(r, 1<<16))
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return lat, non2xx, errs, nil
		}
		if err != nil {
			return nil, 0, 0, err
		}
		// timestamp, code, latency (ns), bytes out, bytes in, error, …
		if len(rec) < 6 {
			return nil, 0, 0, fmt.Errorf("vegeta csv: %d fields in a line, want 6 or more", len(rec))
		}
		code, err1 := strconv.Atoi(rec[1])
		ns, err2 := strconv.ParseInt(rec[2], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, 0, 0, fmt.Errorf("vegeta csv: bad code %q or latency %q", rec[1], rec[2])
		}
		switch {
		case rec[5] != "" || code == 0:
			errs++
		case code/100 != 2:
			non2xx++
		default:
			lat = append(lat, ns)
		}
	}
}

func runTailRound(args []string) error {
	fs := flag.NewFlagSet("tailround", flag.ContinueOnError)
	dir := fs.String("dir", "", "folder of the runs (runs.txt, *.lat)")
	label := fs.String("label", "", "the endpoint: id, ids or tickets")
	target := fs.String("target", "", "ticketd or bare")
	round := fs.Int("round", 0, "the round, from 1")
	report := fs.String("json", "", "vegeta's JSON report of the same run")
	waits := fs.Int("waits", -1, "calls that waited for a claim during the run (-1: not counted)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || *label == "" || *target == "" || *round < 1 {
		return errors.New("tailround: want -dir, -label, -target and -round")
	}
	vr, err := readVegetaReport(*report)
	if err != nil {
		return err
	}
	lat, non2xx, errs, err := readVegetaCSV(os.Stdin)
	if err != nil {
		return err
	}
	if int64(len(lat)+non2xx+errs) != vr.Requests {
		return fmt.Errorf("tailround: %d results in the csv, %d in vegeta's report", len(lat)+non2xx+errs, vr.Requests)
	}
	var b strings.Builder
	for _, v := range lat {
		b.WriteString(strconv.FormatInt(v, 10))
		b.WriteByte('\n')
	}
	if err := os.WriteFile(filepath.Join(*dir, latFile(*label, *target, *round)), []byte(b.String()), 0o644); err != nil {
		return err
	}
	slices.Sort(lat)
	line := fmt.Sprintf("label=%s target=%s round=%d requests=%d ok=%d non2xx=%d errors=%d rate=%.1f vegeta_p99_us=%d",
		*label, *target, *round, vr.Requests, len(lat), non2xx, errs, vr.Rate, vr.Latencies.P99/1000)
	for _, p := range tailPcts {
		line += fmt.Sprintf(" %s_us=%d", p.name, pctOf(lat, p.p)/1000)
	}
	if *waits >= 0 {
		line += fmt.Sprintf(" waits=%d", *waits)
	}
	f, err := os.OpenFile(filepath.Join(*dir, "runs.txt"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(f, line); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Println(line)
	return nil
}

func latFile(label, target string, round int) string {
	return fmt.Sprintf("%s-%s-%d.lat", label, target, round)
}

func readLat(path string) ([]int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []int64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		v, err := strconv.ParseInt(sc.Text(), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %q: %w", path, sc.Text(), err)
		}
		out = append(out, v)
	}
	return out, sc.Err()
}

// tailSide is one target (ticketd or bare) of one endpoint over its rounds.
type tailSide struct {
	runs   []run   // by round
	all    []int64 // every kept latency of every round, sorted (ns)
	failed float64 // not 2xx, or no answer
	reqs   float64
	waits  float64 // calls that waited for a claim (-1: not counted)
}

func (s tailSide) pct(p float64) float64 { return float64(pctOf(s.all, p)) / 1000 } // µs

// tailEndpoint is one endpoint's ticketd against the bare server.
type tailEndpoint struct {
	label, title string
	t, b         tailSide
}

// roundRatios are ticketd ÷ bare of one percentile, round by round.
func (e *tailEndpoint) roundRatios(name string) []float64 {
	var out []float64
	for i := range min(len(e.t.runs), len(e.b.runs)) {
		if b := e.b.runs[i].f[name+"_us"]; b > 0 {
			out = append(out, e.t.runs[i].f[name+"_us"]/b)
		}
	}
	return out
}

func readTailSide(dir string, runs []run, label, target string) (tailSide, error) {
	s := tailSide{waits: -1}
	for _, r := range runs {
		if r.label != label || r.target != target {
			continue
		}
		lat, err := readLat(filepath.Join(dir, latFile(label, target, r.round)))
		if err != nil {
			return s, err
		}
		s.all = append(s.all, lat...)
		s.runs = append(s.runs, r)
		s.failed += r.f["non2xx"] + r.f["errors"]
		s.reqs += r.f["requests"]
		if w, ok := r.f["waits"]; ok {
			s.waits = max(s.waits, 0) + w
		}
	}
	slices.SortFunc(s.runs, func(a, b run) int { return a.round - b.round })
	slices.Sort(s.all)
	return s, nil
}

func runTailReport(args []string) error {
	fs := flag.NewFlagSet("tailreport", flag.ContinueOnError)
	dir := fs.String("dir", "bench/out", "output folder (raw measurements in DIR/raw/tail)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	raw := filepath.Join(*dir, "raw", "tail")
	meta, err := readKV(filepath.Join(raw, "meta.txt"))
	if err != nil {
		return err
	}
	runs, err := readRunLines(filepath.Join(raw, "runs.txt"))
	if err != nil {
		return err
	}
	var eps []*tailEndpoint
	for _, o := range tailEndpoints {
		e := &tailEndpoint{label: o.label, title: o.title}
		if e.t, err = readTailSide(raw, runs, o.label, "ticketd"); err != nil {
			return err
		}
		if e.b, err = readTailSide(raw, runs, o.label, "bare"); err != nil {
			return err
		}
		if len(e.t.runs) == 0 && len(e.b.runs) == 0 {
			continue // left out (BENCH_TAIL_ENDPOINTS)
		}
		if len(e.t.runs) == 0 || len(e.b.runs) == 0 || len(e.t.all) == 0 || len(e.b.all) == 0 {
			return fmt.Errorf("tailreport: %s: %d ticketd runs and %d bare runs, %d and %d latencies", o.label, len(e.t.runs), len(e.b.runs), len(e.t.all), len(e.b.all))
		}
		if o.label == "ids" {
			e.title = "/v1/ids?n=" + meta["ids_n"]
		}
		eps = append(eps, e)
	}
	if len(eps) == 0 {
		return fmt.Errorf("tailreport: no runs in %s", raw)
	}
	rows, failed := tailRows(meta, eps)
	if err := os.WriteFile(filepath.Join(*dir, "tail.txt"), []byte(rows.withTargets(failed)), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(*dir, "tail.md"), []byte(tailMarkdown(meta, eps, rows, failed)), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(*dir, "tail.dat"), []byte(tailPlotData(eps)), 0o644); err != nil {
		return err
	}
	gp := strings.NewReplacer("@PNG@", filepath.Join(*dir, "tail.png"),
		"@TITLE@", fmt.Sprintf("open-loop latency by percentile: ticketd and the bare fasthttp server at %s requests/s (vegeta), %s s × %s rounds each, %s-core VM, %s",
			meta["rate_per_s"], meta["duration_s"], meta["rounds"], meta["cores"], strings.SplitN(meta["date"], "T", 2)[0]),
		"@N@", strconv.Itoa(len(eps)), "@PLOTS@", tailPlots(eps, filepath.Join(*dir, "tail.dat"))).Replace(tailGnuplot)
	return os.WriteFile(filepath.Join(*dir, "tail.gp"), []byte(gp), 0o644)
}

// tailTargetP999 is the bound on /v1/id: p99.9 at most 1.2× the
// bare server's at the same rate.
const tailTargetP999 = 1.2

// tailRows are the rows of tail.txt, and the failed requests of ticketd.
func tailRows(meta map[string]string, eps []*tailEndpoint) (*summary, float64) {
	var s summary
	for _, k := range []string{"capacity_per_s", "fraction", "rate_per_s", "duration_s", "rounds"} {
		v, _ := strconv.ParseFloat(meta[k], 64)
		s.add("tail_"+k, v)
	}
	var failed float64
	for _, e := range eps {
		pre := "tail_" + e.label
		s.add(pre+"_requests", e.t.reqs)
		for _, p := range tailPcts {
			s.add(fmt.Sprintf("%s_%s_us", pre, p.name), math.Round(e.t.pct(p.p)))
			s.add(fmt.Sprintf("%s_bare_%s_us", pre, p.name), math.Round(e.b.pct(p.p)))
			s.add(fmt.Sprintf("%s_%s_ratio", pre, p.name), round3(e.t.pct(p.p)/e.b.pct(p.p)))
			rr := e.roundRatios(p.name)
			s.add(fmt.Sprintf("%s_%s_ratio_median", pre, p.name), round3(median(rr)))
			s.add(fmt.Sprintf("%s_%s_ratio_min", pre, p.name), round3(slices.Min(rr)))
			s.add(fmt.Sprintf("%s_%s_ratio_max", pre, p.name), round3(slices.Max(rr)))
		}
		s.add(pre+"_failed", e.t.failed)
		s.add(pre+"_bare_failed", e.b.failed)
		if e.t.waits >= 0 {
			// A /v1/tickets call that waited for a claim waited for a
			// durable commit: the tail's first suspect, counted.
			s.add(pre+"_waits", e.t.waits)
		}
		failed += e.t.failed
	}
	return &s, failed
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// tailTargets are the tail bench's target lines (tail_target_*: the figure,
// its bound, met or missed), as bench/far.sh writes its own.
func tailTargets(s *summary, failed float64) []string {
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "missed"
	}
	var out []string
	if v, ok := s.vals["tail_id_p999_ratio"]; ok {
		out = append(out, fmt.Sprintf("tail_target_id_p999_ratio %s <= %s %s", num(v), num(tailTargetP999), verdict(v <= tailTargetP999)))
	}
	out = append(out, fmt.Sprintf("tail_target_failed %s <= 0 %s", num(failed), verdict(failed == 0)))
	return out
}

func (s *summary) withTargets(failed float64) string {
	return s.String() + strings.Join(tailTargets(s, failed), "\n") + "\n"
}

func tailMarkdown(meta map[string]string, eps []*tailEndpoint, s *summary, failed float64) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("# Open-loop latency beside the bare fasthttp server\n\n")
	w("%s, %s cores (%s), Go %s, vegeta %s, commit %s; load %s before, %s after. ", meta["date"], meta["cores"], meta["cpu"],
		strings.TrimPrefix(meta["go"], "go"), meta["vegeta"], meta["commit"], meta["load_before"], meta["load_after"])
	w("The bare server's capacity, `vegeta attack -rate 0 -max-workers %s` for %s s: %s requests/s; every run below at a constant **%s requests/s** "+
		"(%s of it) on at most %s connections, whatever the answers' latency (vegeta sends on its own clock; a request that finds every connection busy waits for one, and the wait counts in its latency), %s s a run after %s s of warm-up per endpoint and server, "+
		"%s rounds alternating ticketd and the bare server (T B T B …). Percentiles over every latency kept (`vegeta encode --to csv`, successful requests) of all of a side's rounds; "+
		"ratios ticketd ÷ bare of those, then the median and range of the per-round ratios.\n\n",
		meta["capacity_conns"], meta["capacity_s"], meta["capacity_per_s"], meta["rate_per_s"], meta["fraction"], meta["conns"], meta["duration_s"], meta["warmup_s"], meta["rounds"])
	w("| endpoint | | p50 | p99 | p99.9 | p99.99 | max | requests | failed |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, e := range eps {
		w("| `%s` | ticketd |", e.title)
		for _, p := range tailPcts {
			w(" %s |", us(e.t.pct(p.p)))
		}
		w(" %s | %s |\n", num(e.t.reqs), num(e.t.failed))
		w("| | bare fasthttp |")
		for _, p := range tailPcts {
			w(" %s |", us(e.b.pct(p.p)))
		}
		w(" %s | %s |\n", num(e.b.reqs), num(e.b.failed))
		w("| | ticketd ÷ bare |")
		for _, p := range tailPcts {
			w(" **%.2f×** |", e.t.pct(p.p)/e.b.pct(p.p))
		}
		w(" | |\n| | per round: median (min–max) |")
		for _, p := range tailPcts {
			rr := e.roundRatios(p.name)
			w(" %.2f (%.2f–%.2f) |", median(rr), slices.Min(rr), slices.Max(rr))
		}
		w(" | |\n")
	}
	w("\nRounds (ticketd / bare, p99.9 and p99.99; for `/v1/tickets`, ticketd's calls that waited for a claim):\n\n| endpoint | round | ticketd p99.9 | bare p99.9 | ticketd p99.99 | bare p99.99 | sent at (ticketd, bare) | waited for a claim |\n|---|---|---|---|---|---|---|---|\n")
	for _, e := range eps {
		for i := range min(len(e.t.runs), len(e.b.runs)) {
			t, bb := e.t.runs[i].f, e.b.runs[i].f
			waited := "—"
			if v, ok := t["waits"]; ok {
				waited = num(v)
			}
			w("| `%s` | %d | %s | %s | %s | %s | %.0f, %.0f /s | %s |\n", e.title, e.t.runs[i].round, us(t["p999_us"]), us(bb["p999_us"]),
				us(t["p9999_us"]), us(bb["p9999_us"]), t["rate"], bb["rate"], waited)
		}
	}
	w("\n")
	for _, t := range tailTargets(s, failed) {
		w("    %s\n", t)
	}
	w("\n![open-loop latency by percentile](tail.png)\n")
	return b.String()
}

// tailPlotData is tail.dat: per endpoint (a gnuplot index, in eps' order)
// rows of x = 1/(1-p), ticketd's and the bare server's latency at p in ms,
// from p = 0 in twentieths of a decade of 1/(1-p) up to the largest p both
// sides' counts resolve; then the max of each at x = their count.
func tailPlotData(eps []*tailEndpoint) string {
	var b strings.Builder
	for i, e := range eps {
		if i > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "# %s: 1/(1-p) ticketd_ms bare_ms\n", e.title)
		n := min(len(e.t.all), len(e.b.all))
		for k := 0; ; k++ {
			x := math.Pow(10, float64(k)/20)
			if x > float64(n) {
				break
			}
			p := 100 * (1 - 1/x)
			fmt.Fprintf(&b, "%.4g %.4f %.4f\n", x, e.t.pct(p)/1000, e.b.pct(p)/1000)
		}
		fmt.Fprintf(&b, "%d %.4f %.4f\n", n, e.t.pct(100)/1000, e.b.pct(100)/1000)
	}
	return b.String()
}

// tailPlots are the panels of tail.png, one per endpoint, from dat.
func tailPlots(eps []*tailEndpoint, dat string) string {
	var b strings.Builder
	for i, e := range eps {
		fmt.Fprintf(&b, "set title \"%s\"\n", e.title)
		fmt.Fprintf(&b, "plot %q index %d using 1:2 with linespoints pt 7 ps 0.4 lw 2 lc rgb \"#1f77b4\" title \"ticketd\", \\\n", dat, i)
		fmt.Fprintf(&b, "     \"\" index %d using 1:3 with linespoints pt 7 ps 0.4 lw 2 lc rgb \"#7f7f7f\" title \"bare fasthttp\"\n", i)
	}
	return b.String()
}

// tailGnuplot draws tail.png, HdrHistogram's way: latency against the
// percentile, on a log scale of 1/(1-p) so that every nine gets the same
// room; one panel per endpoint.
const tailGnuplot = `set terminal pngcairo size 1500,520 font "DejaVu Sans,10"
set output "@PNG@"
set multiplot layout 1,@N@ title "@TITLE@" font ",11"
set logscale x
set logscale y
set xrange [1:*]
set xtics ("50%%" 2, "90%%" 10, "99%%" 100, "99.9%%" 1000, "99.99%%" 10000, "99.999%%" 100000)
set grid xtics ytics mytics lc rgb "#dddddd"
set xlabel "percentile"
set ylabel "latency (ms, log scale)"
set format y "%g"
set key top left font ",9"
@PLOTS@unset multiplot
`
