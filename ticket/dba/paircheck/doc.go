// Package paircheck is `ticketd pair check`: CheckPair reads every server of
// a pair before ticketd is put on it (the DBA's own, or one set up the old
// way, with applications on it) and reports what keeps ticketd from serving
// it, each with its fix, in the order to fix them (PairProblem), and what
// differs but harms nothing, or could not be checked (PairNote).
//
// What must hold: it writes nothing; every server must answer; it connects
// without a default database, so that a missing one is a finding.
package paircheck
