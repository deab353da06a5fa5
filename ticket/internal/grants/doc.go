// Package grants reads SHOW GRANTS lines and names what an account holds
// beyond the role ticketd_app (AppRole): the privileges an attacker who
// reads ticketd's password file would get. It only parses; the statements
// are run by package ticket (Pair.ExtraPrivileges).
//
// A privilege covers the same one on the same object or inside it (db.*
// covers db.t; *.* covers all), ALL PRIVILEGES covers any, a table
// privilege covers its columns. WITH GRANT OPTION and WITH ADMIN OPTION
// count as privileges of their own. Nothing of a grant line but
// privileges, objects and role names is kept: the IDENTIFIED BY PASSWORD
// clause of the USAGE line (a password hash) never leaves this package.
package grants
