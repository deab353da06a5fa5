package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// ceiling is one worker ID's limit: 4096 IDs per millisecond.
const ceiling = 4_096_000.0

// run is one measured load run: a line of raw/http.txt.
type run struct {
	label, target string
	round, n      int
	f             map[string]float64 // requests, duration_us, p50_us, p99_us, errors, non2xx…
}

func (r run) rps() float64 { return r.f["requests"] / (r.f["duration_us"] / 1e6) }

// side is one target (ticketd, bare, raw) of one endpoint, over its rounds.
type side struct {
	runs               []run
	rps                float64 // all rounds' requests over all rounds' time
	p50, p90, p99      float64 // the median of the rounds' percentiles
	errors, non2xx     float64
	roundRPS, roundP99 []float64
}

func newSide(runs []run) side {
	s := side{runs: runs}
	var req, us float64
	var p50, p90 []float64
	for _, r := range runs {
		req += r.f["requests"]
		us += r.f["duration_us"]
		p50 = append(p50, r.f["p50_us"])
		p90 = append(p90, r.f["p90_us"])
		s.errors += r.f["errors"]
		s.non2xx += r.f["non2xx"]
		s.roundRPS = append(s.roundRPS, r.rps())
		s.roundP99 = append(s.roundP99, r.f["p99_us"])
	}
	if us > 0 {
		s.rps = req / (us / 1e6)
	}
	s.p50, s.p90, s.p99 = median(p50), median(p90), median(s.roundP99)
	return s
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	c := slices.Clone(v)
	slices.Sort(c)
	if len(c)%2 == 1 {
		return c[len(c)/2]
	}
	return (c[len(c)/2-1] + c[len(c)/2]) / 2
}

// endpoint is one A/B comparison: ticketd (B) against its yardstick (A).
type endpoint struct {
	label, title, yardstick string
	n                       int
	a, b                    side
}

// roundRatios are B/A per round, each B run measured right after its A run:
// their spread shows how noisy the machine was, their median is the figure.
func (e endpoint) roundRatios() []float64 { return ratios(e.b.roundRPS, e.a.roundRPS) }

// p99Ratios are B/A of the p99s, per round.
func (e endpoint) p99Ratios() []float64 { return ratios(e.b.roundP99, e.a.roundP99) }

func (e endpoint) rpsRatio() float64 { return median(e.roundRatios()) }
func (e endpoint) p99Ratio() float64 { return median(e.p99Ratios()) }

func ratios(b, a []float64) []float64 {
	var out []float64
	for i := range min(len(a), len(b)) {
		out = append(out, b[i]/a[i])
	}
	return out
}

// readPair gathers the runs of one A/B comparison: label's runs of target
// a (the yardstick) against those of target b.
func readPair(runs []run, label, title, a, b string) (*endpoint, error) {
	var as, bs []run
	n := 1
	for _, r := range runs {
		if r.label != label {
			continue
		}
		n = r.n
		switch r.target {
		case a:
			as = append(as, r)
		case b:
			bs = append(bs, r)
		}
	}
	if len(as) == 0 || len(bs) == 0 {
		return nil, fmt.Errorf("report: endpoint %s: %d %s runs and %d %s runs", label, len(as), a, len(bs), b)
	}
	return &endpoint{label: label, title: title, yardstick: a, n: n, a: newSide(as), b: newSide(bs)}, nil
}

// variantOrder: ticketd against plain ticketd of the same run (target
// "plain"): a second ticketd with balanced low bits (target "balanced"), and
// after= an ID one millisecond old (target "after").
var variantOrder = []struct{ label, title, subject string }{
	{"id_balanced", "/v1/id", "balanced"},
	{"ids4096_balanced", "/v1/ids?n=4096", "balanced"},
	{"id_after", "/v1/id?after=X", "after"},
}

// balancedShare is the share (%) of one worker's ceiling that a saturated
// generator with balanced bits issues: a millisecond starts at a random
// sequence number below 2^bits, (2^bits - 1)/2 on average, and the values
// below it are skipped.
func balancedShare(bits int) float64 {
	return 100 * (1 - (float64(int(1)<<bits)-1)/2/4096)
}

var endpointOrder = []struct{ label, title, yardstick string }{
	{"id", "/v1/id", "bare"},
	{"ids1000", "/v1/ids?n=1000", "bare"},
	{"ids4096", "/v1/ids?n=4096", "bare"},
	{"tickets_b1000", "/v1/tickets B=1000", "bare"},
	{"tickets_b1", "/v1/tickets B=1", "raw"},
}

// summary keeps the figures in the order they are added.
type summary struct {
	names []string
	vals  map[string]float64
}

func (s *summary) add(name string, v float64) {
	if s.vals == nil {
		s.vals = map[string]float64{}
	}
	if _, ok := s.vals[name]; !ok {
		s.names = append(s.names, name)
	}
	s.vals[name] = v
}

func (s *summary) String() string {
	var b strings.Builder
	for _, n := range s.names {
		fmt.Fprintf(&b, "%s %s\n", n, num(s.vals[n]))
	}
	return b.String()
}

// num prints a figure with as many decimals as it deserves.
func num(v float64) string {
	switch a := math.Abs(v); {
	case a == 0 || a >= 1000 || v == math.Trunc(v):
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	default:
		return strconv.FormatFloat(v, 'f', 3, 64)
	}
}

// human prints a large figure with k or M.
func human(v float64) string {
	switch {
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', 2, 64) + " M"
	case v >= 1e4:
		return strconv.FormatFloat(v/1e3, 'f', 1, 64) + " k"
	default:
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
}

type target struct {
	name, want, got string
	met             bool
}

func runReport(args []string) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	dir := fs.String("dir", "bench/out", "output folder of make bench (raw measurements in DIR/raw)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	raw := filepath.Join(*dir, "raw")
	meta, err := readKV(filepath.Join(raw, "meta.txt"))
	if err != nil {
		return err
	}
	rss, err := readKV(filepath.Join(raw, "rss.txt"))
	if err != nil {
		return err
	}
	gen, err := readGen(filepath.Join(raw, "gen.txt"))
	if err != nil {
		return err
	}
	runs, err := readRuns(filepath.Join(raw, "http.txt"))
	if err != nil {
		return err
	}

	eps := map[string]*endpoint{}
	var ordered []*endpoint
	for _, o := range endpointOrder {
		e, err := readPair(runs, o.label, o.title, o.yardstick, "ticketd")
		if err != nil {
			return err
		}
		eps[o.label] = e
		ordered = append(ordered, e)
	}
	need := []string{"One/ticketd", "One/bwmarrin", "One/sonyflake", "Saturation/ticketd", "Saturation/bwmarrin",
		"Saturation/sonyflake", "Batch4096/ticketd", "Saturation/ticketd-balanced4", "Saturation/ticketd-balanced10",
		"Public/encode", "Public/decode"}
	for _, k := range need {
		if _, ok := gen[k]; !ok {
			return fmt.Errorf("report: benchmark %s missing from raw/gen.txt", k)
		}
	}
	mx, err := readMixed(runs, filepath.Join(raw, "mixed-batch.txt"))
	if err != nil {
		return err
	}
	// Against plain ticketd (target "plain"): balanced low bits, the
	// ceiling with them, after=.
	var variants []*endpoint
	for _, o := range variantOrder {
		e, err := readPair(runs, o.label, o.title, "plain", o.subject)
		if err != nil {
			return err
		}
		eps[o.label] = e
		variants = append(variants, e)
	}
	bits, err := strconv.Atoi(meta["balanced_bits"])
	if err != nil {
		return fmt.Errorf("report: raw/meta.txt: balanced_bits %q", meta["balanced_bits"])
	}
	cl, err := readKV(filepath.Join(raw, "client.txt"))
	if err != nil {
		return err
	}
	clientVal := func(k string) (float64, error) {
		v, err := strconv.ParseFloat(cl[k], 64)
		if err != nil {
			return 0, fmt.Errorf("report: raw/client.txt: %s: %q", k, cl[k])
		}
		return v, nil
	}
	var clientNs, uuidNs, clientSustained, clientP99, clientRate, strictNs, strictSustained float64
	for _, f := range []struct {
		k string
		v *float64
	}{{"client_next_ns", &clientNs}, {"uuidv7_ns", &uuidNs}, {"client_sustained_ids_per_s", &clientSustained},
		{"client_p99_ns_below_capacity", &clientP99}, {"client_rate_ids_per_s", &clientRate},
		{"client_strict_next_ns", &strictNs}, {"client_strict_sustained_ids_per_s", &strictSustained}} {
		if *f.v, err = clientVal(f.k); err != nil {
			return err
		}
	}
	hwmKB, err := strconv.ParseFloat(rss["ticketd_vmhwm_kb"], 64)
	if err != nil {
		return fmt.Errorf("report: ticketd_vmhwm_kb: %w", err)
	}
	bareKB, _ := strconv.ParseFloat(rss["bare_vmhwm_kb"], 64)

	// --- summary.txt -------------------------------------------------------
	var s summary
	id, i1k, i4k, tb1k, tb1 := eps["id"], eps["ids1000"], eps["ids4096"], eps["tickets_b1000"], eps["tickets_b1"]
	s.add("bare_rps", id.a.rps)
	s.add("bare_p50_us", id.a.p50)
	s.add("bare_p99_us", id.a.p99)
	s.add("id_rps", id.b.rps)
	s.add("id_p50_us", id.b.p50)
	s.add("id_p99_us", id.b.p99)
	s.add("id_rps_ratio_vs_bare", id.rpsRatio())
	s.add("id_p99_ratio_vs_bare", id.p99Ratio())
	s.add("ids1000_rps", i1k.b.rps)
	s.add("ids1000_ids_per_s", i1k.b.rps*1000)
	s.add("ids4096_rps", i4k.b.rps)
	s.add("ids4096_ids_per_s", i4k.b.rps*4096)
	s.add("ids4096_pct_of_ceiling", 100*i4k.b.rps*4096/ceiling)
	s.add("ids4096_p99_us", i4k.b.p99)
	s.add("gen_ns_per_id", gen["One/ticketd"].nsOp)
	s.add("gen_saturation_ids_per_s", gen["Saturation/ticketd"].idsPerS)
	s.add("gen_saturation_pct_of_ceiling", 100*gen["Saturation/ticketd"].idsPerS/ceiling)
	// > 1: ticketd's generator gives one ID faster than bwmarrin's.
	s.add("gen_ratio_vs_bwmarrin", gen["One/bwmarrin"].nsOp/gen["One/ticketd"].nsOp)
	s.add("gen_saturation_ratio_vs_bwmarrin", gen["Saturation/ticketd"].idsPerS/gen["Saturation/bwmarrin"].idsPerS)
	s.add("gen_batch4096_ids_per_s", gen["Batch4096/ticketd"].idsPerS)
	s.add("bwmarrin_ns_per_id", gen["One/bwmarrin"].nsOp)
	s.add("bwmarrin_saturation_ids_per_s", gen["Saturation/bwmarrin"].idsPerS)
	s.add("sonyflake_ns_per_id", gen["One/sonyflake"].nsOp)
	s.add("sonyflake_saturation_ids_per_s", gen["Saturation/sonyflake"].idsPerS)
	if g, ok := gen["Saturation/sonyflake-1ms"]; ok {
		s.add("sonyflake_1ms_saturation_ids_per_s", g.idsPerS)
	}
	s.add("raw_replace_per_s", tb1.a.rps)
	s.add("raw_replace_p99_us", tb1.a.p99)
	s.add("tickets_b1_per_s", tb1.b.rps)
	s.add("tickets_b1_p99_us", tb1.b.p99)
	s.add("tickets_b1_ratio_vs_raw", tb1.rpsRatio())
	s.add("tickets_b1000_per_s", tb1k.b.rps)
	s.add("tickets_b1000_p99_us", tb1k.b.p99)
	s.add("peak_rss_mb", hwmKB/1024)
	s.add("bare_peak_rss_mb", bareKB/1024)
	// ticketd's Go client, beside uuid.NewV7 in the same process.
	s.add("client_next_ns", clientNs)
	s.add("uuidv7_ns", uuidNs)
	// > 1: one ID from the client costs less than one UUIDv7.
	s.add("client_ratio_vs_uuidv7", uuidNs/clientNs)
	s.add("client_sustained_ids_per_s", clientSustained)
	s.add("client_p99_ns_below_capacity", clientP99)
	s.add("client_rate_ids_per_s", clientRate)
	// /v1/id beside a saturating batch load, against /v1/id alone.
	s.add("mixed_alone_rps", mx.alone.rps)
	s.add("mixed_alone_p99_us", mx.alone.p99)
	s.add("mixed_id_rps", mx.loaded.rps)
	s.add("mixed_id_p50_us", mx.loaded.p50)
	s.add("mixed_id_p99_us", mx.loaded.p99)
	s.add("mixed_id_rps_ratio", mx.rpsRatio())
	// What the batches add to a single request's p99, whatever the
	// machine's own p99 (on a busy 2-core VM, above 2 ms alone).
	s.add("mixed_id_p99_ratio", mx.loaded.p99/mx.alone.p99)
	s.add("mixed_batch_ids_per_s", mx.batchIDs)
	// Balanced low bits (a second ticketd with -balanced-bits) and after=,
	// each against plain ticketd's own requests/s, A B A B.
	idb, i4b, ida := eps["id_balanced"], eps["ids4096_balanced"], eps["id_after"]
	s.add("id_balanced_rps", idb.b.rps)
	s.add("id_balanced_p99_us", idb.b.p99)
	s.add("id_balanced_ratio", idb.rpsRatio())
	s.add("ids4096_balanced_ids_per_s", i4b.b.rps*4096)
	s.add("ids4096_balanced_pct_of_ceiling", 100*i4b.b.rps*4096/ceiling)
	s.add("ids4096_balanced_ratio", i4b.rpsRatio())
	// What the skipped values leave of the ceiling: a millisecond holds
	// 4096 - start IDs, start uniform below 2^bits.
	s.add("balanced_expected_pct_of_ceiling", balancedShare(bits))
	s.add("id_after_rps", ida.b.rps)
	s.add("id_after_p99_us", ida.b.p99)
	s.add("id_after_plain_rps", ida.a.rps)
	s.add("id_after_ratio", ida.rpsRatio())
	for _, bb := range []int{4, 10} {
		g := gen[fmt.Sprintf("Saturation/ticketd-balanced%d", bb)]
		s.add(fmt.Sprintf("gen_saturation_balanced%d_ids_per_s", bb), g.idsPerS)
		s.add(fmt.Sprintf("gen_saturation_balanced%d_pct_of_ceiling", bb), 100*g.idsPerS/ceiling)
		s.add(fmt.Sprintf("gen_saturation_balanced%d_expected_pct", bb), balancedShare(bb))
	}
	// Public forms: one keyed permutation of a 63-bit value, each way.
	s.add("public_ns", gen["Public/encode"].nsOp)
	s.add("public_decode_ns", gen["Public/decode"].nsOp)
	// A public sequence: the permutation each of its values costs.
	s.add("public_seq_ns", gen["PublicSequence/bits63"].nsOp)
	s.add("public_seq32_ns", gen["PublicSequence/bits32"].nsOp)
	// The Go client in strictly increasing mode, against the same client
	// without it: > 1 is faster.
	s.add("client_strict_next_ns", strictNs)
	s.add("client_strict_ratio", clientNs/strictNs)
	s.add("client_strict_sustained_ids_per_s", strictSustained)
	s.add("client_strict_sustained_ratio", strictSustained/clientSustained)
	var httpErrors float64
	for _, e := range ordered {
		httpErrors += e.b.errors + e.b.non2xx
	}
	for _, e := range variants { // both sides are ticketd
		httpErrors += e.a.errors + e.a.non2xx + e.b.errors + e.b.non2xx
	}
	httpErrors += mx.alone.errors + mx.alone.non2xx + mx.loaded.errors + mx.loaded.non2xx + mx.batchErrors
	s.add("ticketd_http_errors", httpErrors)
	s.add("raw_replace_errors", tb1.a.errors)

	pass := func(name, want, got string, ok bool) target { return target{name, want, got, ok} }
	targets := []target{
		pass("/v1/id requests/s vs bare (median of rounds)", "≥ 0.95×", fmt.Sprintf("%.3f×", s.vals["id_rps_ratio_vs_bare"]), s.vals["id_rps_ratio_vs_bare"] >= 0.95),
		pass("/v1/id p99 vs bare", "≤ 1.2×", fmt.Sprintf("%.2f×", s.vals["id_p99_ratio_vs_bare"]), s.vals["id_p99_ratio_vs_bare"] <= 1.2),
		pass("/v1/ids?n=4096 IDs/s", "≥ 3.5 M", human(s.vals["ids4096_ids_per_s"]), s.vals["ids4096_ids_per_s"] >= 3.5e6),
		pass("generator at saturation", "≥ 97 % of 4.096 M/s", fmt.Sprintf("%s (%.1f %%)", human(s.vals["gen_saturation_ids_per_s"]), s.vals["gen_saturation_pct_of_ceiling"]), s.vals["gen_saturation_pct_of_ceiling"] >= 97),
		pass("generator, one ID below saturation", "< 100 ns", fmt.Sprintf("%.1f ns", s.vals["gen_ns_per_id"]), s.vals["gen_ns_per_id"] < 100),
		pass("generator, one ID vs bwmarrin/snowflake", "≥ 1.0× (bwmarrin ns ÷ ticketd ns)", fmt.Sprintf("%.2f×", s.vals["gen_ratio_vs_bwmarrin"]), s.vals["gen_ratio_vs_bwmarrin"] >= 1.0),
		pass("Go client, one Next vs uuid.NewV7", "≥ 1.0× (uuid ns ÷ client ns)", fmt.Sprintf("%.2f× (%.1f ns vs %.1f ns)", s.vals["client_ratio_vs_uuidv7"], clientNs, uuidNs), s.vals["client_ratio_vs_uuidv7"] >= 1.0),
		pass("Go client, one client through one ticketd", "≥ 3.5 M IDs/s", human(clientSustained), clientSustained >= 3.5e6),
		pass("Go client, p99 of Next at 1 M IDs/s", "≤ 1000 ns", fmt.Sprintf("%.0f ns", clientP99), clientP99 <= 1000),
		pass("/v1/id p99 beside saturating batches", "≤ 2000 µs", us(mx.loaded.p99), mx.loaded.p99 <= 2000),
		pass("/v1/id requests/s beside saturating batches vs alone", "≥ 0.5×", fmt.Sprintf("%.2f×", mx.rpsRatio()), mx.rpsRatio() >= 0.5),
		pass("/v1/tickets B=1 vs raw REPLACE", "≥ 0.8×", fmt.Sprintf("%.2f×", s.vals["tickets_b1_ratio_vs_raw"]), s.vals["tickets_b1_ratio_vs_raw"] >= 0.8),
		pass("/v1/tickets B=1000 tickets/s", "≥ 100 k", human(s.vals["tickets_b1000_per_s"]), s.vals["tickets_b1000_per_s"] >= 100e3),
		pass("ticketd peak RSS under load", "≤ 64 MB", fmt.Sprintf("%.1f MB", s.vals["peak_rss_mb"]), s.vals["peak_rss_mb"] <= 64),
		pass(fmt.Sprintf("/v1/id requests/s with -balanced-bits %d vs without", bits), "≥ 0.95×", fmt.Sprintf("%.3f×", idb.rpsRatio()), idb.rpsRatio() >= 0.95),
		pass("/v1/id?after=X (X 1 ms old) requests/s vs /v1/id", "≥ 0.95×", fmt.Sprintf("%.3f×", ida.rpsRatio()), ida.rpsRatio() >= 0.95),
		pass(fmt.Sprintf("/v1/ids?n=4096 IDs/s with -balanced-bits %d", bits), "≥ 3.5 M", fmt.Sprintf("%s (%.1f %%; skipped values leave %.2f %%)",
			human(s.vals["ids4096_balanced_ids_per_s"]), s.vals["ids4096_balanced_pct_of_ceiling"], balancedShare(bits)), s.vals["ids4096_balanced_ids_per_s"] >= 3.5e6),
		pass("generator at saturation, balanced bits 4", "≥ 97 % of 4.096 M/s", fmt.Sprintf("%s (%.1f %%; skipped values leave %.2f %%)",
			human(s.vals["gen_saturation_balanced4_ids_per_s"]), s.vals["gen_saturation_balanced4_pct_of_ceiling"], balancedShare(4)), s.vals["gen_saturation_balanced4_pct_of_ceiling"] >= 97),
		pass("public form of an ID (one 63-bit permutation)", "≤ 500 ns", fmt.Sprintf("%.1f ns", s.vals["public_ns"]), s.vals["public_ns"] <= 500),
		pass("an ID from its public form", "≤ 500 ns", fmt.Sprintf("%.1f ns", s.vals["public_decode_ns"]), s.vals["public_decode_ns"] <= 500),
		pass("Go client strictly increasing vs plain, one Next", "≥ 0.9× (plain ns ÷ strict ns)", fmt.Sprintf("%.2f× (%.1f ns vs %.1f ns)", clientNs/strictNs, strictNs, clientNs), clientNs/strictNs >= 0.9),
		pass("Go client strictly increasing vs plain, sustained", "≥ 0.9×", fmt.Sprintf("%.2f× (%s vs %s IDs/s)", strictSustained/clientSustained, human(strictSustained), human(clientSustained)), strictSustained/clientSustained >= 0.9),
		pass("no failed request", "0", num(httpErrors), httpErrors == 0),
	}
	met := 0
	for _, t := range targets {
		if t.met {
			met++
		}
	}
	for _, k := range []string{"others_cpu_pct", "steal_pct"} {
		if v, err := strconv.ParseFloat(meta[k], 64); err == nil {
			s.add(k, v)
		}
	}
	s.add("targets_met", float64(met))
	s.add("targets_total", float64(len(targets)))
	if err := os.WriteFile(filepath.Join(*dir, "summary.txt"), []byte(s.String()), 0o644); err != nil {
		return err
	}

	// --- report.md -----------------------------------------------------------
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("# ticketd benchmark\n\n")
	w("%s, %s cores (%s), Go %s, %s, MariaDB %s, commit %s. Before the run the CPUs were %s %% idle (over 3 s; load average %s). "+
		"During the measured HTTP runs, **%s %%** of the CPUs' time went to processes other than the benchmark's (user and system time in /proc/stat "+
		"less the CPU time of ticketd, the servers, wrk and the raw client: other people's work, and kernel threads, some of them ours) "+
		"and the hypervisor stole **%s %%** for other guests.\n\n",
		meta["date"], meta["cores"], meta["cpu"], strings.TrimPrefix(meta["go"], "go"), "wrk "+meta["wrk"], meta["mariadb"], meta["commit"],
		meta["idle_before_pct"], meta["load_before"], meta["others_cpu_pct"], meta["steal_pct"])
	others, _ := strconv.ParseFloat(meta["others_cpu_pct"], 64)
	steal, _ := strconv.ParseFloat(meta["steal_pct"], 64)
	if others+steal > 10 {
		w("> **The machine was busy**: other processes and other guests took %.0f %% of the CPUs while the HTTP runs went on. "+
			"Ratios measured A B A B still compare like with like, but absolute figures and p99s are noisy, and `/v1/ids` loses "+
			"whole milliseconds of its 4096-per-ms budget whenever ticketd is off the CPU; run again on a quiet machine.\n\n", others+steal)
	}
	w("HTTP: `wrk -t%s -c%s`, %s s per run after a %s s warm-up, %s rounds per endpoint (%s for `/v1/id`) alternating yardstick and ticketd "+
		"(A B A B …) so the machine's drift cancels. Requests/s: all rounds' requests over all rounds' time; p50, p99: the median of the rounds'; "+
		"ratios: the median of the per-round ratios (each ticketd run against the yardstick run just before it). "+
		"The bare server is a fasthttp server with ticketd's server settings answering a fixed 20-byte body: this machine's HTTP limit. "+
		"Raw REPLACE is `REPLACE INTO seq_bench_b1 (stub) VALUES ('a')` + `LastInsertId` by a Go client straight to the pair "+
		"(round-robin, one pool per server, %s callers). Every server runs on this machine, wrk included.\n\n",
		meta["threads"], meta["conns"], meta["duration_s"], meta["warmup_s"], meta["rounds"], meta["id_rounds"], meta["conns"])

	w("## Targets: %d of %d met\n\n| target | wanted | measured | met |\n|---|---|---|---|\n", met, len(targets))
	for _, t := range targets {
		mark := "yes"
		if !t.met {
			mark = "**no**"
		}
		w("| %s | %s | %s | %s |\n", t.name, t.want, t.got, mark)
	}

	w("\n## HTTP\n\n| endpoint | yardstick | requests/s | IDs or tickets/s | p50 | p99 | yardstick requests/s | yardstick p50 | yardstick p99 | requests/s ratio: median (per round) | p99 ratio: median (per round) | errors |\n")
	w("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, e := range ordered {
		var rr, pr []string
		for _, r := range e.roundRatios() {
			rr = append(rr, fmt.Sprintf("%.2f", r))
		}
		for _, r := range e.p99Ratios() {
			pr = append(pr, fmt.Sprintf("%.2f", r))
		}
		ys := "bare fasthttp"
		if e.yardstick == "raw" {
			ys = "raw REPLACE"
		}
		w("| `%s` | %s | %s | %s | %s | %s | %s | %s | %s | %.3f (%s) | %.2f (%s) | %s |\n", e.title, ys,
			human(e.b.rps), human(e.b.rps*float64(e.n)), us(e.b.p50), us(e.b.p99),
			human(e.a.rps), us(e.a.p50), us(e.a.p99), e.rpsRatio(), strings.Join(rr, ", "), e.p99Ratio(), strings.Join(pr, ", "),
			num(e.b.errors+e.b.non2xx))
	}

	var mr []string
	for _, r := range mx.roundRatios() {
		mr = append(mr, fmt.Sprintf("%.2f", r))
	}
	w("\n## Batches beside single requests\n\n`/v1/id` with `wrk -t1 -c%s` alone, then the same while a second `wrk -t1 -c%s` saturates the worker with "+
		"`/v1/ids?n=10000` (it starts a second before the measured run and ends with it), alternating, %s rounds: ticketd shares the "+
		"worker's 4096 IDs per millisecond between batches and single requests.\n\n", meta["mixed_conns"], meta["mixed_batch_conns"], meta["rounds"])
	w("| | requests/s | p50 | p99 |\n|---|---|---|---|\n")
	w("| `/v1/id` alone | %s | %s | %s |\n", human(mx.alone.rps), us(mx.alone.p50), us(mx.alone.p99))
	w("| `/v1/id` beside batches | %s | %s | %s |\n", human(mx.loaded.rps), us(mx.loaded.p50), us(mx.loaded.p99))
	w("\nRatio beside/alone: **%.2f×** (rounds %s); p99 beside/alone: %.2f×. The batches meanwhile: %s IDs/s.\n", mx.rpsRatio(), strings.Join(mr, ", "), mx.loaded.p99/mx.alone.p99, human(mx.batchIDs))

	w("\n## Go client\n\n`ticketd/client` against this ticketd (`benchtool client`), in one process beside `github.com/google/uuid` v1.6.0's `NewV7`. "+
		"*One Next*: from a warm buffer (bursts of 5000 IDs between refills, outside the timer), the fastest of 3 `testing.Benchmark` runs; UUIDv7 the same way. "+
		"*Sustained*: one goroutine calling Next as fast as it can for %s s, through one ticketd (one refill in flight, batches of up to 10000). "+
		"*p99*: every Next timed while the client takes %s IDs/s.\n\n", meta["duration_s"], human(clientRate))
	w("| | figure |\n|---|---|\n")
	w("| one `Next` | %.1f ns |\n| one `uuid.NewV7` | %.1f ns |\n| ratio (uuid ÷ client) | %.2f× |\n", clientNs, uuidNs, uuidNs/clientNs)
	w("| sustained, one client | %s IDs/s |\n| p99 of `Next` at %s IDs/s | %.0f ns |\n", human(clientSustained), human(clientRate), clientP99)
	w("| one `Next`, strictly increasing mode (runs alternating with the plain one's) | %.1f ns (plain ÷ strict: %.2f×) |\n", strictNs, clientNs/strictNs)
	w("| sustained, strictly increasing mode (right after the plain run) | %s IDs/s (strict ÷ plain: %.2f×) |\n", human(strictSustained), strictSustained/clientSustained)

	w("\n## Balanced low bits, after= and public forms\n\nEach against plain ticketd on the same servers, A B A B as above (%s rounds for `/v1/id`, %s for `/v1/ids`): "+
		"a second ticketd with `-balanced-bits %d` (each millisecond's sequence starts at a random value below 2^%d, the values below it skipped; "+
		"a deployment of its own, database `tickets_balanced`, since a deployment records its balanced bits), "+
		"and `/v1/id?after=X` with X an ID one millisecond old, made anew every millisecond by `bench/wrk/after.lua`, whose Lua call per request "+
		"the plain side pays too (plain `/v1/id` through it: %s requests/s).\n\n", meta["id_rounds"], meta["rounds"], bits, bits, human(ida.a.rps))
	w("| | requests/s | IDs/s | p99 | plain ticketd requests/s | ratio: median (per round) | |\n|---|---|---|---|---|---|---|\n")
	for _, e := range variants {
		var rr []string
		for _, r := range e.roundRatios() {
			rr = append(rr, fmt.Sprintf("%.2f", r))
		}
		what := fmt.Sprintf("`-balanced-bits %d`", bits)
		note := ""
		if e.b.runs[0].target == "after" {
			what = "X 1 ms old"
		}
		if e.n > 1 {
			note = fmt.Sprintf("%.1f %% of the ceiling; skipped values leave %.2f %%", 100*e.b.rps*float64(e.n)/ceiling, balancedShare(bits))
		}
		w("| `%s`, %s | %s | %s | %s | %s | %.3f (%s) | %s |\n", e.title, what, human(e.b.rps), human(e.b.rps*float64(e.n)), us(e.b.p99),
			human(e.a.rps), e.rpsRatio(), strings.Join(rr, ", "), note)
	}
	w("\nIn process (bench/gen): the generator at saturation with balanced bits 4, %s IDs/s (%.1f %% of the ceiling, skipped values leave %.2f %%), "+
		"with 10, %s IDs/s (%.1f %%, they leave %.2f %%). The public form of an ID, one FF1 permutation of a 63-bit value (`publicid.Ring.Public`): %.1f ns; "+
		"back (`Ring.Decode` under one key): %.1f ns. A public sequence's value costs one permutation more than a plain one's "+
		"(`publicid.Sequence.Public`): %.1f ns for a 64-bit sequence (63 bits), %.1f ns for a 32-bit one.\n",
		human(s.vals["gen_saturation_balanced4_ids_per_s"]), s.vals["gen_saturation_balanced4_pct_of_ceiling"], balancedShare(4),
		human(s.vals["gen_saturation_balanced10_ids_per_s"]), s.vals["gen_saturation_balanced10_pct_of_ceiling"], balancedShare(10),
		s.vals["public_ns"], s.vals["public_decode_ns"], s.vals["public_seq_ns"], s.vals["public_seq32_ns"])

	w("\n## Generator, in process\n\n`go test -bench -count 3` in bench/gen, the fastest of the 3 runs (others' work on a shared machine only slows a run down), one goroutine unless said. *One ID*: a fresh generator every 200 IDs " +
		"(outside the timer), so none waits for the clock: the cost of one ID. *Saturation*: IDs as fast as the generator gives them, " +
		"up against its per-millisecond limit (ceiling 4.096 M/s; sonyflake's defaults: 256 per 10 ms = 25.6 k/s).\n\n")
	w("| generator | one ID (ns) | saturation (IDs/s) | %% of its ceiling | 2 goroutines at saturation (IDs/s) |\n|---|---|---|---|---|\n")
	for _, g := range []struct{ key, name string }{
		{"ticketd", "ticketd (snowflake.Generator)"},
		{"bwmarrin", "bwmarrin/snowflake v0.3.0"},
		{"sonyflake", "sony/sonyflake/v2 defaults (10 ms, 8-bit sequence)"},
		{"sonyflake-1ms", "sony/sonyflake/v2 at 1 ms, 12-bit sequence"},
	} {
		one, ok := gen["One/"+g.key]
		if !ok {
			continue
		}
		sat := gen["Saturation/"+g.key]
		ceil := ceiling
		if g.key == "sonyflake" {
			ceil = 25_600
		}
		par := "—"
		if p, ok := gen["SaturationParallel/"+g.key]; ok {
			par = human(p.idsPerS)
		}
		w("| %s | %.1f | %s | %.1f %% | %s |\n", g.name, one.nsOp, human(sat.idsPerS), 100*sat.idsPerS/ceil, par)
	}
	w("| ticketd `NextN` of 4096 (what `/v1/ids?n=4096` calls) | %.1f per ID | %s | %.1f %% | — |\n",
		gen["Batch4096/ticketd"].nsOp/4096, human(gen["Batch4096/ticketd"].idsPerS), 100*gen["Batch4096/ticketd"].idsPerS/ceiling)

	w("\n## Memory\n\nticketd's peak RSS (VmHWM) after all the HTTP load above: **%.1f MB** (the bare server: %.1f MB).\n",
		hwmKB/1024, bareKB/1024)
	w("\n## summary.txt\n\n```\n%s```\n", s.String())
	w("\n![throughput and latency](bench.png)\n")
	if err := os.WriteFile(filepath.Join(*dir, "report.md"), []byte(b.String()), 0o644); err != nil {
		return err
	}

	// --- plot data and script ----------------------------------------------------
	var d strings.Builder
	d.WriteString("# label ticketd_rps yardstick_rps ticketd_p50_us ticketd_p99_us yardstick_p50_us yardstick_p99_us\n")
	for _, e := range ordered {
		title := plotTitle(e)
		fmt.Fprintf(&d, "\"%s\" %.0f %.0f %.0f %.0f %.0f %.0f\n", title, e.b.rps, e.a.rps, e.b.p50, e.b.p99, e.a.p50, e.a.p99)
	}
	if err := os.WriteFile(filepath.Join(*dir, "bench.dat"), []byte(d.String()), 0o644); err != nil {
		return err
	}
	gp := strings.NewReplacer("@DAT@", filepath.Join(*dir, "bench.dat"), "@PNG@", filepath.Join(*dir, "bench.png"),
		"@TITLE@", fmt.Sprintf("ticketd vs the bare fasthttp server — wrk -t%s -c%s, %s s × %s rounds, %s-core VM, %s",
			meta["threads"], meta["conns"], meta["duration_s"], meta["rounds"], meta["cores"], strings.SplitN(meta["date"], "T", 2)[0])).
		Replace(gnuplotScript)
	return os.WriteFile(filepath.Join(*dir, "bench.gp"), []byte(gp), 0o644)
}
