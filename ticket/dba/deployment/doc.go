// Package deployment is the deployment record as the DBA reads and changes
// it, on every server, on its own connections (no Pair), with an account of
// role ticketd_admin: where an upgrade between releases stands, and closing
// it (Status, Finalize: `ticketd upgrade`, upgrade.go), and the record's key
// and balanced low bits (ReadDeployment, SetDeployment: `ticketd
// deployment`, deployment.go).
//
// What must hold: every server answers, or nothing is written; Finalize
// refuses (ErrUpgrade), naming each, while a server holds an older schema
// or no record or a ticketd of an older release holds a lease, and
// finalized_release only rises; SetDeployment reads every server first and
// writes nothing when one cannot take the change (dba.ErrRefused). Both are
// safe to repeat.
package deployment
