package main

import (
	"crypto/tls"
	"flag"

	"ticketd/ticket"
)

// tlsOptions are the -tls-* flags of serve and repair: TLS to the ticket
// servers (docs/operations.md, "TLS to the ticket servers").
type tlsOptions struct {
	ca, cert, key, serverName string
}

func (o *tlsOptions) register(fs *flag.FlagSet) {
	fs.StringVar(&o.ca, "tls-ca", "", "CA certificate (PEM) the ticket servers' certificates must chain to; when set, every connection to them uses TLS 1.2 or later and verifies the server")
	fs.StringVar(&o.cert, "tls-cert", "", "client certificate (PEM), for accounts that REQUIRE X509; needs -tls-key")
	fs.StringVar(&o.key, "tls-key", "", "private key (PEM) of -tls-cert")
	fs.StringVar(&o.serverName, "tls-server-name", "", "name the servers' certificates must be valid for (empty: each server's host in -servers)")
}

// config returns the TLS configuration the flags describe: nil (plain text)
// when none is set. A file that cannot be used is a usage error naming it.
func (o tlsOptions) config() (*tls.Config, error) {
	if o == (tlsOptions{}) {
		return nil, nil
	}
	if o.ca == "" {
		return nil, usagef("-tls-cert, -tls-key and -tls-server-name need -tls-ca (the CA that signed the servers' certificates)")
	}
	c, err := ticket.LoadTLS(ticket.TLSFiles{CA: o.ca, Cert: o.cert, Key: o.key, ServerName: o.serverName})
	if err != nil {
		return nil, usagef("-tls-ca/-tls-cert/-tls-key: %v", err)
	}
	return c, nil
}
