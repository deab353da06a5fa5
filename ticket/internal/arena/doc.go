// Package arena keeps names (of sequences, of counters) in large shared
// blocks, so that 100,000 names cost a garbage collection a few pointers
// instead of 100,000 objects (NameArena says why it is sound).
package arena
