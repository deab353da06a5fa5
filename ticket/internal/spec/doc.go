// Package spec is the vocabulary every room of package ticket shares: the
// Config of a pair and its bounds, the sentinel errors, what a sequence
// definition is (SequenceInfo: the one shape of a definition outside the
// storage edge) and the limits of its values, and how a counter is named in
// high_water. It does no I/O and imports no other room.
//
// Package ticket re-exports these names (Config, ErrNoServer, …) as its own
// API: they are the same types and values, so errors.Is and type switches
// see no difference whichever name a caller uses.
package spec
