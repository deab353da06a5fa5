// Package sequence is the named sequences of a pair: the catalog of their
// definitions as every server holds them, the pins that keep a definition
// from changing under ticketd, and the blocks of values served from memory.
//
// A DBA defines a sequence (`ticketd sequence create`, package dba): a row
// in table `sequences` (name, bits, block size B) and a row of table counters
// on each server, whose value is the last ticket it handed out and which
// carries the server's start (its offset) and step (the pair's size); its
// tickets are taken by package tickets. Sequences of older deployments name
// a counter table of their own (seq_*, like Tickets64) and keep working,
// with REPLACE.
//
// Names are validated (^[a-z][a-z0-9_]{0,47}$) and looked up in the catalog
// (catalog.go, package seqname's rule); the name (or table) in the SQL comes only from the catalog,
// after validation, so request text never becomes SQL. The catalog is read
// whole once, in pages, then by version: a poll costs one read whatever its
// size, and an unknown name polls at once (at most every 100 ms), so a new
// sequence is usable without a restart. Servers that disagree on a sequence's
// definition, or a definition that changed since it was served (its pin,
// pins.go, written before the first value), make it unusable
// (ErrMisconfigured): two block sizes over one counter would hand out
// overlapping values. Problems reports them, and sequences some servers
// lack.
//
// With block size B, one ticket t stands for the B values [t·B, t·B+B),
// served from memory by package claim; B = 1 is pure Flickr: one ticket per
// value, nothing held.
//
// A public sequence (a definition naming a key check) hands out the keyed
// permutation of each of those values over its range instead (public.go).
// The permutation is applied here, as values leave the Pair, and not by the
// HTTP front end: then no caller of the Pair, HTTP or Go, can be handed a raw
// value of a public sequence by a path that forgot it, and a ticketd without
// the key refuses the sequence before a ticket is taken. The key stays in
// the process (Config.IDKeys): the servers see only its check value, in the
// catalog row and the pin, and no log, status or metric shows more.
package sequence
