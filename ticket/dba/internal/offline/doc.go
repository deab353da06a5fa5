// Package offline is what the DBA's commands (package dba, and packages
// deployment, rewind and paircheck beside it) share: their own connections
// to every server of the pair, with no Pair and nothing in the background
// (Connect, OpenAll, EachServer, CloseServers), the refusal that writes
// nothing (ErrRefused, which package dba exports as its own), the gate on a
// deployment finalized at a release (RequireFinalized), tables of Flickr's
// shape (shape.go), and schema.sql's role names.
//
// What must hold: every server's place in the pair (the increment and
// offset of its place, as a Pair checks at Open) is checked before anything
// else is read, and a misplaced server fails the whole call; EachServer
// bounds each server's part by the tools' statement timeout; like every
// package of the DBA's commands, it never imports the façade, package
// ticket.
package offline
