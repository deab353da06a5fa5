package main

import (
	"slices"
	"strings"
	"testing"
)

// promqlKeywords are PromQL words that are no metric: binary operators,
// modifiers, the literals, and the aggregations (which may come before
// their by/without clause rather than before "(").
var promqlKeywords = map[string]bool{
	"and": true, "or": true, "unless": true, "bool": true, "offset": true, "atan2": true,
	"inf": true, "nan": true, "Inf": true, "NaN": true,
	"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true,
	"count": true, "count_values": true, "bottomk": true, "topk": true, "quantile": true,
}

// groupingKeywords are followed by a list of label names in parentheses.
var groupingKeywords = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
}

// metricNames returns the metric names a PromQL expression selects, in
// order, once each. A small tokenizer, not a parser: it skips strings, label
// matchers ({…}), ranges and subqueries ([…]), numbers and durations,
// template variables ($x), function names (an identifier before "("),
// keywords, and the label lists of by, without, on, ignoring, group_left
// and group_right. A name written as __name__="x" inside braces is not seen;
// ticketd's rules and dashboard never do that.
func metricNames(expr string) []string {
	var names []string
	s := expr
	for len(s) > 0 {
		c := s[0]
		switch {
		case c == '"' || c == '\'' || c == '`':
			s = skipString(s)
		case c == '{':
			s = skipUntil(s, '}')
		case c == '[':
			s = skipUntil(s, ']')
		case c == '$':
			i := 1
			for i < len(s) && (isIdentChar(s[i]) || s[i] == '{' || s[i] == '}') {
				i++
			}
			s = s[i:]
		case c >= '0' && c <= '9' || c == '.':
			// a number or a duration: 0.99, 1e3, 0x1f, 5m, 1h30m
			i := 1
			for i < len(s) && (isIdentChar(s[i]) || s[i] == '.') {
				i++
			}
			s = s[i:]
		case isIdentStart(c):
			i := 1
			for i < len(s) && isIdentChar(s[i]) {
				i++
			}
			word, rest := s[:i], strings.TrimLeft(s[i:], " \t\n")
			s = s[i:]
			switch {
			case groupingKeywords[word]:
				if strings.HasPrefix(rest, "(") {
					s = skipUntil(rest, ')')
				}
			case promqlKeywords[word] || strings.HasPrefix(rest, "("):
				// a keyword, or a function (or an aggregation) called
			default:
				if !slices.Contains(names, word) {
					names = append(names, word)
				}
			}
		default:
			s = s[1:]
		}
	}
	return names
}

func isIdentStart(c byte) bool {
	return c == '_' || c == ':' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdentChar(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }

// skipString skips the quoted string s starts with (backslash escapes
// inside " and ').
func skipString(s string) string {
	q := s[0]
	for i := 1; i < len(s); i++ {
		switch {
		case s[i] == '\\' && q != '`':
			i++
		case s[i] == q:
			return s[i+1:]
		}
	}
	return ""
}

// skipUntil skips past the first end outside a string.
func skipUntil(s string, end byte) string {
	s = s[1:]
	for len(s) > 0 {
		switch c := s[0]; {
		case c == end:
			return s[1:]
		case c == '"' || c == '\'' || c == '`':
			s = skipString(s)
		default:
			s = s[1:]
		}
	}
	return ""
}

func TestMetricNames(t *testing.T) {
	tests := []struct {
		expr string
		want []string
	}{
		{`ticketd_ready == 0`, []string{"ticketd_ready"}},
		{`up{job="ticketd"} == 0`, []string{"up"}},
		{`ticketd_fence_headroom_seconds < 20 and ticketd_lease_held == 1`, []string{"ticketd_fence_headroom_seconds", "ticketd_lease_held"}},
		{`min by (datacenter) (ticketd_worker_outage_headroom) < 0`, []string{"ticketd_worker_outage_headroom"}},
		{`max without (server) (ticketd_ticket_server_up) == 0`, []string{"ticketd_ticket_server_up"}},
		{`increase(ticketd_warnings_total{kind="tickets_no_server"}[5m]) > 0`, []string{"ticketd_warnings_total"}},
		{"sum without (endpoint, code) (rate(ticketd_requests_total{code=~\"5..\"}[5m]))\n  / sum without (endpoint, code) (rate(ticketd_requests_total[5m])) > 0.01",
			[]string{"ticketd_requests_total"}},
		{`histogram_quantile(0.99, sum by (endpoint, le) (rate(ticketd_request_duration_seconds_bucket{instance=~"$instance",endpoint=~"/v1/ids?"}[$__rate_interval])))`,
			[]string{"ticketd_request_duration_seconds_bucket"}},
		{`a / on (instance) group_left (version) b offset 5m`, []string{"a", "b"}},
		{`rate(x[1h:5m]) * 1e3 + sum(y{l='a}b'}) - Inf`, []string{"x", "y"}},
		{`foo:bar_rate5m unless ignoring(code) baz`, []string{"foo:bar_rate5m", "baz"}},
	}
	for _, tt := range tests {
		if got := metricNames(tt.expr); !slices.Equal(got, tt.want) {
			t.Errorf("metricNames(%q) = %q, want %q", tt.expr, got, tt.want)
		}
	}
}
