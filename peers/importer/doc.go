// Package importer moves a Leaf or tinyid deployment's numbers onto
// ticketd's ticket servers: what `ticketd import leaf|tinyid` runs. It reads
// the peer's table (Leaf's leaf_alloc; tinyid's tiny_id_info and
// tiny_id_token, from each of its databases) on connections of its own,
// makes a plan, and carries it out:
//
//   - one sequence per key (package dba's CreateSequences, on every ticket
//     server), named after the key (peers.SequenceName), 64 bits, its block
//     the peer's step (or the one asked for), beginning above the key's
//     max_id plus a margin of the peer's largest fetches
//     (peers.Start: what the peer's running servers may still take);
//   - a route per key in the routes file ticketd serve -peer-routes reads,
//     with tinyid's segment and residue (delta, remainder);
//   - for tinyid, a line per token in the tokens file ticketd serve
//     -tokens-file reads: the token's SHA-256 (never the token), with the
//     tickets:NAME scopes of the sequences of its biz types that the import
//     makes or routes, and of no other (Plan.planTokens).
//
// It is safe to run again, and meant to be: a key whose sequence exists
// keeps the start it was created with, and the import checks that the
// peer's max_id is still below it. Run once the peer's last caller has
// moved and the peer is stopped, that check says the margin held. A run
// that finds anything it cannot do as asked (a key whose sequence exists
// otherwise, a peer that went past a start, databases of one tinyid biz
// type that disagree) writes nothing. With DryRun it only plans.
//
// The files are written whole, atomically (a new file renamed over the
// old), mode 0600: the routes file keeps every route it held and gets the
// import's; the tokens file keeps every line but those an earlier import
// of the same tinyid cluster wrote (they end with its ClusterMark), and
// gets one line per tinyid token in their place. A run that would take out
// another cluster's lines writes nothing (Plan.keepTokens).
package importer
