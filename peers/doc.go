// Package peers is what ticketd needs to know of the two ID services most
// teams run before it, Meituan's Leaf and Didi's tinyid, so that their
// callers take IDs from ticketd by changing a URL: the routes file that maps
// their keys to ticketd's sequences, the answers their callers parse, and
// the arithmetic of a move (where an imported sequence begins, which worker
// IDs Leaf's snowflake mode holds). It knows no HTTP server and no database:
// package frontend serves the routes with it, package peers/importer reads
// the peers' tables with it. It imports only the standard library and the
// rules of ticketd's names and IDs (ticket/seqname, snowflake).
//
// # The routes
//
// Leaf's callers ask GET /api/segment/get/{key} (a value of the key's
// segment) and /api/snowflake/get/{key} (a snowflake ID), and read the
// answer as plain decimal text. tinyid's ask /tinyid/id/nextId and
// nextIdSimple (bizType, batchSize, token: IDs, as JSON or comma-separated)
// and nextSegmentId and nextSegmentIdSimple (bizType, token: a segment the
// caller hands out itself; tinyid's Java client POSTs the simple one and
// parses "currentId,loadingId,maxId,delta,remainder").
//
// # Segments
//
// A tinyid segment is the IDs v of (currentId, maxId] with v % delta ==
// remainder; the client hands them out from memory and asks for the next
// segment once it passes loadingId. So a segment must be a range no other
// caller ever gets, not even after a restart. ticketd describes as a
// segment only a run of values that its sequence handed to that one
// request (the values a sequence returns are unique across callers,
// ticketd processes and restarts: that is what a sequence is): values of
// one block, or with block size 1 the tickets of one claim, which are a
// step (the number of servers) apart. NewSegment gives the segment the
// run's range and, as its delta and remainder, the residue that the run's
// values share and the route's residue together (the least common
// multiple of the step and the route's delta): every ID of the segment is
// one of the run's values, and every value of the run that keeps the
// route's residue is an ID of it. Nothing is dropped: a run ends where a
// block does, so a segment may hold fewer values than asked for.
//
// # Where an imported sequence begins
//
// Every value either peer handed out, or holds in memory, is at or below its
// table's max_id at the moment the import reads it: both take a segment from
// the table (max_id moves first) before handing out any of it, Leaf's
// servers [max_id-step, max_id) and tinyid's (max_id-step, max_id], and
// both hold at most a current and a next segment per key (tinyid's clients
// too). What max_id does not yet cover is what they take after the read,
// while they still run: each fetch moves max_id by the peer's step at the
// time, and they fetch the next segment once a tenth (Leaf) or a fifth
// (tinyid) of the current one is used. Leaf's step doubles while a segment
// lasts less than 15 minutes, up to 1,000,000 (LeafMaxStep); tinyid's is
// the table's. So an imported sequence begins above max_id plus K of the
// peer's largest steps (Margin): room for K fetches between the read and
// the moment the peer's last caller has moved, the ones already under way
// (one per running server and tinyid client at most) among them. The import
// run again once the peer is stopped checks that the peer stayed below.
//
// # Leaf's snowflake IDs
//
// Leaf's snowflake mode composes (ms since epoch) << 22 | worker << 12 |
// sequence, its worker IDs (0 to 1023) from ZooKeeper. An ID of ticketd's
// and one of Leaf's can only be equal if their bits 12 to 21 are, and those
// are Leaf's worker ID: so a ticketd whose layout and datacenter fix bits
// 12 to 21 to values no Leaf worker holds never issues an ID Leaf issued or
// will issue, whatever the epochs and clocks (LeafWorkers.Overlap).
package peers
