package importer

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"ticketd/auth"
)

// MarkTokens ends every tokens-file line a tinyid import writes: the next
// import replaces those lines, and only those.
const MarkTokens = "# ticketd import tinyid"

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
