// Package dba is what a DBA runs against the ticket servers, on its own
// connections, with no Pair and nothing in the background: creating named
// sequences (CreateSequences, `ticketd sequence create`, optionally
// beginning past another system's numbers: start.go), serving an existing
// table of Flickr's shape as one (AdoptTable, `ticketd sequence adopt`),
// listing and comparing them across the servers (ListSequences,
// CheckSequences, `ticketd sequence list|check`), repairing counters and
// lease rows rewound by a restore (Repair and Rewinds, `ticketd repair`),
// closing an upgrade (Status, Finalize, `ticketd upgrade`), reading and
// changing the deployment record's key and balanced bits (ReadDeployment,
// SetDeployment, `ticketd deployment`), and judging a pair before ticketd
// runs on it (CheckPair, `ticketd pair check`). Public sequences
// (NewSequence.Public) are made under the key the deployment records
// (public.go).
//
// Each call checks every server's place in the pair first (the increment
// and offset of its place, as a Pair does) and refuses a misplaced one
// (CheckPair reports it instead). Every write is safe to repeat: a create
// or an adoption compares everything first, on every server, writing
// nothing if any server holds the name (or the table) otherwise
// (ErrRefused); a repair moves a counter only up, re-reading it first.
//
// The accounts: ticketd_sequences (SELECT on the schema; INSERT into
// sequences, counters, sequence_pins and sequence_starts) for create, list
// and check; ticketd_admin (ALTER on the ticket tables, UPDATE on counters)
// for repair and upgrade; an account that may grant (the DBA's) for adopt,
// and to read every account's grants in CheckPair. schema.sql makes the
// roles.
package dba
