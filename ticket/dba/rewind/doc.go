// Package rewind is `ticketd repair`: Rewinds finds the counters (tables'
// AUTO_INCREMENT, rows of counters) and worker lease rows that a restore
// from a backup rewound, and Repair moves them past the high-water marks
// and reservation copies the other servers hold, on its own connections (no
// Pair, nothing in the background), with an account of role ticketd_admin.
//
// What must hold: every server is reachable and in its place, or nothing is
// read (the marks for one server live on the others); the survey reads the
// marks before the counters (survey.go), so every mark it holds is a ticket
// issued before the counter was read; a counter moves only up, read again
// first, and a lease row's reservation only up, and only while no one holds
// it; with dryRun nothing is written. Repeating a repair is safe.
package rewind
