package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"ticketd/ticket"
	"ticketd/ticket/dba"
)

// adminOptions are the flags every administrative command shares (repair,
// sequence, upgrade): where the servers are, the account and its password
// (never a flag: TICKETD_<CMD>_PASSWORD or the file of -password-file), the
// schema holding schema.sql's tables, the deadline of one statement, and TLS
// to the servers.
type adminOptions struct {
	servers      string
	database     string
	user         string
	passwordFile string
	password     string // from the environment or the file; never a flag
	callTimeout  time.Duration
	tls          tlsOptions
}

// databaseHelp is -database's help, the same for every command.
const databaseHelp = "the schema on the ticket servers that holds schema.sql's tables; it must exist on every server"

// adminDefaults are one command's defaults and words for the shared flags.
type adminDefaults struct {
	user, userHelp  string // -user, and the role it needs
	passwordFile    string
	passwordEnv     string // TICKETD_<CMD>_PASSWORD
	callTimeoutHelp string
	// optionalServers: -servers defaults to none (inspect reads the
	// servers only when told to), not to make run's pair.
	optionalServers bool
}

// register defines the shared flags on fs.
func (a *adminOptions) register(fs *flag.FlagSet, d adminDefaults) {
	servers, help := "127.0.0.1:3307,127.0.0.1:3308", serversHelp
	if d.optionalServers {
		servers, help = "", serversHelp+"; none: the servers are not asked"
	}
	fs.StringVar(&a.servers, "servers", servers, help)
	fs.StringVar(&a.database, "database", ticket.DefaultDatabase, databaseHelp)
	fs.StringVar(&a.user, "user", d.user, d.userHelp)
	fs.StringVar(&a.passwordFile, "password-file", d.passwordFile, "file holding the password (ignored when "+d.passwordEnv+" is set)")
	fs.DurationVar(&a.callTimeout, "call-timeout", 2*time.Second, d.callTimeoutHelp)
	a.tls.register(fs)
}

// adminPassword is the password of an administrative command (repair,
// sequence): from the environment variable env, else from file; never a
// flag, so that it is not on a command line.
func adminPassword(cmd, env, file string, getenv func(string) string) (string, error) {
	if pw := getenv(env); pw != "" {
		return pw, nil
	}
	pw, err := readSecret(file)
	if err != nil {
		return "", usagef("%s: no password: set %s or -password-file (%v)", cmd, env, err)
	}
	return pw, nil
}

// adminConfig is the ticket package's Config of an administrative command:
// its servers (comma-separated), account and call timeout.
func adminConfig(a adminOptions) ticket.Config {
	cfg := ticket.DefaultConfig()
	cfg.Servers = nil
	for _, addr := range strings.Split(a.servers, ",") {
		cfg.Servers = append(cfg.Servers, ticket.ServerConfig{Addr: strings.TrimSpace(addr)})
	}
	cfg.User, cfg.Password = a.user, a.password
	cfg.Database = a.database
	cfg.CallTimeout = a.callTimeout
	return cfg
}

// validateAdmin adds the TLS options to cfg and validates it; a bad value
// is a usage error that names the flags (what).
func validateAdmin(cfg *ticket.Config, tls tlsOptions, what string) error {
	tlsCfg, err := tls.config()
	if err != nil {
		return err
	}
	cfg.TLS = tlsCfg
	if err := cfg.Validate(); err != nil {
		return usagef("%s: %v", what, err)
	}
	return nil
}

// adminErr is how an administrative command reports what its dba call
// returned: a call refused before it wrote anything (dba.ErrRefused: a name
// in use otherwise, a table of another shape, a start below what was
// handed out) is bad input, exit 2; anything else exit 1.
func adminErr(cmd string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, dba.ErrRefused):
		return usageError{fmt.Errorf("%s: %w", cmd, err)}
	default:
		return fmt.Errorf("%s: %w", cmd, err)
	}
}

// adminCommand is an administrative command of subcommands that take flags
// and no argument (upgrade status|finalize, pair check).
type adminCommand struct {
	name     string   // "upgrade": its flags' variables are TICKETD_UPGRADE_*
	subs     []string // its subcommands
	usage    string
	defaults adminDefaults
	// flags, if not nil, defines a subcommand's own flags besides the
	// shared ones.
	flags func(sub string, fs *flag.FlagSet)
}

// parse reads args, a subcommand then its flags (and their variables),
// into a, and returns the subcommand.
func (c adminCommand) parse(args []string, stderr io.Writer, getenv func(string) string, a *adminOptions) (string, error) {
	want := strings.Join(c.subs, " or ")
	if len(args) == 0 || !slices.Contains(c.subs, args[0]) {
		fmt.Fprint(stderr, c.usage)
		switch {
		case len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help"):
			return "", errHelp
		case len(args) == 0:
			return "", usagef("%s: want %s", c.name, want)
		}
		return "", usagef("%s: unknown subcommand %q: want %s", c.name, args[0], want)
	}
	sub := args[0]
	fs := flag.NewFlagSet(c.name+" "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, c.usage)
		fs.PrintDefaults()
	}
	a.register(fs, c.defaults)
	if c.flags != nil {
		c.flags(sub, fs)
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return sub, errHelp
		}
		return sub, errReported{2}
	}
	if fs.NArg() > 0 {
		return sub, usagef("%s %s: unexpected argument %q", c.name, sub, fs.Arg(0))
	}
	if err := applyEnvWith(fs, "TICKETD_"+strings.ToUpper(c.name)+"_", getenv); err != nil {
		return sub, err
	}
	var err error
	a.password, err = adminPassword(c.name, c.defaults.passwordEnv, a.passwordFile, getenv)
	return sub, err
}
