package auth

import (
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Token is one line of a tokens file: a name, the rights it grants and its
// quotas. It never holds the secret itself, only what a Set needs to find it
// (its SHA-256 digest, inside the Set). Tokens are read-only once parsed and
// safe for concurrent use; a request may go on using the *Token it
// authenticated with after the Set was replaced by a reload.
type Token struct {
	// Name is what logs, metrics and error messages say instead of the
	// token: the file's NAME field.
	Name string
	// Line is the line of the tokens file the token was read from.
	Line int

	scopes    Scope
	sequences []string // sorted; see AllowsTickets
	ids       *Bucket  // nil: unlimited
	tickets   *Bucket  // nil: unlimited
}

// Allows reports whether the token holds every scope in s. It costs one AND
// and allocates nothing.
func (t *Token) Allows(s Scope) bool { return s != 0 && t.scopes&s == s }

// AllowsTickets reports whether the token may take values of the named
// sequence: it holds tickets:* or tickets:NAME. It allocates nothing; a token
// that lists k sequences costs a binary search over k names.
func (t *Token) AllowsTickets(sequence string) bool {
	if t.scopes&scopeAllTickets != 0 {
		return true
	}
	_, found := slices.BinarySearch(t.sequences, sequence)
	return found
}

// TakeIDs asks the token's IDs-per-second quota for n IDs: see Bucket.Take.
// A token without an ids= quota always gets them.
func (t *Token) TakeIDs(n int) (ok bool, retryAfter time.Duration) { return t.ids.Take(n) }

// TakeTickets asks the token's tickets-per-second quota for n values, of any
// sequence: see Bucket.Take. A token without a tickets= quota always gets
// them.
func (t *Token) TakeTickets(n int) (ok bool, retryAfter time.Duration) {
	return t.tickets.Take(n)
}

// IDQuota and TicketQuota are the token's buckets, nil when unlimited.
func (t *Token) IDQuota() *Bucket     { return t.ids }
func (t *Token) TicketQuota() *Bucket { return t.tickets }

// Scopes is the token's scope field as a tokens file would write it, for
// logs and status pages ("ids,tickets:orders").
func (t *Token) Scopes() string {
	words := []string{}
	if s := (t.scopes &^ (ScopeStatus | ScopeMetrics)).String(); s != "" {
		words = append(words, s)
	}
	for _, name := range t.sequences {
		words = append(words, wordTickets+name)
	}
	if s := (t.scopes & (ScopeStatus | ScopeMetrics)).String(); s != "" {
		words = append(words, s)
	}
	return strings.Join(words, ",")
}

// String is the token's name: printing a Token can never print a secret.
func (t *Token) String() string { return t.Name }

// GoString is the token's name too, for %#v.
func (t *Token) GoString() string { return "auth.Token{Name: " + strconv.Quote(t.Name) + "}" }

// LogValue logs a token as its name.
func (t *Token) LogValue() slog.Value { return slog.StringValue(t.Name) }
