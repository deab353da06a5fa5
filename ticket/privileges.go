package ticket

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"ticketd/ticket/internal/conn"
	"ticketd/ticket/internal/grants"

	"github.com/jmoiron/sqlx"
)

// AppRole is the role that holds what ticketd needs (schema.sql).
const AppRole = "ticketd_app"

// ExtraPrivileges is what the account holds on one server beyond AppRole.
type ExtraPrivileges struct {
	Server int // index in Config.Servers
	// Extra names each privilege beyond the role, as "ALTER ON
	// tickets.Tickets64", "RELOAD ON *.*", "GRANT OPTION ON *.*", "role
	// ticketd_admin: ALTER ON tickets.Tickets32".
	Extra []string
	// Unchecked says why the comparison could not be made (the account does
	// not have the role, say); "" when it was.
	Unchecked string
}

// ExtraPrivileges compares the account's privileges with AppRole's on every
// server in rotation. A server it could not ask is left out, and its error
// joined into err.
func (p *Pair) ExtraPrivileges(ctx context.Context) ([]ExtraPrivileges, error) {
	var list []*conn.Server
	for _, s := range p.servers {
		if p.rot.Up(s) {
			list = append(list, s)
		}
	}
	out := make([]ExtraPrivileges, len(list))
	errs := p.rot.OnEach(ctx, list, conn.OpCheck, func(ctx context.Context, ss *conn.Session) error {
		show := func(what, stmt string) ([]string, error) {
			var lines []string
			// SHOW statements take no server-side bound (q is ignored).
			err := ss.Do(ctx, what, stmt, func(ctx context.Context, c *sqlx.Conn, _ string) error {
				return c.SelectContext(ctx, &lines, stmt)
			})
			return lines, err
		}
		e := ExtraPrivileges{Server: ss.Server.Idx}
		own, err := show("reading the account's grants", "SHOW GRANTS FOR CURRENT_USER()")
		if err != nil {
			return err
		}
		var app []string
		roles := map[string][]string{}
		readsRoles := grants.LinesSet(own).Covers("SELECT", "mysql.roles_mapping")
		for _, r := range grants.GrantedRoles(own) {
			if r == AppRole {
				// Readable only as the current role (the default one), or
				// with SELECT on mysql.
				if !readsRoles && !slices.Contains(own, "SET DEFAULT ROLE "+grants.QuoteIdent(AppRole)+" FOR "+grants.Grantee(own)) {
					e.Unchecked = fmt.Sprintf("the account has the role %s but not as its default role (SET DEFAULT ROLE %s FOR …), so ticketd does not use it", AppRole, AppRole)
					continue
				}
				if app, err = show("reading the grants of role "+AppRole, "SHOW GRANTS FOR "+grants.QuoteIdent(AppRole)); err != nil {
					return err
				}
				continue
			}
			// An account may read only the grants of its current role, or
			// of any with SELECT on mysql: a role it cannot read is named
			// whole, without asking (a refusal would be counted against
			// the server as a failed statement).
			if !readsRoles {
				roles[r] = nil
				continue
			}
			lines, err := show("reading the grants of role "+r, "SHOW GRANTS FOR "+grants.QuoteIdent(r))
			if err != nil {
				return err
			}
			roles[r] = lines
		}
		if app == nil && e.Unchecked == "" {
			e.Unchecked = fmt.Sprintf("the account does not have the role %s (schema.sql, docs/dba.md): every privilege it holds is listed", AppRole)
		}
		e.Extra = grants.Extra(own, app, roles)
		out[indexOf(list, ss.Server)] = e
		return nil
	})
	var res []ExtraPrivileges
	var failed []error
	for i, err := range errs {
		if err != nil {
			failed = append(failed, err)
			continue
		}
		res = append(res, out[i])
	}
	if len(failed) > 0 {
		return res, fmt.Errorf("ticket: reading the account's grants: %w", errors.Join(failed...))
	}
	return res, nil
}

func indexOf(list []*conn.Server, s *conn.Server) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}
