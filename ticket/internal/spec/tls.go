package spec

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
)

// MinTLSVersion is the oldest TLS version Config.TLS allows: a lower
// MinVersion is raised to it.
const MinTLSVersion = tls.VersionTLS12

// TLSFiles names the PEM files of an encrypted link to the ticket servers,
// as ticketd's -tls-* flags do.
type TLSFiles struct {
	// CA holds the certificate(s) of the CA the servers' certificates must
	// chain to. Required.
	CA string
	// Cert and Key are the client certificate and its private key, for
	// accounts that REQUIRE X509 (or SUBJECT/ISSUER). Both or neither.
	Cert, Key string
	// ServerName is the name the servers' certificates must be valid for.
	// Empty: each server's host, as written in Config.Servers (an IP
	// address or a DNS name).
	ServerName string
}

// LoadTLS reads f into a TLS configuration for Config.TLS: TLS 1.2 or
// later, the servers verified against f.CA and their names (f.ServerName,
// or each server's host). Errors wrap ErrInvalidConfig and name the file
// and what is wrong with it.
func LoadTLS(f TLSFiles) (*tls.Config, error) {
	if f.CA == "" {
		return nil, fmt.Errorf("%w: TLS needs a CA file (the CA that signed the servers' certificates)", ErrInvalidConfig)
	}
	if (f.Cert == "") != (f.Key == "") {
		return nil, fmt.Errorf("%w: a client certificate needs both its file and its key file (cert %q, key %q)", ErrInvalidConfig, f.Cert, f.Key)
	}
	pem, err := os.ReadFile(f.CA)
	if err != nil {
		return nil, fmt.Errorf("%w: TLS CA file: %w", ErrInvalidConfig, err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%w: TLS CA file %s holds no PEM certificate", ErrInvalidConfig, f.CA)
	}
	c := &tls.Config{MinVersion: MinTLSVersion, RootCAs: roots, ServerName: f.ServerName}
	if f.Cert != "" {
		cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
		if err != nil {
			// tls's messages name the problem (no PEM data, key does not
			// match the certificate), never the key's content.
			return nil, fmt.Errorf("%w: TLS client certificate %s with key %s: %w", ErrInvalidConfig, f.Cert, f.Key, err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// checkTLS reports what Validate refuses in a TLS configuration.
func checkTLS(c *tls.Config) error {
	switch {
	case c == nil:
		return nil
	case c.InsecureSkipVerify:
		return errors.New("TLS.InsecureSkipVerify would accept any server, or anyone in between: give the CA instead (RootCAs)")
	case c.MaxVersion != 0 && c.MaxVersion < MinTLSVersion:
		return fmt.Errorf("TLS.MaxVersion %s is below TLS 1.2", tls.VersionName(c.MaxVersion))
	}
	return nil
}

// TLSFor returns the TLS configuration of the connections to the server at
// addr: a copy of c.TLS, at least TLS 1.2, verifying the server's name (its
// host when TLS.ServerName is empty). nil when c.TLS is nil.
func (c Config) TLSFor(addr string) *tls.Config {
	if c.TLS == nil {
		return nil
	}
	t := c.TLS.Clone()
	t.MinVersion = max(t.MinVersion, MinTLSVersion)
	if t.ServerName == "" {
		if host, _, err := net.SplitHostPort(addr); err == nil {
			t.ServerName = host
		}
	}
	return t
}
