// Package auth reads a tokens file and answers, per request, which client a
// bearer token belongs to, what it may do and whether its quota allows it.
// It knows nothing of HTTP servers: a server hands it the Authorization
// header's value and gets a *Token (or a sentinel error) back.
//
// # Tokens file
//
// One token per line, fields separated by blanks (spaces or tabs):
//
//	# NAME      TOKEN                 SCOPES               QUOTAS (optional)
//	orders-api  sha256:9f86d081…(64)  ids,tickets:orders   ids=2000/s tickets=100/s
//	billing     0c8e5d1f4a…(the token itself)  tickets:invoices
//	prometheus  sha256:…              metrics
//	ops         sha256:…              status,metrics
//
// In detail:
//
//   - '#' starts a comment, anywhere on a line (a token cannot contain '#');
//     blank lines are skipped; a trailing CR (a file saved on Windows) is
//     ignored; any other control character is an error.
//   - NAME is a letter or digit, then up to 63 letters, digits, '_', '.' or
//     '-'. Logs, metrics ({token="NAME"}) and error messages say the NAME,
//     never the token. Names are unique within a file.
//   - TOKEN is the token a client sends, at least MinTokenLen (32) and at
//     most MaxTokenLen (512) characters of RFC 6750's token syntax (letters,
//     digits, - . _ ~ + /, then optional '='), or sha256: and the 64 hex
//     digits of its SHA-256, so that the file need not hold the secret
//     (printf %s "$TOKEN" | sha256sum). Tokens are unique within a file (a
//     token and the digest of the same token count as the same). The 64
//     hex digits without sha256: are a literal token, not a digest.
//   - SCOPES is a comma-separated list, without blanks, of
//     ids (snowflake IDs), tickets:* (every named sequence),
//     tickets:NAME (the sequence NAME, ^[a-z][a-z0-9_]{0,47}$ as in
//     schema.sql), status and metrics. A scope given twice, or tickets:NAME
//     beside tickets:*, is an error.
//   - QUOTAS, after the scopes, are ids=N/s and tickets=N/s: at most N IDs,
//     or N values of named sequences (all of the token's sequences
//     together), per second, with bursts up to N (see Bucket). N is a whole
//     number from MinRate to MaxRate. A token without a quota is unlimited;
//     a quota for a scope the token lacks is an error.
//
// A file with no token is refused (ErrNoTokens): an empty file is far more
// often a truncated copy than an intent, and a server that took it would
// refuse every client. Every other problem is a *FileError that names each
// bad line and never quotes a field long enough to be a token. The bounds
// are MaxTokens tokens and MaxFileSize bytes.
//
// # Scopes in ticketd
//
// What a scope opens is the server's choice. ticketd serve's (frontend,
// access.go; -tokens-file):
//
//	/v1/id, /v1/ids, /v1/ids/{id}   ids
//	/v1/tickets/{name}              tickets:{name} or tickets:*
//	/v1/status                      status
//	/metrics                        metrics
//	/debug/pprof/ (admin listener)  status and metrics both
//	/healthz, /readyz               no token (load balancers probe them)
//
// # Lookups
//
// Set.Authenticate hashes the presented token with SHA-256 and compares the
// digest with every token's using crypto/subtle, so its time depends on the
// number of tokens and on nothing secret: see Set.Authenticate. On a hit it
// returns the *Token, whose Allows and AllowsTickets cost a few instructions;
// neither allocates. A Set keeps only digests in memory, never a token.
//
// A Store holds the current Set of a file and swaps it atomically on Reload
// (SIGHUP): requests in flight finish with the Set they loaded; a file that
// does not parse on reload leaves the current Set in place. CheckFileMode
// warns about a tokens file that others than its owner may read or write.
// LoopbackOnly tells a listen address that only this machine reaches from
// one that needs tokens.
//
// # Quotas
//
// A Bucket is a token bucket of N per second holding at most one second's
// worth, kept in one atomic word; Token.TakeIDs and Token.TakeTickets ask a
// token's buckets for n values and answer how long to wait when they are
// empty. Buckets are per token and per process: behind a load balancer
// spreading a client over k ticketd, the client gets up to k times N.
package auth
