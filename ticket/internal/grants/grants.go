package grants

import (
	"sort"
	"strings"
)

// The grants check: does the ticketd account hold more than the role
// ticketd_app gives (schema.sql)? More is not an error (ticketd works), but
// it is what an attacker who reads the password file gets, so ticketd serve
// warns at start, naming each privilege beyond the role.
//
// On each server it reads SHOW GRANTS FOR CURRENT_USER (the account's own
// privileges and its roles), SHOW GRANTS FOR ticketd_app, and SHOW GRANTS
// FOR each other role the account holds (readable only with SELECT on
// mysql: otherwise the role is named whole), then names every privilege of the
// account or of its other roles that ticketd_app's do not cover: a
// privilege covers the same one on the same object or inside it (db.* covers
// db.t; *.* covers all), ALL PRIVILEGES covers any, a table privilege
// covers its columns. WITH GRANT OPTION and WITH ADMIN OPTION count as
// privileges of their own. Nothing of a grant line but privileges, objects
// and role names is kept: the IDENTIFIED BY PASSWORD clause of the USAGE
// line (a password hash) never leaves this file.

// Grantee is the account as its grant lines name it ("`ticketd`@`127.0.0.1`").
func Grantee(lines []string) string {
	for _, l := range lines {
		if i := topLevel(l, " TO "); i >= 0 && strings.HasPrefix(l, "GRANT ") {
			g := l[i+len(" TO "):]
			if j := strings.IndexByte(g, ' '); j >= 0 {
				g = g[:j]
			}
			return g
		}
	}
	return ""
}

func QuoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

// grant is one parsed GRANT line.
type grant struct {
	roles  []string // GRANT role[, role] TO …
	privs  []string // GRANT priv[, priv] ON object TO …, upper case, "UPDATE (c)" with columns
	object string   // "*.*", "db.*", "db.t", "PROCEDURE db.p", without backquotes
	option bool     // WITH GRANT OPTION, or WITH ADMIN OPTION for roles
}

// ParseGrant reads one line of SHOW GRANTS; ok is false for other lines
// (SET DEFAULT ROLE).
func ParseGrant(line string) (g grant, ok bool) {
	rest, found := strings.CutPrefix(line, "GRANT ")
	if !found {
		return g, false
	}
	// Split at the top-level " ON " and " TO " (outside backquotes,
	// quotes and parentheses).
	on, to := topLevel(rest, " ON "), topLevel(rest, " TO ")
	if to < 0 {
		return g, false
	}
	tail := rest[to:]
	g.option = strings.Contains(tail, " WITH GRANT OPTION") || strings.Contains(tail, " WITH ADMIN OPTION")
	if on < 0 || on > to {
		for _, r := range splitTop(rest[:to]) {
			g.roles = append(g.roles, unquote(r))
		}
		return g, true
	}
	for _, p := range splitTop(rest[:on]) {
		g.privs = append(g.privs, strings.ToUpper(unquote(p)))
	}
	g.object = unquote(strings.TrimSpace(rest[on+len(" ON ") : to]))
	return g, true
}

// topLevel is the index of sep in s outside quotes and parentheses, or -1.
func topLevel(s, sep string) int {
	depth, quote := 0, byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '`' || c == '\'' || c == '"':
			quote = c
		case c == '(':
			depth++
		case c == ')':
			depth--
		case depth == 0 && strings.HasPrefix(s[i:], sep):
			return i
		}
	}
	return -1
}

// splitTop splits s at top-level commas and trims each part.
func splitTop(s string) []string {
	var parts []string
	for {
		i := topLevel(s, ",")
		if i < 0 {
			return append(parts, strings.TrimSpace(s))
		}
		parts = append(parts, strings.TrimSpace(s[:i]))
		s = s[i+1:]
	}
}

// unquote drops the backquotes of identifiers, and a role's host part of
// "`role`@`%`" stays as it is written.
func unquote(s string) string { return strings.ReplaceAll(s, "`", "") }

// GrantedRoles lists the roles granted in lines.
func GrantedRoles(lines []string) []string {
	var roles []string
	for _, l := range lines {
		if g, ok := ParseGrant(l); ok {
			roles = append(roles, g.roles...)
		}
	}
	return roles
}

// LinesSet is the privileges of lines (roles left out).
func LinesSet(lines []string) PrivSet {
	ps := PrivSet{}
	for _, l := range lines {
		if g, ok := ParseGrant(l); ok && g.roles == nil {
			ps.add(g)
		}
	}
	return ps
}

// OptionSet is the privileges lines grant WITH GRANT OPTION (roles left
// out): what the account may grant to others.
func OptionSet(lines []string) PrivSet {
	ps := PrivSet{}
	for _, l := range lines {
		if g, ok := ParseGrant(l); ok && g.roles == nil && g.option {
			ps.add(g)
		}
	}
	return ps
}

// PrivSet is privileges by object.
type PrivSet map[string]map[string]bool

func (ps PrivSet) add(g grant) {
	if ps[g.object] == nil {
		ps[g.object] = map[string]bool{}
	}
	for _, p := range g.privs {
		for _, c := range columns(p) {
			ps[g.object][c] = true
		}
	}
}

// columns splits a column privilege into one per column ("UPDATE (A, B)"
// into "UPDATE (A)" and "UPDATE (B)"): SHOW GRANTS lists a table's columns
// in an order of its own, which changes when the server restarts and
// reloads its privileges, so a privilege on columns is a set of them. Any
// other privilege is itself.
func columns(priv string) []string {
	name, cols, found := strings.Cut(priv, " (")
	cols, closed := strings.CutSuffix(cols, ")")
	if !found || !closed {
		return []string{priv}
	}
	var out []string
	for _, c := range strings.Split(cols, ",") {
		out = append(out, strings.TrimSpace(name)+" ("+strings.TrimSpace(c)+")")
	}
	return out
}

// Covers reports whether ps grants priv on object; a privilege on columns,
// on each of them.
func (ps PrivSet) Covers(priv, object string) bool {
	for _, c := range columns(priv) {
		if !ps.covers(c, object) {
			return false
		}
	}
	return true
}

// covers is Covers of a privilege on at most one column.
func (ps PrivSet) covers(priv, object string) bool {
	name, _, _ := strings.Cut(priv, " (") // a column privilege: the table's covers it
	name = strings.TrimSpace(name)
	for _, o := range enclosing(object) {
		set := ps[o]
		if set[priv] || set[name] || set["ALL PRIVILEGES"] || set["ALL"] {
			return true
		}
	}
	return false
}

// enclosing lists object and the objects that contain it.
func enclosing(object string) []string {
	if strings.Contains(object, " ") { // PROCEDURE db.p, FUNCTION db.f: only itself and *.*
		return []string{object, "*.*"}
	}
	db, _, found := strings.Cut(object, ".")
	if !found || object == "*.*" || db == "*" {
		return []string{object, "*.*"}
	}
	return []string{object, db + ".*", "*.*"}
}

// Extra names what own (the account's lines) and roles (the lines
// of each other role it holds) grant beyond app (AppRole's lines), sorted.
func Extra(own, app []string, roles map[string][]string) []string {
	base := LinesSet(app)
	seen := map[string]bool{}
	var extra []string
	note := func(s string) {
		if !seen[s] {
			seen[s] = true
			extra = append(extra, s)
		}
	}
	check := func(prefix string, lines []string) {
		for _, l := range lines {
			g, ok := ParseGrant(l)
			if !ok {
				continue
			}
			if g.roles != nil {
				if g.option {
					note(prefix + "ADMIN OPTION on role " + strings.Join(g.roles, ", "))
				}
				continue
			}
			for _, p := range g.privs {
				if p != "USAGE" && !base.Covers(p, g.object) {
					note(prefix + p + " ON " + g.object)
				}
			}
			if g.option {
				note(prefix + "GRANT OPTION ON " + g.object)
			}
		}
	}
	check("", own)
	names := make([]string, 0, len(roles))
	for r := range roles {
		names = append(names, r)
	}
	sort.Strings(names)
	for _, r := range names {
		if roles[r] == nil {
			note("role " + r + " (its privileges are not readable from this account)")
			continue
		}
		check("role "+r+": ", roles[r])
	}
	sort.Strings(extra)
	return extra
}
