package frontend

import (
	"bytes"
	"fmt"

	"github.com/valyala/fasthttp"
)

// format is how an issuing answer is written.
type format uint8

const (
	formatText   format = iota // one decimal value per line
	formatJSON                 // a JSON object, values as decimal strings
	formatBinary               // 8 bytes per value, big-endian, nothing else
)

// query is what the API reads from a request's query string and Accept
// header. Slices point into the request and are valid only until the handler
// returns.
type query struct {
	format format
	n      []byte
	hasN   int // how many times n was given
	fmtArg []byte
	hasFmt int
	// after: only IDs greater than this one (after.go); with=public: each
	// ID with its public form; from=public: the {id} of /v1/ids/{id} is a
	// public form (public.go).
	after    []byte
	hasAfter int
	with     []byte
	hasWith  int
	from     []byte
	hasFrom  int
}

// readQuery reads n and format from the query string and Accept. It
// allocates nothing: fasthttp parses the arguments into buffers it reuses.
// Unknown arguments are ignored (cache busters such as _=123 are common).
// It returns a message for the client when format is unusable.
func readQuery(ctx *fasthttp.RequestCtx) (q query, problem string) {
	// Most calls of the hot path carry no query string: skip parsing one.
	if len(ctx.URI().QueryString()) > 0 {
		for k, v := range ctx.QueryArgs().All() {
			switch string(k) {
			case "n":
				q.n, q.hasN = v, q.hasN+1
			case "format":
				q.fmtArg, q.hasFmt = v, q.hasFmt+1
			case "after":
				q.after, q.hasAfter = v, q.hasAfter+1
			case "with":
				q.with, q.hasWith = v, q.hasWith+1
			case "from":
				q.from, q.hasFrom = v, q.hasFrom+1
			}
		}
	}
	switch {
	case q.hasAfter > 1 || q.hasWith > 1 || q.hasFrom > 1:
		return q, "after, with and from may each be given once"
	case q.hasWith == 1 && string(q.with) != "public":
		return q, fmt.Sprintf("with %.32q is not supported: want with=public (each ID with its public form)", q.with)
	case q.hasFrom == 1 && string(q.from) != "public":
		return q, fmt.Sprintf("from %.32q is not supported: want from=public (the value is a public form)", q.from)
	case q.hasFmt > 1:
		return q, fmt.Sprintf("format given %d times: give it once, json, text or binary", q.hasFmt)
	case q.hasFmt == 1:
		// An explicit format wins over Accept: it is what a person typed.
		switch string(q.fmtArg) {
		case "json":
			q.format = formatJSON
		case "text":
		case "binary":
			q.format = formatBinary
		default:
			return q, fmt.Sprintf("format %.32q is not supported: want json, text or binary", q.fmtArg)
		}
	default:
		q.format = acceptFormat(ctx.Request.Header.PeekCanonical(hdrAccept))
	}
	return q, ""
}

// public reports whether the request asks for public forms (with=public).
func (q query) public() bool { return q.hasWith == 1 }

// acceptFormat picks the format an Accept header asks for: JSON or binary,
// whichever it names first; text when it names neither.
func acceptFormat(accept []byte) format {
	if len(accept) == 0 {
		return formatText
	}
	j := bytes.Index(accept, mimeJSON)
	b := bytes.Index(accept, mimeBinary)
	switch {
	case b >= 0 && (j < 0 || b < j):
		return formatBinary
	case j >= 0:
		return formatJSON
	}
	return formatText
}

// count reads n: decimal digits only, from 1 to max. def is the value when n
// is absent; def 0 makes n required. The message names the problem and the
// bound, for a 400.
func (q query) count(def, max int) (int, string) {
	switch {
	case q.hasN == 0 && def > 0:
		return def, ""
	case q.hasN == 0:
		return 0, fmt.Sprintf("missing n: want ?n=N with N from 1 to %d", max)
	case q.hasN > 1:
		return 0, fmt.Sprintf("n given %d times: give it once, from 1 to %d", q.hasN, max)
	}
	n, problem := parseCount(q.n, max)
	switch problem {
	case countOK:
		return n, ""
	case countEmpty:
		return 0, fmt.Sprintf("n is empty: want an integer from 1 to %d", max)
	case countNegative:
		return 0, fmt.Sprintf("n %.32q is negative: want an integer from 1 to %d", q.n, max)
	case countNotNumber:
		return 0, fmt.Sprintf("n %.32q is not a number: want an integer from 1 to %d", q.n, max)
	case countZero:
		return 0, fmt.Sprintf("n is 0: want an integer from 1 to %d", max)
	default: // countTooLarge
		return 0, fmt.Sprintf("n %.32s is above the maximum %d", q.n, max)
	}
}

type countProblem uint8

const (
	countOK countProblem = iota
	countEmpty
	countNegative
	countNotNumber
	countZero
	countTooLarge
)

// parseCount parses a count of 1..max written in decimal digits (leading
// zeros allowed, no sign, no spaces). It never overflows: digits beyond max
// stop the scan.
func parseCount(b []byte, max int) (int, countProblem) {
	if len(b) == 0 {
		return 0, countEmpty
	}
	if b[0] == '-' && len(b) > 1 && isDigits(b[1:]) {
		return 0, countNegative
	}
	if !isDigits(b) {
		return 0, countNotNumber
	}
	n := 0
	for _, c := range b {
		n = n*10 + int(c-'0')
		if n > max {
			return 0, countTooLarge
		}
	}
	if n == 0 {
		return 0, countZero
	}
	return n, countOK
}

func isDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
