package doccheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

var digitsRE = regexp.MustCompile(`[0-9]+`)

// Normalize replaces every run of digits by "N", so that a documented answer
// matches one with other IDs, times, ports and counters.
func Normalize(s string) string { return digitsRE.ReplaceAllString(s, "N") }

// cleanLines drops carriage returns, trailing spaces and trailing empty lines.
func cleanLines(s string) []string {
	lines := strings.Split(strings.ReplaceAll(s, "\r", ""), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// Compare reports how got differs from the documented output want, or nil.
// With exact, the two must be equal line by line. Otherwise a want that is a
// JSON document is compared by shape (see CompareJSON), and any other text
// line by line after Normalize.
func Compare(want, got string, exact bool) error {
	w, g := cleanLines(want), cleanLines(got)
	if !exact {
		if t := strings.TrimSpace(want); (strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[")) && json.Valid([]byte(t)) {
			return CompareJSON([]byte(t), []byte(strings.TrimSpace(got)))
		}
		for i := range w {
			w[i] = Normalize(w[i])
		}
		for i := range g {
			g[i] = Normalize(g[i])
		}
	}
	for i := 0; i < len(w) || i < len(g); i++ {
		switch {
		case i >= len(w):
			return fmt.Errorf("output line %d %q is not in the docs", i+1, g[i])
		case i >= len(g):
			return fmt.Errorf("documented line %d %q is missing from the output", i+1, w[i])
		case w[i] != g[i]:
			return fmt.Errorf("line %d: got %q, want %q", i+1, g[i], w[i])
		}
	}
	return nil
}

// CompareJSON checks that got has the shape of the documented want: the same
// keys in every object, arrays of the same length, the same type everywhere,
// the same booleans and nulls, and strings equal once Normalize has run over
// both. Numbers only need to be numbers.
func CompareJSON(want, got []byte) error {
	var w, g any
	if err := json.Unmarshal(want, &w); err != nil {
		return fmt.Errorf("documented JSON: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(got))
	if err := dec.Decode(&g); err != nil {
		return fmt.Errorf("output is not JSON (%v): %.200q", err, got)
	}
	if dec.More() {
		return fmt.Errorf("output holds more than one JSON document: %.200q", got)
	}
	return shape("$", w, g)
}

func shape(path string, w, g any) error {
	switch w := w.(type) {
	case map[string]any:
		gm, ok := g.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: got %s, want an object", path, kind(g))
		}
		var missing, extra []string
		for k := range w {
			if _, ok := gm[k]; !ok {
				missing = append(missing, k)
			}
		}
		for k := range gm {
			if _, ok := w[k]; !ok {
				extra = append(extra, k)
			}
		}
		if len(missing)+len(extra) > 0 {
			sort.Strings(missing)
			sort.Strings(extra)
			var why []string
			if len(missing) > 0 {
				why = append(why, fmt.Sprintf("documented but not answered: %s", strings.Join(missing, ", ")))
			}
			if len(extra) > 0 {
				why = append(why, fmt.Sprintf("answered but not documented: %s", strings.Join(extra, ", ")))
			}
			return fmt.Errorf("%s: keys %s", path, strings.Join(why, "; "))
		}
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if err := shape(path+"."+k, w[k], gm[k]); err != nil {
				return err
			}
		}
	case []any:
		ga, ok := g.([]any)
		if !ok {
			return fmt.Errorf("%s: got %s, want an array", path, kind(g))
		}
		if len(ga) != len(w) {
			return fmt.Errorf("%s: got %d elements, want %d", path, len(ga), len(w))
		}
		for i := range w {
			if err := shape(fmt.Sprintf("%s[%d]", path, i), w[i], ga[i]); err != nil {
				return err
			}
		}
	case string:
		gs, ok := g.(string)
		if !ok {
			return fmt.Errorf("%s: got %s, want a string", path, kind(g))
		}
		if Normalize(gs) != Normalize(w) {
			return fmt.Errorf("%s: got %q, want %q", path, gs, w)
		}
	case float64:
		if _, ok := g.(float64); !ok {
			return fmt.Errorf("%s: got %s, want a number", path, kind(g))
		}
	case bool:
		if gb, ok := g.(bool); !ok || gb != w {
			return fmt.Errorf("%s: got %v, want %v", path, g, w)
		}
	case nil:
		if g != nil {
			return fmt.Errorf("%s: got %s, want null", path, kind(g))
		}
	}
	return nil
}

func kind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}
