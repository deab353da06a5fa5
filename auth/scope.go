package auth

import (
	"fmt"
	"slices"
	"strings"

	"ticketd/ticket/seqname"
)

// Scope is a right a token may hold, other than the right to a named
// sequence (see Token.AllowsTickets). Scopes combine with |.
type Scope uint8

// The scopes of a tokens file. What each opens is the server's decision; the
// documented mapping for ticketd is in the package comment.
const (
	// ScopeIDs: "ids", snowflake IDs (/v1/id, /v1/ids, /v1/ids/{id}).
	ScopeIDs Scope = 1 << iota
	// ScopeStatus: "status", /v1/status (ticket servers' addresses and errors).
	ScopeStatus
	// ScopeMetrics: "metrics", /metrics.
	ScopeMetrics

	// scopeAllTickets: "tickets:*", every named sequence. Not exported: a
	// sequence is asked for by name, with AllowsTickets.
	scopeAllTickets
)

// Scope words of the file format.
const (
	wordIDs        = "ids"
	wordStatus     = "status"
	wordMetrics    = "metrics"
	wordTickets    = "tickets:"
	wordAllTickets = "tickets:*"
)

// String is the scope as a tokens file writes it ("ids,status" for several).
func (s Scope) String() string {
	var words []string
	for _, w := range []struct {
		bit  Scope
		word string
	}{{ScopeIDs, wordIDs}, {scopeAllTickets, wordAllTickets}, {ScopeStatus, wordStatus}, {ScopeMetrics, wordMetrics}} {
		if s&w.bit != 0 {
			words = append(words, w.word)
		}
	}
	return strings.Join(words, ",")
}

// grants is what one token line's scope field grants.
type grants struct {
	scopes    Scope
	sequences []string // sorted, no duplicates; empty with scopeAllTickets
}

// parseScopes reads SCOPE[,SCOPE…]. Problems are reported as messages for a
// LineError; an item is quoted only when it could not be a token (quote).
func parseScopes(field string) (grants, string) {
	var g grants
	seen := map[string]bool{}
	items := strings.Split(field, ",")
	for i, item := range items {
		if item == "" {
			return g, fmt.Sprintf("scope %d of %d is empty (scopes are separated by single commas, no blanks)", i+1, len(items))
		}
		if seen[item] {
			return g, fmt.Sprintf("scope %s is given twice", quote(item))
		}
		seen[item] = true
		switch {
		case item == wordIDs:
			g.scopes |= ScopeIDs
		case item == wordStatus:
			g.scopes |= ScopeStatus
		case item == wordMetrics:
			g.scopes |= ScopeMetrics
		case item == wordAllTickets:
			g.scopes |= scopeAllTickets
		case strings.HasPrefix(item, wordTickets):
			name := item[len(wordTickets):]
			if !ValidSequenceName(name) {
				return g, fmt.Sprintf("scope %s: a sequence name is a lower-case letter, then up to 47 lower-case letters, digits or underscores (^[a-z][a-z0-9_]{0,47}$), or * for every sequence", quote(item))
			}
			g.sequences = append(g.sequences, name)
		default:
			return g, fmt.Sprintf("unknown scope %s: scopes are ids, tickets:*, tickets:NAME, status, metrics", quote(item))
		}
	}
	if g.scopes&scopeAllTickets != 0 && len(g.sequences) > 0 {
		return g, fmt.Sprintf("scope %s is already covered by tickets:*", quote(wordTickets+g.sequences[0]))
	}
	slices.Sort(g.sequences)
	return g, ""
}

// ValidSequenceName reports whether name may name a sequence: the rule of
// schema.sql's sequences table, ^[a-z][a-z0-9_]{0,47}$ (package seqname,
// the one rule ticketd checks names with). A tickets:NAME scope with any
// other name could never match a request, so the parser refuses it.
func ValidSequenceName(name string) bool { return seqname.Valid(name) }
