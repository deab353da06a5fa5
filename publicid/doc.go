// Package publicid turns snowflake IDs into public forms and back, and
// makes the keyed permutations of public sequences, with the operator's
// keys. It imports nothing outside the standard library (and ticketd's own
// ff1 and snowflake, which do not either), so an application, or the Go
// client, can encode and decode locally when it is given the key.
//
// # What a public form is
//
// The public form of a snowflake ID is a keyed permutation of the positive
// int64s, [1, 2^63-1], applied to the ID: same width, positive, and without
// the key it reveals neither the ID's time, nor its worker, nor its
// sequence number, nor how two IDs compare. The permutation is NIST SP
// 800-38G FF1 over 63 bits (package ff1) under an AES-128 key derived from
// the operator's key, cycle-walked past 0. Applications keep the
// time-ordered ID as their primary key, and show the public form.
//
// It is a permutation with a key, not a secret store: a public form is as
// unique as the ID (two equal forms are the same record), it stands for one
// ID for as long as the key is kept, and anyone who holds the key turns it
// back. It hides counts and order, not the record.
//
// # Keys and the key file
//
// An operator's key is 32 random bytes, written in a key file as 64
// hexadecimal digits, one key per line (# comments and blank lines are
// ignored). The first key encodes and decodes; the others only decode: a
// key ring, so that forms made under an older key keep decoding after the
// encoding key changed. The file must be readable by its owner only
// (mode 0600 or stricter): it holds the keys themselves.
//
// Each use gets a key of its own, derived from the operator's key with
// HKDF-SHA-256 (RFC 5869) and a label: the public forms of snowflake IDs,
// each public sequence (by name, width and start), and the key's check
// value. A check value is 16 bytes of HKDF output in hexadecimal: it names a key
// (ticketd records it to make sure every ticketd of a deployment has the
// same key) and says nothing about the key itself.
//
// In memory, a Ring keeps each key's HKDF pseudo-random key (HKDF-Extract of
// the key), not the key's bytes: a public sequence's key depends on its name,
// width and start, which the ring learns only when the sequence is used, so
// what derives it must stay. Every other derived key follows from it too: to
// whoever can read the process's memory, it is as good as the key for
// everything this package does.
//
// # Public sequences
//
// A public sequence's values are a keyed permutation of its counter's
// values over exactly the values above its start: (start, 2^bits-1], 32 or
// 63 bits (Ring.SequenceAbove; sequence.go walks through it). A sequence
// without a start covers [1, 2^bits-1]. A start must leave at least
// MinSequenceValues values, FF1's smallest domain.
//
// # Decoding under a ring
//
// A form carries no mark of the key that made it, and every 63-bit number
// is the form of something under every key. So Decode decodes a form under
// each key of the ring and keeps the results that pass the caller's test
// (for ticketd: an ID this deployment could have issued, its time between
// the deployment's first start and now). Under a single key that is at most
// one ID. Under several, a form made under one key may also give a
// plausible ID under another, with a chance of about the deployment's age
// over the layout's lifetime (1.4 % for a deployment one year into a 69.7-year
// layout): Decode returns every one, the encoding key's first, and an
// application that finds no record for the first tries the next.
package publicid
