package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPctOf: nearest rank over every value kept, so p99.99 of 10,000
// values is the largest but nothing, and of fewer it is the max.
func TestPctOf(t *testing.T) {
	var v []int64
	for i := int64(1); i <= 10000; i++ {
		v = append(v, i)
	}
	for _, tt := range []struct {
		vals []int64
		p    float64
		want int64
	}{
		{v, 50, 5000}, {v, 99, 9900}, {v, 99.9, 9990}, {v, 99.99, 9999}, {v, 100, 10000}, {v, 0, 1},
		{v[:100], 99.99, 100}, {[]int64{7}, 50, 7}, {nil, 99, 0},
	} {
		if got := pctOf(tt.vals, tt.p); got != tt.want {
			t.Errorf("pctOf(%d values, %v): got %d, want %d", len(tt.vals), tt.p, got, tt.want)
		}
	}
}

// TestReadVegetaCSV: vegeta's csv lines as `vegeta encode --to csv` writes
// them: a 2xx keeps its latency, another status or an error counts apart.
func TestReadVegetaCSV(t *testing.T) {
	in := "1796173468692976190,200,2325877,0,0,,,,14,GET,http://127.0.0.1:1/v1/id,SGVhZGVy\n" +
		"1796173468692976191,200,1000,0,0,,,,15,GET,http://127.0.0.1:1/v1/id,\n" +
		"1796173468692976192,429,5000,0,106,,,,16,GET,http://127.0.0.1:1/v1/id,\n" +
		"1796173468692976193,0,10000000000,0,0,\"Get \"\"http://127.0.0.1:1/v1/id\"\": timeout\",,,17,GET,http://127.0.0.1:1/v1/id,\n"
	lat, non2xx, errs, err := readVegetaCSV(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(lat) != 2 || lat[0] != 2325877 || lat[1] != 1000 || non2xx != 1 || errs != 1 {
		t.Errorf("got latencies %v, %d not 2xx, %d errors; want [2325877 1000], 1, 1", lat, non2xx, errs)
	}
	for _, bad := range []string{"1,200\n", "1,abc,5,0,0,\n", "1,200,x,0,0,\n"} {
		if _, _, _, err := readVegetaCSV(strings.NewReader(bad)); err == nil {
			t.Errorf("readVegetaCSV(%q): no error", bad)
		}
	}
}

// TestTailReport: from runs.txt and the kept latencies, the pooled
// percentiles, their ratio to bare, the per-round ratios' spread and the
// target on /v1/id's p99.9.
func TestTailReport(t *testing.T) {
	dir := t.TempDir()
	raw := filepath.Join(dir, "raw", "tail")
	if err := os.MkdirAll(raw, 0o755); err != nil {
		t.Fatal(err)
	}
	meta := "date 2026-12-02T00:00:00Z\ncores 2\nrate_per_s 1000\ncapacity_per_s 10000\nfraction 0.1\nduration_s 10\nrounds 2\nids_n 100\n"
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(raw, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("meta.txt", meta)
	// Round r of target x: 1000 latencies of 1..1000 µs times a factor;
	// a /v1/tickets round of each with the claims ticketd's calls waited for.
	factor := map[string]float64{"ticketd-1": 1.0, "bare-1": 1.0, "ticketd-2": 1.5, "bare-2": 1.0}
	var runs strings.Builder
	for _, key := range []string{"ticketd-1", "bare-1", "ticketd-2", "bare-2"} {
		target, round, _ := strings.Cut(key, "-")
		var lat strings.Builder
		f := factor[key]
		for i := 1; i <= 1000; i++ {
			lat.WriteString(itoa(int64(float64(i) * 1000 * f)))
			lat.WriteByte('\n')
		}
		write("id-"+target+"-"+round+".lat", lat.String())
		p := func(x float64) string { return itoa(int64(x * f)) }
		runs.WriteString("label=id target=" + target + " round=" + round + " requests=1000 ok=1000 non2xx=0 errors=0 rate=1000 vegeta_p99_us=990" +
			" p50_us=" + p(500) + " p99_us=" + p(990) + " p999_us=" + p(999) + " p9999_us=" + p(1000) + " max_us=" + p(1000) + "\n")
	}
	for _, key := range []string{"ticketd-1", "bare-1", "ticketd-2", "bare-2"} {
		target, round, _ := strings.Cut(key, "-")
		write("tickets-"+target+"-"+round+".lat", "1000\n2000\n")
		waits := ""
		if target == "ticketd" {
			waits = " waits=" + round
		}
		runs.WriteString("label=tickets target=" + target + " round=" + round + " requests=2 ok=2 non2xx=0 errors=0 rate=1000 vegeta_p99_us=2" +
			" p50_us=1 p99_us=2 p999_us=2 p9999_us=2 max_us=2" + waits + "\n")
	}
	write("runs.txt", runs.String())
	if err := runTailReport([]string{"-dir", dir}); err != nil {
		t.Fatal(err)
	}
	rows, err := readKV(filepath.Join(dir, "tail.txt"))
	if err != nil {
		t.Fatal(err)
	}
	// ticketd's 2000: round 1's 1..1000 µs and round 2's 1.5..1500; the
	// bare server's: 1..1000 twice.
	for k, want := range map[string]string{
		"tail_rate_per_s":     "1000",
		"tail_capacity_per_s": "10000",
		"tail_fraction":       "0.100",
		"tail_id_requests":    "2000",
		"tail_id_failed":      "0",
		"tail_id_bare_failed": "0",
		// p50, the 1000th: 600 µs is above 600 of round 1 and 400 of round 2.
		"tail_id_p50_us":           "600",
		"tail_id_bare_p50_us":      "500",
		"tail_id_p50_ratio":        "1.20",
		"tail_id_p50_ratio_median": "1.25", // rounds 1.0 and 1.5
		// p99, the 1980th: all of round 1 and 980 of round 2 (1470 µs).
		"tail_id_p99_us":        "1470",
		"tail_id_p99_ratio_min": "1",
		"tail_id_p99_ratio_max": "1.50",
		// p99.9, the 1998th: round 2's 998th.
		"tail_id_p999_us":           "1497",
		"tail_id_bare_p999_us":      "999",
		"tail_id_p999_ratio":        "1.50", // 1.4985
		"tail_id_p999_ratio_median": "1.25",
		"tail_id_p999_ratio_min":    "1",
		"tail_id_p999_ratio_max":    "1.50",
		"tail_id_p9999_us":          "1500",
		"tail_id_bare_p9999_us":     "1000",
		"tail_id_p9999_ratio":       "1.50",
		"tail_id_bare_max_us":       "1000",
		"tail_id_max_ratio":         "1.50",
		"tail_target_id_p999_ratio": "1.50 <= 1.20 missed",
		"tail_target_failed":        "0 <= 0 met",
		"tail_tickets_waits":        "3", // 1 + 2
		"tail_tickets_requests":     "4",
	} {
		if got := rows[k]; got != want {
			t.Errorf("%s: got %q, want %q", k, got, want)
		}
	}
	for _, f := range []string{"tail.md", "tail.dat", "tail.gp"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil || len(b) == 0 {
			t.Errorf("%s: %v, %d bytes", f, err, len(b))
		}
	}
	md, _ := os.ReadFile(filepath.Join(dir, "tail.md"))
	if rows["tail_id_waits"] != "" {
		t.Errorf("tail_id_waits = %q: /v1/id's runs count no waits, want no row", rows["tail_id_waits"])
	}
	if !strings.Contains(string(md), "| `/v1/tickets/NAME (block 1000)` | 2 | 2 µs | 2 µs | 2 µs | 2 µs | 1000, 1000 /s | 2 |") {
		t.Errorf("tail.md has no round 2 of /v1/tickets with its 2 waits:\n%s", md)
	}
	if !strings.Contains(string(md), "| | per round: median (min–max) | 1.25 (1.00–1.50) |") {
		t.Errorf("tail.md has no per-round spread of p50:\n%s", md)
	}
}

func itoa(v int64) string { return strings.TrimSpace(num(float64(v))) }
