package offline

import "errors"

// ErrRefused is dba.ErrRefused: a call that refused what it was asked
// before writing anything (see there).
var ErrRefused = errors.New("dba: refused, nothing written")

// Refused wraps err as a refusal (ErrRefused).
func Refused(err error) error { return refusal{err} }

type refusal struct{ err error }

func (r refusal) Error() string        { return r.err.Error() }
func (r refusal) Unwrap() error        { return r.err }
func (r refusal) Is(target error) bool { return target == ErrRefused }
