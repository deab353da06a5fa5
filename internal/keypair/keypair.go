// Package keypair holds a TLS certificate and its private key read from two
// PEM files, and swaps them for new ones on Reload while a server presents
// them: handshakes in progress finish with the pair they got, the next ones
// get the new pair, and a pair that does not load leaves the current one in
// place. It is what ticketd serve's -https-cert and -https-key become, and
// what a SIGHUP reloads.
package keypair

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ErrBadPair wraps every error of Load and Reload.
var ErrBadPair = errors.New("keypair")

// Pair is a certificate and key loaded from files. It is safe for
// concurrent use.
type Pair struct {
	certFile, keyFile string
	mu                sync.Mutex // serialises Reload
	cur               atomic.Pointer[tls.Certificate]
}

// Load reads the certificate (PEM, the server's certificate first, then any
// intermediates) and its private key. The error names the files and what is
// wrong with them (missing, no PEM, a key that does not match the
// certificate, a certificate not yet or no longer valid), never the key's
// content.
func Load(certFile, keyFile string) (*Pair, error) {
	p := &Pair{certFile: certFile, keyFile: keyFile}
	c, err := p.read()
	if err != nil {
		return nil, err
	}
	p.cur.Store(c)
	return p, nil
}

// Reload reads the files again. On success the new pair is presented from
// the next handshake on; on error the current one stays and the error says
// why.
func (p *Pair) Reload() (*x509.Certificate, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c, err := p.read()
	if err != nil {
		return nil, err
	}
	p.cur.Store(c)
	return c.Leaf, nil
}

// Leaf is the certificate presented now, parsed.
func (p *Pair) Leaf() *x509.Certificate { return p.cur.Load().Leaf }

// GetCertificate is for tls.Config.GetCertificate: the current pair.
func (p *Pair) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return p.cur.Load(), nil
}

// ServerConfig returns a server configuration presenting the pair: TLS 1.2
// or later, the certificate read per handshake, so that Reload takes effect
// without touching the listener.
func (p *Pair) ServerConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: p.GetCertificate}
}

func (p *Pair) read() (*tls.Certificate, error) {
	c, err := tls.LoadX509KeyPair(p.certFile, p.keyFile)
	if err != nil {
		// crypto/tls says what is wrong ("private key does not match public
		// key", "failed to find any PEM data in key input"), never the key.
		why := strings.TrimPrefix(err.Error(), "tls: ")
		if strings.Contains(why, "does not match") {
			why = "the key does not match the certificate (" + why + "): give the key the certificate was made for"
		}
		return nil, fmt.Errorf("%w: certificate %s with key %s: %s", ErrBadPair, p.certFile, p.keyFile, why)
	}
	// Go 1.23+ fills Leaf; parse it ourselves if not, for the checks below.
	if c.Leaf == nil {
		if c.Leaf, err = x509.ParseCertificate(c.Certificate[0]); err != nil {
			return nil, fmt.Errorf("%w: certificate %s: %w", ErrBadPair, p.certFile, err)
		}
	}
	now := time.Now()
	switch {
	case now.Before(c.Leaf.NotBefore):
		return nil, fmt.Errorf("%w: certificate %s is not valid before %s", ErrBadPair, p.certFile, c.Leaf.NotBefore.UTC().Format(time.RFC3339))
	case now.After(c.Leaf.NotAfter):
		return nil, fmt.Errorf("%w: certificate %s expired at %s", ErrBadPair, p.certFile, c.Leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	return &c, nil
}
