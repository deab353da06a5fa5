module ticketd/bench

go 1.26.0

require (
	github.com/bwmarrin/snowflake v0.3.0
	github.com/go-sql-driver/mysql v1.10.1
	github.com/google/uuid v1.6.0
	github.com/sony/sonyflake/v2 v2.2.0
	ticketd v0.0.0
)

require filippo.io/edwards25519 v1.2.0 // indirect

replace ticketd => ../
