package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"ticketd/auth"
	"ticketd/frontend"
	"ticketd/internal/keypair"
	"ticketd/ticket"
)

// Access to ticketd's own listeners (docs/deploy.md): bearer tokens, HTTPS,
// and the rule that nothing listens off loopback without tokens unless told.
//
// What SIGHUP reloads, each on its own (one that fails keeps what it had,
// says why, and does not stop the others):
//
//   - the tokens file (-tokens-file): the new tokens answer the next request;
//   - the certificate and key (-https-cert, -https-key): the next handshake;
//   - the database password file (-password-file): the next connection to
//     a ticket server (ticket.Pair.SetPassword). The file is also read again
//     when a server refuses the password (ticket.Config.PasswordSource).
//
// SIGHUP stops nothing: ticketd keeps serving throughout.

// accessOptions are the flags of the access block of serve.
type accessOptions struct {
	tokensFile     string
	insecureListen bool
	httpsCert      string
	httpsKey       string
}

func (o *accessOptions) register(fs *flag.FlagSet) {
	fs.StringVar(&o.tokensFile, "tokens-file", "", "bearer tokens, their scopes and quotas, one per line (docs/deploy.md); every endpoint but /healthz and /readyz then needs one; re-read on SIGHUP; needed to listen off loopback")
	fs.BoolVar(&o.insecureListen, "insecure-listen", false, "allow -listen and -admin-listen off loopback without -tokens-file: anyone who reaches the port may take IDs and read /v1/status")
	fs.StringVar(&o.httpsCert, "https-cert", "", "certificate (PEM, then its intermediates) of HTTPS on -listen and -admin-listen (TLS 1.2 or later); needs -https-key; re-read on SIGHUP")
	fs.StringVar(&o.httpsKey, "https-key", "", "private key (PEM) of -https-cert")
}

// access is what the access flags became.
type access struct {
	tokens         *auth.Store    // nil: no tokens
	cert           *keypair.Pair  // nil: plain HTTP
	insecureListen bool           // -insecure-listen
	offLoopback    []string       // the listen addresses other hosts reach, for the warning
	passwordFile   string         // "" when the password came from TICKETD_PASSWORD
	log            *slog.Logger   // set by serve
	pair           passwordSetter // set by serve
}

// passwordSetter is what a reload needs of the ticket pair.
type passwordSetter interface{ SetPassword(string) bool }

// build checks the access flags against the listen addresses and loads the
// files: a tokens file or certificate that cannot be used is a usage error
// naming the file and the problem.
// (The admin listener's address is checked by checkAdminAddr.)
func (o accessOptions) build(listen, adminListen string) (access, error) {
	a := access{insecureListen: o.insecureListen}
	for _, l := range []struct {
		flag, addr string
		allowed    bool
	}{{"-listen", listen, false}, {"-admin-listen", adminListen, true}} {
		if l.addr == "" {
			continue
		}
		local, err := auth.LoopbackOnly(l.addr)
		if err != nil {
			return a, usagef("%s %q: %v", l.flag, l.addr, err)
		}
		if local {
			continue
		}
		if o.tokensFile == "" && !o.insecureListen && !l.allowed {
			return a, usagef("%s %s is reachable from other hosts, and ticketd has no -tokens-file: anyone reaching it could take IDs "+
				"and read /v1/status. Give -tokens-file (docs/deploy.md, \"Tokens and scopes\"), listen on 127.0.0.1, "+
				"or add -insecure-listen if a firewall already keeps everyone else out", l.flag, l.addr)
		}
		a.offLoopback = append(a.offLoopback, l.flag+" "+l.addr)
	}
	if o.tokensFile != "" {
		st, err := auth.Open(o.tokensFile, auth.Config{})
		if err != nil {
			return a, usagef("-tokens-file: %v", err)
		}
		a.tokens = st
	}
	switch {
	case o.httpsCert == "" && o.httpsKey == "":
	case o.httpsCert == "" || o.httpsKey == "":
		return a, usagef("-https-cert and -https-key go together (got cert %q, key %q)", o.httpsCert, o.httpsKey)
	default:
		kp, err := keypair.Load(o.httpsCert, o.httpsKey)
		if err != nil {
			return a, usagef("-https-cert/-https-key: %v", err)
		}
		a.cert = kp
	}
	return a, nil
}

// apply sets the frontend's access fields.
func (a access) apply(f *frontend.Config) {
	f.Tokens = a.tokens
	if a.cert != nil {
		f.TLS = a.cert.ServerConfig()
	}
}

// passwordSource is the pair's PasswordSource: the password file read
// again, or nil when the password came from the environment.
func (a access) passwordSource() func() (string, error) {
	if a.passwordFile == "" {
		return nil
	}
	path := a.passwordFile
	return func() (string, error) { return readSecret(path) }
}

// logAtStart says what access ticketd serves with, and warns about what an
// operator should fix.
func (a access) logAtStart() {
	switch {
	case a.tokens != nil:
		a.log.Info("bearer tokens required (-tokens-file); /healthz and /readyz stay open", "tokens", a.tokens.Load().Len(), "file", a.tokens.Path())
		a.checkMode()
	case len(a.offLoopback) > 0:
		a.log.Warn("listening off loopback WITHOUT authentication (-insecure-listen or -admin-allow-remote): anyone who reaches the port may take IDs and read /v1/status",
			"listeners", strings.Join(a.offLoopback, ", "))
	}
	if a.cert != nil {
		leaf := a.cert.Leaf()
		a.log.Info("HTTPS (-https-cert)", "subject", leaf.Subject.String(), "not_after", leaf.NotAfter.UTC())
		if until := time.Until(leaf.NotAfter); until < 14*24*time.Hour {
			a.log.Warn("the HTTPS certificate expires within two weeks: renew it and send SIGHUP", "not_after", leaf.NotAfter.UTC())
		}
	} else if len(a.offLoopback) > 0 {
		a.log.Warn("listening off loopback over plain HTTP: tokens cross the network in clear unless a TLS proxy is in front (-https-cert)")
	}
}

// checkMode warns when others than its owner may read the tokens file.
func (a access) checkMode() {
	if err := auth.CheckFileMode(a.tokens.Path()); err != nil {
		a.log.Warn("tokens file", "err", err)
	}
}

// reload is what SIGHUP does.
func (a access) reload(api *frontend.Server) {
	var what []string
	if a.tokens != nil {
		what = append(what, "the tokens file")
	}
	if a.cert != nil {
		what = append(what, "the HTTPS certificate")
	}
	if a.passwordFile != "" && a.pair != nil {
		what = append(what, "the database password file")
	}
	if len(what) == 0 {
		a.log.Info("SIGHUP: no tokens, certificate or password to reload (no -tokens-file, no -https-cert, and the password is not from -password-file)")
		return
	}
	a.log.Info("SIGHUP: reloading " + strings.Join(what, ", "))
	if a.tokens != nil {
		if set, err := api.ReloadTokens(); err != nil {
			a.log.Error("tokens file NOT reloaded: the previous tokens stay in force", "err", err)
		} else {
			a.log.Info("tokens file reloaded", "tokens", set.Len(), "file", a.tokens.Path())
			a.checkMode()
		}
	}
	if a.cert != nil {
		if leaf, err := a.cert.Reload(); err != nil {
			a.log.Error("HTTPS certificate NOT reloaded: the previous one stays in use", "err", err)
		} else {
			a.log.Info("HTTPS certificate reloaded", "subject", leaf.Subject.String(), "not_after", leaf.NotAfter.UTC())
		}
	}
	if a.passwordFile != "" && a.pair != nil {
		pw, err := readSecret(a.passwordFile)
		switch {
		case err != nil:
			a.log.Error("database password file NOT reloaded: the previous password stays in use", "err", err)
		case a.pair.SetPassword(pw):
			a.log.Info("database password reloaded: new connections to the ticket servers use it", "file", a.passwordFile)
		default:
			a.log.Info("database password unchanged", "file", a.passwordFile)
		}
	}
}

// reloadLoop calls reload for every signal on hups until stop is closed.
func reloadLoop(hups <-chan os.Signal, stop <-chan struct{}, reload func()) {
	for {
		select {
		case <-hups:
			reload()
		case <-stop:
			return
		}
	}
}

// probeListen checks that addr can be listened on, and closes the listener
// again: serve asks before it leases anything, and listens for real once it
// can serve.
func probeListen(flagName, addr string) error {
	ln, err := listenNamed(flagName, addr)
	if err != nil {
		return err
	}
	return ln.Close()
}

// listenNamed opens a listener, and says what to do when the address is
// taken or not this host's.
func listenNamed(flagName, addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	switch {
	case err == nil:
		return ln, nil
	case errors.Is(err, syscall.EADDRINUSE):
		_, port, _ := net.SplitHostPort(addr)
		return nil, fmt.Errorf("%s %s: the address is taken: another ticketd, or another program, listens there (`ss -ltnp 'sport = :%s'` names it); stop it or choose another port", flagName, addr, port)
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return nil, fmt.Errorf("%s %s: no interface of this host has that address: give one of this host's addresses (`ip -brief address`)", flagName, addr)
	case errors.Is(err, syscall.EACCES):
		return nil, fmt.Errorf("%s %s: permission denied: ports below 1024 need CAP_NET_BIND_SERVICE; use a port above 1024", flagName, addr)
	}
	return nil, fmt.Errorf("%s %s: %w", flagName, addr, err)
}

// warnPrivileges warns about what the database account holds beyond the
// role ticketd_app on each server.
func warnPrivileges(ctx context.Context, log *slog.Logger, pair *ticket.Pair) {
	extra, err := pair.ExtraPrivileges(ctx)
	if err != nil {
		log.Warn("could not compare the database account's privileges with the role ticketd_app", "err", err)
	}
	for _, e := range extra {
		switch {
		case e.Unchecked != "":
			log.Warn("database account: "+e.Unchecked, "server", e.Server+1, "privileges", strings.Join(e.Extra, "; "))
		case len(e.Extra) > 0:
			log.Warn("the database account holds more than the role ticketd_app: revoke what it does not need (docs/dba.md, \"Accounts and roles\")",
				"server", e.Server+1, "beyond_ticketd_app", strings.Join(e.Extra, "; "))
		}
	}
}
