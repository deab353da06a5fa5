// Package dba is what a DBA runs against the ticket servers, on its own
// connections, with no Pair and nothing in the background: creating named
// sequences (CreateSequences, `ticketd sequence create`), listing and
// comparing them across the servers (ListSequences, CheckSequences,
// `ticketd sequence list|check`), and repairing counters and lease rows
// rewound by a restore (Repair and Rewinds, `ticketd repair`).
//
// Each call checks every server's place in the pair first (the increment
// and offset of its place, as a Pair does) and refuses a misplaced one.
// Every write is safe to repeat: a create inserts with INSERT IGNORE and
// compares everything first, writing nothing if any server holds the name
// otherwise; a repair moves a counter only up, re-reading it first.
//
// The accounts: ticketd_sequences (SELECT on the schema; INSERT into
// sequences, counters and sequence_pins) for create, list and check;
// ticketd_admin (ALTER on the ticket tables, UPDATE on counters) for
// repair. schema.sql makes both roles.
package dba
