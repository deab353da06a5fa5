package spec

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Every error package ticket (and its rooms) returns that a caller may want to act
// on wraps exactly one of these (test with errors.Is); the rest of the message says
// which server, sequence or worker it concerns. No error ever carries a password.
var (
	// ErrInvalidConfig: Config.Validate refused a field.
	ErrInvalidConfig = errors.New("ticket: invalid config")
	// ErrInvalidArgument: a request (AcquireRequest, Deployment, a lease) is malformed.
	ErrInvalidArgument = errors.New("ticket: invalid argument")
	// ErrNoServer: no ticket server could serve the call; the last server error is
	// wrapped as well.
	ErrNoServer = errors.New("ticket: no ticket server available")
	// ErrServerDown: the one server a call had to use (a lease's owner, or
	// AcquireRequest.Server) could not be reached or is out of rotation.
	ErrServerDown = errors.New("ticket: ticket server down")
	// ErrMisconfigured: a server's auto_increment settings do not match its place in
	// the pair, the servers disagree on a sequence's definition, or a TLS link
	// to a server was refused (then ErrTLS too).
	ErrMisconfigured = errors.New("ticket: ticket server misconfigured")
	// ErrTLS: Config.TLS is set and the link to a server could not be
	// encrypted: its certificate does not verify (another CA, another name,
	// expired), it refused ticketd's, or it offers no TLS. ticketd never falls
	// back to plain text. Always wrapped together with ErrMisconfigured.
	ErrTLS = errors.New("ticket: TLS refused")
	// ErrNoDatabase: a server has no database of Config.Database, or the
	// account may not use it (MariaDB answers both with a refusal at
	// connect). Always wrapped together with ErrMisconfigured: the name is
	// wrong, or schema.sql was never loaded there.
	ErrNoDatabase = errors.New("ticket: no such database")
	// ErrParity: a server returned a ticket of the other servers' parity. That ticket
	// was dropped, and the server taken out of rotation.
	ErrParity = errors.New("ticket: ticket of the wrong parity")
	// ErrBadName: a sequence name that can never be valid.
	ErrBadName = errors.New("ticket: bad sequence name")
	// ErrUnknownSequence: a well-formed name the DBA has not defined.
	ErrUnknownSequence = errors.New("ticket: unknown sequence")
	// ErrSequenceExhausted: the sequence has no value left within its bit width on
	// any server.
	ErrSequenceExhausted = errors.New("ticket: sequence exhausted")
	// ErrLeaseLost: another holder (or a newer version) owns the worker ID now; the
	// caller must stop issuing with it at once.
	ErrLeaseLost = errors.New("ticket: worker lease lost")
	// ErrAllWorkersHeld: every worker ID on every reachable server is held, or
	// reserved too far ahead of the caller's clock.
	ErrAllWorkersHeld = errors.New("ticket: all worker IDs are held")
	// ErrDeploymentMismatch: a server records a different ID layout or epoch than
	// this ticketd was started with; issuing IDs could then collide.
	ErrDeploymentMismatch = errors.New("ticket: deployment settings mismatch")
	// ErrRewound: a server's counter for a ticket table is at or below the
	// high-water mark of tickets it is known to have issued (it was restored from
	// a backup, or lost its data): it would hand out tickets again. The server is
	// refused for that table until its counter passes the mark; the message
	// names the server, the table and the ALTER TABLE that fixes it.
	ErrRewound = errors.New("ticket: ticket server counter rewound")
	// ErrUpgrade: an upgrade between releases is not finished: a server
	// holds an older release's schema, a ticketd of an older release still
	// runs, or the deployment is not finalized for what was asked (ticketd
	// upgrade status says which); or this ticketd is older than the release
	// the deployment was finalized at.
	ErrUpgrade = errors.New("ticket: upgrade not finished")
	// ErrNoKey: a public sequence's values are permuted under a key this
	// ticketd does not hold (no Config.IDKeys, or a ring without the key
	// whose check value the sequence names). Its values are refused, never
	// handed out raw; the message names the check value wanted.
	ErrNoKey = errors.New("ticket: no key for a public sequence")
	// ErrClosed: the Pair was closed.
	ErrClosed = errors.New("ticket: pair closed")
)

// KeyError is why a public sequence is refused for want of its key:
// errors.Is(err, ErrNoKey) holds, and errors.As gives the sequence and the
// check value of the key it wants (for a message that names them). It
// holds check values only, never a key.
type KeyError struct {
	Sequence string
	KeyCheck string   // the check value of the key the sequence wants
	Held     []string // the check values of the keys held; nil: no key file
}

func (e *KeyError) Error() string {
	if e.Held == nil {
		return fmt.Sprintf("%v: sequence %q is public, permuted under the key with check value %s, and this ticketd has no key file (-id-key-file): it refuses the sequence rather than hand out its counter's values",
			ErrNoKey, e.Sequence, e.KeyCheck)
	}
	return fmt.Sprintf("%v: sequence %q is public, permuted under the key with check value %s, which this ticketd's key file does not hold (it holds %s): add that key to the key file (it may follow the encoding key), then send SIGHUP",
		ErrNoKey, e.Sequence, e.KeyCheck, strings.Join(e.Held, ", "))
}

// Is makes errors.Is(e, ErrNoKey) hold.
func (e *KeyError) Is(target error) bool { return target == ErrNoKey }
