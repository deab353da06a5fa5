package offline

// AppRole and AdminRole are schema.sql's roles of the daemon and of repair.
const (
	AppRole   = "ticketd_app"
	AdminRole = "ticketd_admin"
)

// SeqRole is schema.sql's role of `ticketd sequence` (create, list, check).
const SeqRole = "ticketd_sequences"
