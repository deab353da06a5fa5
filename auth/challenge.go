package auth

// Realm is the realm of the WWW-Authenticate challenges.
const Realm = "ticketd"

// WWW-Authenticate values (RFC 6750 section 3), constants so that a refusal
// allocates nothing.
const (
	challengeNone    = `Bearer realm="` + Realm + `"`
	challengeInvalid = `Bearer realm="` + Realm + `", error="invalid_token"`
)

// Challenge is the WWW-Authenticate value of the 401 answering err, an error
// of Authenticate: a bare challenge when no token was presented, and
// error="invalid_token" when one was but it is malformed or unknown.
func Challenge(err error) string {
	if err == ErrNoToken {
		return challengeNone
	}
	return challengeInvalid
}

// ScopeChallenge is the WWW-Authenticate value of the 403 answering a token
// that lacks scope (as a tokens file writes it: "ids", "tickets:orders").
// A scope with a character outside a-z 0-9 _ : * (a sequence name taken
// from a request path, say) is left out rather than quoted. It allocates; it
// is only for refusals.
func ScopeChallenge(scope string) string {
	c := `Bearer realm="` + Realm + `", error="insufficient_scope"`
	for i := 0; i < len(scope); i++ {
		if b := scope[i]; (b < 'a' || b > 'z') && (b < '0' || b > '9') && b != '_' && b != ':' && b != '*' {
			return c
		}
	}
	if scope == "" {
		return c
	}
	return c + `, scope="` + scope + `"`
}
