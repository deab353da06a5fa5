// Package dba is what a DBA runs against the ticket servers, on its own
// connections, with no Pair and nothing in the background: creating named
// sequences (CreateSequences, `ticketd sequence create`, optionally
// beginning past another system's numbers: start.go), serving an existing
// table of Flickr's shape as one (AdoptTable, `ticketd sequence adopt`),
// and listing and comparing them across the servers (ListSequences,
// CheckSequences, `ticketd sequence list|check`). Public sequences
// (NewSequence.Public) are made under the key the deployment records
// (public.go).
//
// The DBA's other commands are packages of their own beside it: repairing
// counters and lease rows rewound by a restore (package rewind: Repair and
// Rewinds, `ticketd repair`), closing an upgrade and changing the
// deployment record's key and balanced bits (package deployment: Status,
// Finalize, ReadDeployment, SetDeployment, `ticketd upgrade` and `ticketd
// deployment`), and judging a pair before ticketd runs on it (package
// paircheck: CheckPair, `ticketd pair check`). What they all share (their
// connections, the refusal ErrRefused, tables of Flickr's shape, the gate
// on a finalized deployment) is package internal/offline; none of them
// imports package ticket.
//
// Each call checks every server's place in the pair first (the increment
// and offset of its place, as a Pair does) and refuses a misplaced one
// (CheckPair reports it instead). Every write is safe to repeat: a create
// or an adoption compares everything first, on every server, writing
// nothing if any server holds the name (or the table) otherwise
// (ErrRefused, as are deployment.SetDeployment's refusals); a repair moves
// a counter only up, re-reading it first.
//
// The accounts: ticketd_sequences (SELECT on the schema; INSERT into
// sequences, counters, sequence_pins and sequence_starts) for create, list
// and check; ticketd_admin (ALTER on the ticket tables, UPDATE on counters)
// for repair and upgrade; an account that may grant (the DBA's) for adopt,
// and to read every account's grants in CheckPair. schema.sql makes the
// roles.
package dba
