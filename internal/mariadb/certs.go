package mariadb

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Certs are the files scripts/certs.sh makes: a CA, a server certificate and
// a client certificate signed by it.
type Certs struct {
	Dir                   string
	CA                    string // the CA certificate
	ServerCert, ServerKey string
	ClientCert, ClientKey string // CN=ticketd
}

// MakeCerts runs the repository's scripts/certs.sh into dir (which must not
// hold certificates yet), for a server certificate valid for names (default
// 127.0.0.1 and localhost), and returns the files.
func MakeCerts(dir string, names ...string) (Certs, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", append([]string{filepath.Join(RepoRoot(), "scripts", "certs.sh"), dir}, names...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return Certs{}, fmt.Errorf("mariadb: scripts/certs.sh %s: %v: %s", dir, err, strings.TrimSpace(string(out)))
	}
	f := func(name string) string { return filepath.Join(dir, name) }
	return Certs{
		Dir: dir, CA: f("ca.pem"),
		ServerCert: f("server.pem"), ServerKey: f("server-key.pem"),
		ClientCert: f("client.pem"), ClientKey: f("client-key.pem"),
	}, nil
}

// ServerArgs are the mariadbd options (Options.ExtraArgs) that make a server
// offer TLS with these certificates, as my.cnf's ssl_ca, ssl_cert and
// ssl_key would.
func (c Certs) ServerArgs() []string {
	return []string{"--ssl-ca=" + c.CA, "--ssl-cert=" + c.ServerCert, "--ssl-key=" + c.ServerKey}
}
