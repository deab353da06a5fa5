package conn

import (
	"crypto/tls"
	"crypto/x509"
	"errors"

	"github.com/go-sql-driver/mysql"
)

// tlsRefused reports whether err says a TLS link could not be set up for a
// reason that trying again does not fix: the server's certificate does not
// verify (unknown CA, wrong name, expired), the server refused ours, or it
// offers no TLS at all.
func tlsRefused(err error) bool {
	var verify *tls.CertificateVerificationError
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	var alert tls.AlertError
	return errors.As(err, &verify) || errors.As(err, &unknown) || errors.As(err, &host) ||
		errors.As(err, &invalid) || errors.As(err, &alert) || errors.Is(err, mysql.ErrNoTLS)
}
