// Package claim is the values a Pair holds of each named sequence in
// memory, and the claims of tickets that refill them.
//
// With block size B, one ticket t stands for the B values [t·B, t·B+B). Tickets
// are unique across the pair, so blocks are disjoint, and the values are served
// from memory under a mutex. When the current block is down to B/2 values, the
// next block is fetched in the background (one fetch in flight per sequence), so
// in steady state no caller waits for MySQL. Values in memory when the Pair
// closes are lost: uniqueness matters, not density. A 32-bit sequence never
// returns a value above 2^32-1 and a 64-bit one none above 2^63-1; past that,
// ErrSequenceExhausted (the product t·B is computed without wrapping).
//
// Tickets are taken by package tickets, the one place a ticket statement is
// sent; a sequence's pin (package sequence) is written through the hook
// Claims is made with.
package claim
