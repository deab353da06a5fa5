package importer

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"ticketd/auth"
	"ticketd/peers"
)

// MarkTokens ends every tokens-file line a tinyid import writes: the next
// import replaces those lines, and only those.
const MarkTokens = "# ticketd import tinyid"

// routesHeader heads the routes file.
const routesHeader = `Leaf's and tinyid's keys and the ticketd sequences that serve them
(ticketd serve -peer-routes; docs/migrating.md). Written by ticketd import,
which keeps every route and rewrites the file (comments are not kept).`

// mergeRoutes is the routes file at path (none yet: no routes) with the
// items' routes, and Leaf's workers when given.
func mergeRoutes(path string, p peers.Peer, items []Item, workers *peers.LeafWorkers) ([]byte, error) {
	r := peers.NewRoutes()
	if _, err := os.Stat(path); err == nil {
		if r, err = peers.ReadFile(path); err != nil {
			return nil, err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("routes file: %w", err)
	}
	for _, it := range items {
		if err := r.Set(p, it.Key, it.Route); err != nil {
			return nil, err
		}
	}
	if workers != nil {
		r.DeclareLeafWorkers(*workers)
	}
	return r.Format(routesHeader), nil
}

// mergeTokens is the tokens file at path (none yet: empty) with the lines
// of an earlier tinyid import replaced by toks', checked by auth.Parse as
// ticketd serve will read it.
func mergeTokens(path string, toks []TokenLine) ([]byte, error) {
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("tokens file: %w", err)
	}
	var b bytes.Buffer
	for line := range strings.Lines(string(old)) {
		if strings.HasSuffix(strings.TrimRight(line, "\r\n"), MarkTokens) {
			continue
		}
		b.WriteString(line)
		if !strings.HasSuffix(line, "\n") {
			b.WriteByte('\n')
		}
	}
	for _, t := range toks {
		fmt.Fprintf(&b, "%s sha256:%s %s %s\n", t.Name, hex.EncodeToString(t.Digest[:]), strings.Join(t.Scopes, ","), MarkTokens)
	}
	if _, err := auth.Parse(b.Bytes(), auth.Config{}); err != nil {
		return nil, fmt.Errorf("tokens file %s with tinyid's tokens: %w", path, err)
	}
	return b.Bytes(), nil
}

// writeAtomic writes data to path through a new file in its folder renamed
// over it, mode 0600: a reader sees the old file or the new one, never
// part of either.
func writeAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after the rename, a no-op
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
