// Package promtext writes Prometheus' text exposition format (version 0.0.4)
// the way `promtool check metrics` wants it: every family announced by a
// HELP line with text and a TYPE line before its samples, histograms with
// cumulative `le` buckets, `_sum` and `_count`, and the Go runtime and process
// families under the names Prometheus' own Go client uses, so the usual
// dashboards find them.
//
// Scrape-time code writes through a Writer; the request path only touches a
// Histogram, whose Observe is a few atomic adds: no lock, no allocation.
//
// Families must be written whole, one after the other: Prometheus rejects a
// family whose samples are split by another family's.
package promtext

import (
	"io"
	"math"
	"strconv"
	"strings"
)

// Type is a family's TYPE.
type Type string

// The types ticketd writes.
const (
	Counter   Type = "counter"
	Gauge     Type = "gauge"
	Histogram Type = "histogram"
	Summary   Type = "summary"
)

// Writer writes families to an io.Writer. It keeps one scratch buffer, so a
// scrape formats every number without allocating per sample. Not safe for
// concurrent use: one Writer per scrape.
type Writer struct {
	w   io.Writer
	buf []byte
}

// NewWriter returns a Writer on w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w, buf: make([]byte, 0, 256)} }

// helpEscaper escapes HELP text as the format requires: backslash and newline.
var helpEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`)

// Family announces a family: its HELP and TYPE lines. The samples that
// follow (Sample, Uint, Float) must be of this family.
func (w *Writer) Family(name string, t Type, help string) {
	b := append(w.buf[:0], "# HELP "...)
	b = append(b, name...)
	b = append(b, ' ')
	b = append(b, helpEscaper.Replace(help)...)
	b = append(b, "\n# TYPE "...)
	b = append(b, name...)
	b = append(b, ' ')
	b = append(b, t...)
	b = append(b, '\n')
	w.flush(b)
}

// Uint writes one sample: series is the name with its labels, as in
// `ticketd_tickets_issued_total{server="1"}`.
func (w *Writer) Uint(series string, v uint64) {
	b := append(w.buf[:0], series...)
	b = append(b, ' ')
	b = strconv.AppendUint(b, v, 10)
	w.flush(append(b, '\n'))
}

// Int writes one sample with an integer value.
func (w *Writer) Int(series string, v int64) {
	b := append(w.buf[:0], series...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, v, 10)
	w.flush(append(b, '\n'))
}

// Float writes one sample with a float value (NaN and ±Inf as the format
// spells them).
func (w *Writer) Float(series string, v float64) {
	b := append(w.buf[:0], series...)
	b = append(b, ' ')
	b = appendFloat(b, v)
	w.flush(append(b, '\n'))
}

// CounterUint writes a family of one unlabelled counter sample.
func (w *Writer) CounterUint(name, help string, v uint64) {
	w.Family(name, Counter, help)
	w.Uint(name, v)
}

// GaugeFloat writes a family of one unlabelled gauge sample.
func (w *Writer) GaugeFloat(name, help string, v float64) {
	w.Family(name, Gauge, help)
	w.Float(name, v)
}

// GaugeBool writes a family of one unlabelled gauge sample, 1 or 0.
func (w *Writer) GaugeBool(name, help string, v bool) {
	w.Family(name, Gauge, help)
	w.Uint(name, b2u(v))
}

// Raw writes text that is already in the format (whole lines).
func (w *Writer) Raw(p []byte) { _, _ = w.w.Write(p) }

func (w *Writer) flush(b []byte) {
	w.buf = b[:0] // keep the grown buffer
	_, _ = w.w.Write(b)
}

func appendFloat(b []byte, v float64) []byte {
	switch {
	case math.IsNaN(v):
		return append(b, "NaN"...)
	case math.IsInf(v, 1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	}
	if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
		// Counts and whole seconds read as integers (42, not 4.2e+01).
		return strconv.AppendInt(b, int64(v), 10)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// Series returns name{a="1",b="2"} from alternating label names and values,
// each value quoted as the format wants (backslash, double quote and newline
// escaped). With no labels it returns name.
func Series(name string, kv ...string) string {
	if len(kv) < 2 {
		return name
	}
	return name + "{" + Labels(kv...) + "}"
}

// Labels returns `a="1",b="2"` from alternating names and values.
func Labels(kv ...string) string {
	var b strings.Builder
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		writeLabel(&b, kv[i], kv[i+1])
	}
	return b.String()
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func writeLabel(b *strings.Builder, name, value string) {
	b.WriteString(name)
	b.WriteString(`="`)
	b.WriteString(labelEscaper.Replace(value))
	b.WriteByte('"')
}
