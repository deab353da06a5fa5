package importer

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"ticketd/auth"
	"ticketd/ticket/seqname"
)

// MarkTokens begins the comment that ends every tokens-file line a tinyid
// import writes; a run given a cluster (Options.Cluster) adds " -cluster
// NAME". A run replaces the lines of its cluster, and only those: a second
// tinyid deployment imported beside the first keeps the first's tokens.
// Release 4 wrote the comment alone, as a run without a cluster still
// does, so its lines are the cluster without a name's.
const MarkTokens = "# ticketd import tinyid"

// MaxClusterLen bounds a cluster's name: a token's name, tinyid-NAME-ID,
// stays within auth's 64 characters.
const MaxClusterLen = 32

// ValidCluster says whether c can name a cluster: empty (the cluster
// without a name), or a lower-case letter, then lower-case letters, digits
// or underscores, at most MaxClusterLen.
func ValidCluster(c string) bool {
	return c == "" || len(c) <= MaxClusterLen && seqname.Valid(c)
}

// ClusterMark is the comment that ends the tokens-file lines of cluster.
func ClusterMark(cluster string) string {
	if cluster == "" {
		return MarkTokens
	}
	return MarkTokens + " -cluster " + cluster
}

// tokenName is the tokens-file name of the token whose first row in
// cluster's tiny_id_token is id: unique in the file, since the IDs of two
// clusters' tables overlap.
func tokenName(cluster string, id int64) string {
	if cluster == "" {
		return fmt.Sprintf("tinyid-%d", id)
	}
	return fmt.Sprintf("tinyid-%s-%d", cluster, id)
}

// tokensFile is the tokens file as the import read it.
type tokensFile struct {
	path  string
	lines []tokensLine
}

// tokensLine is one line of the tokens file.
type tokensLine struct {
	n    int    // from 1
	raw  string // as read, with its line end
	text string // without it
	// imported: a tinyid import wrote it, for cluster.
	imported bool
	cluster  string
	name     string
	digest   [32]byte // of a sha256: token; zero for a token in clear
	scopes   []string
}

// readTokensFile reads the tokens file at path (none yet: no lines).
func readTokensFile(path string) (*tokensFile, error) {
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("tokens file: %w", err)
	}
	f := &tokensFile{path: path}
	n := 0
	for line := range strings.Lines(string(data)) {
		n++
		l := parseTokensLine(n, strings.TrimRight(line, "\r\n"))
		l.raw = line
		f.lines = append(f.lines, l)
	}
	return f, nil
}

// parseTokensLine reads what attributes a line to an import: the mark of
// its comment, its name, digest and scopes. Anything else, auth.Parse
// checks once the file is merged.
func parseTokensLine(n int, text string) tokensLine {
	l := tokensLine{n: n, text: text}
	j := strings.IndexByte(text, '#') // a token cannot hold '#': the comment
	if j < 0 {
		return l
	}
	switch comment := strings.TrimRight(text[j:], " \t"); {
	case comment == MarkTokens:
		l.imported = true
	case strings.HasPrefix(comment, MarkTokens+" -cluster "):
		c := strings.TrimPrefix(comment, MarkTokens+" -cluster ")
		l.imported, l.cluster = c != "" && ValidCluster(c), c
	}
	fields := strings.Fields(text[:j])
	if len(fields) >= 3 {
		l.name, l.scopes = fields[0], strings.Split(fields[2], ",")
		if h, ok := strings.CutPrefix(fields[1], "sha256:"); ok {
			if b, err := hex.DecodeString(h); err == nil && len(b) == len(l.digest) {
				copy(l.digest[:], b)
			}
		}
	}
	return l
}

// of says whether the line is one the import of cluster wrote.
func (l tokensLine) of(cluster string) bool { return l.imported && l.cluster == cluster }

// byCluster counts the lines of each cluster's import.
func (f *tokensFile) byCluster() map[string]int {
	out := map[string]int{}
	for _, l := range f.lines {
		if l.imported {
			out[l.cluster]++
		}
	}
	return out
}

// merge is the file with the lines of cluster's earlier import replaced by
// toks', where the first of them was (at the end, for a cluster new to the
// file), checked by auth.Parse as ticketd serve will read it.
func (f *tokensFile) merge(cluster string, toks []TokenLine) ([]byte, error) {
	var b bytes.Buffer
	ours := func() {
		for _, t := range toks {
			fmt.Fprintf(&b, "%s sha256:%s %s %s\n", t.Name, hex.EncodeToString(t.Digest[:]), strings.Join(t.Scopes, ","), ClusterMark(cluster))
		}
		toks = nil
	}
	for _, l := range f.lines {
		if l.of(cluster) {
			ours()
			continue
		}
		b.WriteString(l.raw)
		if !strings.HasSuffix(l.raw, "\n") {
			b.WriteByte('\n')
		}
	}
	ours()
	if _, err := auth.Parse(b.Bytes(), auth.Config{}); err != nil {
		return nil, fmt.Errorf("tokens file %s with tinyid's tokens: %w", f.path, err)
	}
	return b.Bytes(), nil
}

// keepTokens refuses a run that would take out or clash with another
// tinyid deployment's lines. A line of this run's cluster is its own only
// if each of its scopes is one the run's sources lead to: a sequence the
// plan holds, or, for a line of one of its tokens, tickets:<biz type> of
// that token's rows (release 4 gave that scope to a biz type without a
// tiny_id_info row). A line that reaches anything else is another
// cluster's, imported under the same -cluster (or, like release 4's,
// without one): replacing it would leave that cluster's callers without
// their token. And a token this run writes that another line already
// holds as a digest cannot be in the file twice (auth.Parse refuses it):
// said here, with the way on.
func (pl *Plan) keepTokens(f *tokensFile, cluster string, toks []TokenRow) {
	reach := map[string]bool{}
	for _, it := range pl.Items {
		reach["tickets:"+it.Sequence] = true
	}
	bizTypes := map[[32]byte][]string{} // a token's digest → its rows' scopes of release 4
	for _, r := range toks {
		d := sha256.Sum256([]byte(r.Token))
		bizTypes[d] = append(bizTypes[d], "tickets:"+r.BizType)
	}
	ours := map[[32]byte]string{}
	for _, t := range pl.Tokens {
		ours[t.Digest] = t.Name
	}
	for _, l := range f.lines {
		switch {
		case l.of(cluster):
			var beyond []string
			for _, s := range l.scopes {
				if !reach[s] && !slices.Contains(bizTypes[l.digest], s) {
					beyond = append(beyond, s)
				}
			}
			if len(beyond) > 0 {
				pl.Problems = append(pl.Problems, fmt.Sprintf("tokens file %s line %d (%s, written by %s) reaches %s, which this run neither makes nor routes: "+
					"the line is another tinyid cluster's, and this run would take it out (its callers would get %q); "+
					"import this cluster under a -cluster NAME no other import into the file used, or, if the line's biz types left this cluster, take the line out by hand",
					f.path, l.n, l.name, strings.TrimPrefix(ClusterMark(cluster), "# "), strings.Join(beyond, ","), "token is error"))
			}
		case l.digest != [32]byte{}:
			if name, dup := ours[l.digest]; dup {
				pl.Problems = append(pl.Problems, fmt.Sprintf("token %s of this run is the token of tokens file %s line %d (%s) too: the file holds a token once, with one line's scopes; "+
					"give one of the clusters' callers a token of their own (a tiny_id_token row), then import it again", name, f.path, l.n, l.name))
			}
		}
	}
}
