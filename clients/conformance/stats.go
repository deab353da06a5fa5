package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// The fields of a stats answer (PROTOCOL.md, "stats"), each with its JSON
// type: docs/client.md ("Stats") defines them, and every client has all of
// them, so that an application counts the same in every language.
var (
	streamFields = map[string]string{
		"served": "number", "fetched": "number", "buffered": "number", "batch": "number",
		"refills": "number", "refill_failures": "number", "throttled": "number",
		"refill_latency_total_ms": "number", "refill_latency_max_ms": "number",
		"dropped_by_age": "number", "waits": "number", "last_error": "string",
	}
	endpointFields = map[string]string{
		"url": "string", "up": "bool", "current": "bool", "requests": "number", "failures": "number",
		"rejected": "number", "probes": "number", "last_error": "string", "last_probe_error": "string",
	}
)

// CheckStats returns every way a stats answer falls short: a field of the
// contract missing or of the wrong type, counts that contradict each other,
// and any field of want (a subset of the answer's JSON: objects by key,
// arrays item by item) that differs. secrets must appear nowhere.
func CheckStats(got, want json.RawMessage, secrets []string) []string {
	var bad []string
	fail := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	for _, s := range secrets {
		if s != "" && bytes.Contains(got, []byte(s)) {
			fail("the stats hold a token")
		}
	}
	var st map[string]any
	if err := decode(got, &st); err != nil {
		return append(bad, fmt.Sprintf("stats %.200s: %v", got, err))
	}
	ids, _ := st["ids"].(map[string]any)
	if ids == nil {
		fail("no ids object")
	} else {
		bad = append(bad, fields("ids", ids, streamFields)...)
	}
	seqs, ok := st["sequences"].(map[string]any)
	if !ok {
		fail("no sequences object")
	}
	for _, name := range sortedKeys(seqs) {
		s, _ := seqs[name].(map[string]any)
		if s == nil {
			fail("sequences.%s: not an object", name)
			continue
		}
		bad = append(bad, fields("sequences."+name, s, streamFields)...)
	}
	eps, ok := st["endpoints"].([]any)
	if !ok || len(eps) == 0 {
		fail("no endpoints array")
	}
	current := 0
	for i, e := range eps {
		where := fmt.Sprintf("endpoints[%d]", i)
		m, _ := e.(map[string]any)
		if m == nil {
			fail("%s: not an object", where)
			continue
		}
		bad = append(bad, fields(where, m, endpointFields)...)
		if m["current"] == true {
			current++
		}
		req, _ := num(m["requests"])
		f, _ := num(m["failures"])
		r, _ := num(m["rejected"])
		if f+r > req {
			fail("%s: %v failures and %v rejected of %v requests: each is one of the requests", where, f, r, req)
		}
	}
	if len(eps) > 0 && current != 1 {
		fail("%d endpoints current, want one", current)
	}
	if len(want) > 0 {
		var w any
		if err := decode(want, &w); err != nil {
			return append(bad, fmt.Sprintf("the expected stats: %v", err))
		}
		bad = append(bad, subset("stats", w, st)...)
	}
	return bad
}

// fields checks that m has each of the contract's fields, of its type.
func fields(where string, m map[string]any, want map[string]string) []string {
	var bad []string
	for _, k := range sortedKeys(want) {
		v, ok := m[k]
		if !ok {
			bad = append(bad, fmt.Sprintf("%s: no field %s", where, k))
			continue
		}
		if got := jsonType(v); got != want[k] {
			bad = append(bad, fmt.Sprintf("%s.%s: %s %v, want a %s", where, k, got, v, want[k]))
		}
	}
	return bad
}

// subset reports where got differs from want, for each value want holds.
func subset(where string, want, got any) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: %s, want an object", where, jsonType(got))}
		}
		var bad []string
		for _, k := range sortedKeys(w) {
			if _, ok := g[k]; !ok {
				bad = append(bad, fmt.Sprintf("%s.%s: missing, want %v", where, k, w[k]))
				continue
			}
			bad = append(bad, subset(where+"."+k, w[k], g[k])...)
		}
		return bad
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: %v, want %d items", where, got, len(w))}
		}
		var bad []string
		for i := range w {
			bad = append(bad, subset(fmt.Sprintf("%s[%d]", where, i), w[i], g[i])...)
		}
		return bad
	case json.Number:
		wn, _ := w.Float64()
		if gn, ok := num(got); !ok || gn != wn {
			return []string{fmt.Sprintf("%s: %v, want %v", where, got, w)}
		}
		return nil
	default:
		if got != want {
			return []string{fmt.Sprintf("%s: %#v, want %#v", where, got, want)}
		}
		return nil
	}
}

func decode(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(v)
}

func num(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	return f, err == nil
}

func jsonType(v any) string {
	switch v.(type) {
	case json.Number:
		return "number"
	case string:
		return "string"
	case bool:
		return "bool"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// CheckPrinted returns every way the printed forms of a client fall short:
// none may hold a token, and each names one of the client's endpoints (it
// is the configuration, printed, not an empty string).
func CheckPrinted(printed, endpoints, secrets []string) []string {
	var bad []string
	if len(printed) == 0 {
		return []string{"no printed form"}
	}
	for i, p := range printed {
		shown := p
		for _, s := range secrets {
			if s != "" && strings.Contains(p, s) {
				shown = strings.ReplaceAll(shown, s, "<THE TOKEN>")
				bad = append(bad, fmt.Sprintf("printed form %d holds the token: %.300q", i, shown))
			}
		}
		if !slices.ContainsFunc(endpoints, func(e string) bool { return strings.Contains(p, e) }) {
			bad = append(bad, fmt.Sprintf("printed form %d names no endpoint of the client: %.300q", i, shown))
		}
	}
	return bad
}
