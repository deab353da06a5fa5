package main

import (
	"strings"
	"time"

	"ticketd/ticket"
)

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
func adminConfig(servers, user, password string, callTimeout time.Duration) ticket.Config {
	cfg := ticket.DefaultConfig()
	cfg.Servers = nil
	for _, addr := range strings.Split(servers, ",") {
		cfg.Servers = append(cfg.Servers, ticket.ServerConfig{Addr: strings.TrimSpace(addr)})
	}
	cfg.User, cfg.Password = user, password
	cfg.CallTimeout = callTimeout
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
