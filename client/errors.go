package client

import "errors"

// Sentinel errors. Errors returned by this package wrap one of these (or a
// context error), so callers test with errors.Is.
var (
	// ErrNoEndpoints: Config.Endpoints is empty.
	ErrNoEndpoints = errors.New("client: no ticketd endpoint")
	// ErrBadEndpoint: an endpoint is not a usable base URL.
	ErrBadEndpoint = errors.New("client: bad endpoint")
	// ErrBadConfig: a Config field is outside its bounds.
	ErrBadConfig = errors.New("client: bad config")

	// ErrUnavailable: nothing was buffered and no endpoint could issue. The
	// error names each endpoint's last failure.
	ErrUnavailable = errors.New("client: no ticketd could issue")
	// ErrRejected: ticketd refused the request itself (a 4xx answer: an
	// unknown or exhausted sequence, a batch above its -max-batch). Asking
	// another ticketd would not help; the error carries ticketd's message.
	ErrRejected = errors.New("client: ticketd rejected the request")
	// ErrBadAnswer: an endpoint answered something that is not a batch in
	// the binary format (wrong length, type or order). The endpoint is
	// skipped like one that failed.
	ErrBadAnswer = errors.New("client: malformed answer")
	// ErrBadName: a sequence name ticketd would refuse: a lowercase letter,
	// then up to 47 lowercase letters, digits or underscores.
	ErrBadName = errors.New("client: bad sequence name")
	// ErrClosed: the client was closed.
	ErrClosed = errors.New("client: closed")
	// ErrNoKeys: Public or FromPublic without Config.IDKeys.
	ErrNoKeys = errors.New("client: no IDKeys: public forms need the deployment's key file")
	// ErrNotPublic: a value that is no public form of an ID under the keys.
	ErrNotPublic = errors.New("client: not a public form of an ID")
)
