package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

// serversHelp is the -servers help of every command: the order fixes each
// server's auto_increment_offset, and worker IDs and counters are split
// among the servers by residue modulo their number.
const serversHelp = "ticket servers, comma-separated, in order of offset (server 1 first), a power of two of them: 2 (a pair), 4, 8 or 16"

// envNameWith is the environment variable that sets flag flagName: prefix
// (TICKETD_, or TICKETD_REPAIR_ for repair) and the name in upper case with
// dashes as underscores (-call-timeout → TICKETD_CALL_TIMEOUT).
func envNameWith(prefix, flagName string) string {
	return prefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// applyEnv sets every flag not given on the command line from its environment
// variable, if that is set. A bad value is a usage error naming the variable.
// The command line wins over the environment, which wins over the default.
func applyEnv(fs *flag.FlagSet, getenv func(string) string) error {
	return applyEnvWith(fs, "TICKETD_", getenv)
}

// applyEnvWith is applyEnv for variables named prefix + the flag's name.
func applyEnvWith(fs *flag.FlagSet, prefix string, getenv func(string) string) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil || given[f.Name] {
			return
		}
		name := envNameWith(prefix, f.Name)
		v := getenv(name)
		if v == "" {
			return
		}
		if e := fs.Set(f.Name, v); e != nil {
			err = usagef("%s=%q: %v", name, v, e)
		}
	})
	return err
}

// readSecret reads a password from a file, trimming one trailing newline. The
// error never contains the file's content.
func readSecret(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading the password file: %w", err)
	}
	s := strings.TrimRight(string(b), "\r\n")
	if s == "" {
		return "", fmt.Errorf("the password file %s is empty", path)
	}
	return s, nil
}
