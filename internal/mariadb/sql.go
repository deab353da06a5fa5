package mariadb

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// clientTimeout bounds every client run: a frozen server accepts the
// connection on its socket and never answers.
const clientTimeout = 60 * time.Second

// Run runs SQL as root through the mariadb client over the socket (so
// DELIMITER and multi-statement scripts work), with tickets as the default
// database, and returns the client's batch output (-N -B: tab-separated, no
// column names), trimmed.
func (s *Server) Run(sql string) (string, error) { return s.run("tickets", sql) }

// run is Run with another default database ("" for none).
func (s *Server) run(db, sql string) (string, error) {
	args := s.rootArgs()
	if db != "" {
		args = append(args, "--database="+db)
	}
	return s.client(s.bins.client, args, strings.NewReader(sql))
}

// client runs one of MariaDB's client programs against the server.
func (s *Server) client(bin string, args []string, stdin io.Reader) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%v (gave up after %v: is the server frozen?)", err, clientTimeout)
		}
		return "", fmt.Errorf("mariadb: %s on server :%d: %v: %s", filepath.Base(bin), s.Port, err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}
