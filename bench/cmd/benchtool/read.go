package main

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// genResult is one line of the generator benchmarks.
type genResult struct{ nsOp, idsPerS float64 }

// benchLine is a benchmark's result: ns/op, and ids/s where it reports
// them (the public forms' benchmarks do not).
var benchLine = regexp.MustCompile(`^Benchmark(\S+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op(?:\s+([\d.]+) ids/s)?`)

func readGen(path string) (map[string]genResult, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]genResult{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		ns, _ := strconv.ParseFloat(m[2], 64)
		ids, _ := strconv.ParseFloat(m[3], 64)
		// With -count N, the fastest run: on a shared machine, others' work
		// only ever slows a run down.
		if old, ok := out[m[1]]; !ok || ns < old.nsOp {
			out[m[1]] = genResult{ns, ids}
		}
	}
	return out, sc.Err()
}

// readRuns reads raw/http.txt: wrk's runs, each with its duration.
func readRuns(path string) ([]run, error) {
	runs, err := readRunLines(path)
	if err != nil {
		return nil, err
	}
	for _, r := range runs {
		if r.f["duration_us"] <= 0 {
			return nil, fmt.Errorf("%s: a run without a duration: %s %s round %d", path, r.label, r.target, r.round)
		}
	}
	return runs, nil
}

// readRunLines reads lines of "label=… target=… round=… n=… name=value…",
// one run each.
func readRunLines(path string) ([]run, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []run
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		r := run{f: map[string]float64{}}
		for _, kv := range strings.Fields(sc.Text()) {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "label":
				r.label = v
			case "target":
				r.target = v
			case "round":
				r.round, _ = strconv.Atoi(v)
			case "n":
				r.n, _ = strconv.Atoi(v)
			default:
				x, err := strconv.ParseFloat(v, 64)
				if err != nil {
					return nil, fmt.Errorf("%s: %q: %w", path, kv, err)
				}
				r.f[k] = x
			}
		}
		out = append(out, r)
	}
	return out, sc.Err()
}

// readKV reads "name value…" lines.
func readKV(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), " "); ok {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out, nil
}
