// Package frontend is ticketd's HTTP API, served by fasthttp, over an ID
// issuer (IDs: a *worker.Keeper) and the ticket servers (Tickets: a
// *ticket.Pair).
//
// # Endpoints
//
// Every endpoint is a GET. HEAD is accepted where it costs nothing
// (/v1/ids/{id}, /v1/status, /healthz, /readyz, /metrics) and answered like
// GET without a body; on the issuing endpoints (/v1/id, /v1/ids,
// /v1/tickets/{name}) it is a 405, because it would burn an ID or a ticket
// round trip for an answer nobody reads. Any other method is a 405 with an
// Allow header.
//
//	GET /v1/id                  one ID: "123\n" (text/plain), or {"id":"123"}
//	GET /v1/ids?n=N             N IDs, one per line, or {"ids":["1","2"]}
//	GET /v1/ids/{id}            the ID decoded (snowflake.Decoded as JSON)
//	GET /v1/tickets/{name}?n=N  N values of a named sequence (n defaults to 1),
//	                            one per line, or {"sequence":"name","tickets":["7"]}
//	GET /v1/status              the layout, the worker lease and fence, the ticket servers
//	GET /healthz                200 "ok": the process serves
//	GET /readyz                 200 "ok" when an ID can be issued, else 503 and why
//	GET /metrics                Prometheus text
//
// JSON is chosen by ?format=json or an Accept header that contains
// application/json; ?format=text forces text. IDs and tickets are JSON
// strings, because JavaScript loses integers above 2^53. n is decimal digits
// from 1 to Config.MaxBatch; anything else (missing where required, empty,
// 0, negative, not a number, too large, given twice) is a 400 whose message
// names the problem and the bound.
//
// Issuing answers carry Cache-Control: no-store and X-ID-Source: snowflake,
// or ticket for a fallback ID.
//
// # Errors
//
// Every error is JSON {"error":"..."}:
//
//	400  bad n, format, ID or sequence name; a request fasthttp cannot parse;
//	     a request with ambiguous framing (connection closed: framing.go)
//	401  with Config.Tokens: no bearer token, or a malformed or unknown one
//	     (WWW-Authenticate: Bearer realm="ticketd"[, error="invalid_token"])
//	403  with Config.Tokens: the token lacks the endpoint's scope
//	     (WWW-Authenticate: Bearer …, error="insufficient_scope", scope="…")
//	404  no such path; a sequence the DBA has not defined; /metrics and
//	     /v1/status with Config.Admin (they are on ServeAdmin's listener)
//	405  wrong method (Allow: GET, or GET, HEAD)
//	408  request not received within ReadTimeout
//	410  the sequence is exhausted: no value left within its bit width
//	     (permanent, so clients stop retrying; no-store keeps caches out)
//	413  a request body over 4 KiB
//	431  request line and headers over MaxHeaderBytes
//	500  a panic (recovered, logged, counted), a sequence misconfigured on
//	     the ticket servers, or a snowflake ID below FallbackCeiling
//	429  over the token's quota (Retry-After in whole seconds; none when n
//	     alone is above the quota's rate); a connection over
//	     MaxConnsPerIP, answered before it is read
//	503  no ID or ticket can be issued now (Retry-After: 1): no usable worker
//	     lease and no fallback, no ticket server answered within
//	     RequestTimeout, or not ready (/readyz); or a connection over
//	     MaxConns, answered before it is read (conns.go)
//
// Messages never carry the ticket package's errors, which name servers and
// addresses; those go to the log. /v1/status, meant for operators, does show
// each server's address and last error.
//
// # Access
//
// With Config.Tokens (an auth.Store), every endpoint but /healthz and
// /readyz needs Authorization: Bearer TOKEN of a token holding its scope:
// ids for /v1/id, /v1/ids and /v1/ids/{id}, tickets:{name} or tickets:* for
// /v1/tickets/{name}, status for /v1/status, metrics for /metrics (on the
// admin listener too, where /debug/pprof/ needs status and metrics both). A
// path that is no endpoint is a 404 to anyone. /v1/id, /v1/ids and
// /v1/tickets then take n from the token's quota (auth.Token.TakeIDs,
// TakeTickets) before issuing; refusals are counted per token in
// ticketd_quota_rejections_total{token}. ReloadTokens swaps the tokens
// while requests run. Logs name a token by its NAME, never the token.
//
// With Config.TLS both listeners speak HTTPS only (TLS 1.2 or later); a
// connection over the limits is answered through the handshake too.
//
// # Waiting for a worker lease
//
// /v1/id and /v1/ids call IDs.NextWait and IDs.NextNWait with the request's
// deadline (RequestTimeout after the handler was called). While the keeper is
// replacing its generator (a lost lease, a switch), a request waits for the
// replacement instead of failing: the caller sees latency, not an error. The
// fallback and the 503 below apply only when no replacement is coming, or
// it does not come by the deadline; the fallback then has what is left of it.
//
// # Fallback
//
// With Config.Fallback on, /v1/id answers from the ticket servers'
// Tickets64 when the keeper has no usable lease (worker.ErrNoWorker,
// snowflake.ErrFenced, snowflake.ErrStopped). Every such value is checked to
// lie in (0, FallbackCeiling): the ceiling is the smallest snowflake ID the
// deployment can ever issue, so a fallback ID can never equal one. A value
// outside is never returned: it is logged, counted in
// ticketd_fallback_ids_refused_total, and the request gets a 503. /v1/ids is
// not served from the fallback (a 503 that says so): one round trip per ID
// would tie up the ticket servers the fallback depends on.
//
// The other side of the same line is checked too: a snowflake ID below
// FallbackCeiling, which a keeper given the deployment's first start as its
// floor never issues, is refused with a 500, logged, and counted in
// ticketd_snowflake_ids_refused_total. It costs one comparison per request.
//
// # Readiness
//
// /readyz is 200 when SetReady(true) was called, neither Drain nor Shutdown
// has begun, and an ID can be issued: the keeper holds a lease with headroom
// left, or the fallback is on and some ticket server is up. A keeper short of
// worker IDs (worker.Status.Short) adds why to the reason.
//
// # Hot path
//
// /v1/id allocates nothing per request, with a token and a quota too (see
// TestIDAllocs, TestAccessAllocs): the ID is
// formatted with strconv.AppendInt into a stack buffer, headers are set from
// byte slices made once, the path is switched on without a copy, and request
// counters are created up front for every endpoint and status code, so
// counting is an array index and an atomic add. Batches use pooled buffers.
//
// # Metrics
//
// /metrics is one registry of Prometheus' Go client (client_golang) per
// Server, encoded in the text format (expfmt) straight into the answer. It
// passes promtool check metrics and client_golang's lint: every family's
// HELP and TYPE come from its definition (metrics.go, metrics_backend.go,
// calls.go). Request durations are Prometheus histograms per endpoint,
// timed from fasthttp's request start with fixed buckets and atomic adds (no
// lock, no allocation); Config.CallDurations adds the ticket servers'
// statement durations by server and kind, when its Observe is the pair's
// ticket.Config.Observe; the Go runtime's and the process's families are
// client_golang's collectors. The ticket side's optional figures
// (reporters.go: PanicCalls, Warnings, the catalog, SequenceStats: the 100
// most used sequences) are read when the Tickets implementation has them.
//
// # Lifecycle
//
// Serve blocks until Shutdown and then returns nil. Drain, called first by
// a graceful stop, turns /readyz to 503 and makes every answer carry
// Connection: close, while requests are still served, so that load
// balancers move away before the listener closes. Shutdown turns /readyz to
// 503 (if Drain has not), stops accepting, and waits for requests in flight;
// if its context ends first it cancels the MySQL calls in flight and closes
// every connection. No goroutine outlives Shutdown by more than about a
// second (fasthttp's idle-worker cleaner). ServeAdmin (optional) serves
// /metrics, /v1/status and net/http/pprof on a second listener, which
// Shutdown closes last. Calls to the ticket servers run under a context
// derived from the Server's lifetime with RequestTimeout, never from the
// fasthttp RequestCtx, which is not a request-scoped context.
//
// # Limits and logs
//
// Connections are admitted below fasthttp, within MaxConns and
// MaxConnsPerIP (conns.go); memory held by a burst of them is given back
// once it has ended (reclaim.go). Connection errors are counted by kind and
// logged in summary, never with the bytes a client sent (connlog.go).
package frontend
