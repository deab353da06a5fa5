package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"ticketd/auth"
	"ticketd/internal/mariadb"
	"ticketd/internal/mysqltest"
)

// TestE2EPeersTinyidSideBySide: two tinyid clusters moved onto one
// ticketd deployment, each by the ticketd binary's import into the same
// routes and tokens files, as docs/migrating.md says: cluster a without
// -cluster, over a tokens file release 4 wrote for it; cluster b under
// -prefix tiny_ and -cluster b (imported without -cluster first: refused,
// exit 2, nothing written); cluster a again. Both clusters' tokens are then
// in the file, and ticketd serve, with those files, lets each token take
// segments of its own cluster's sequences alone: not the other cluster's,
// nor a native sequence (orders) that a biz type of its tiny_id_token rows
// without a tiny_id_info row is named after. A token of such biz types
// alone is left out of the file, and the import says so.
func TestE2EPeersTinyidSideBySide(t *testing.T) {
	mp := mysqltest.StartPair(t)
	peer := mysqltest.Start(t, mysqltest.Options{})
	ddl, err := os.ReadFile(filepath.Join(mariadb.RepoRoot(), "peers", "importer", "testdata", "tinyid.sql"))
	if err != nil {
		t.Fatal(err)
	}
	tokA, tokB, tokC := strings.Repeat("a1", 16), strings.Repeat("b2", 16), strings.Repeat("c3", 16)
	peerPW := strconv.FormatInt(time.Now().UnixNano(), 36) + "Pw"
	// Each cluster's tiny_id_token begins at row 1. a's token A may ask for
	// orders, which a has no row of; b's token B for test, a's biz type,
	// which b has none of; b's token C for orders alone.
	peer.Exec(t, fmt.Sprintf(`CREATE DATABASE tinyid_a; USE tinyid_a;
%[1]s
INSERT INTO tiny_id_info (biz_type, begin_id, max_id, step, delta, remainder) VALUES ('test', 1, 1001, 1000, 1, 0), ('test_odd', 1, 1001, 1000, 2, 1);
INSERT INTO tiny_id_token (id, token, biz_type) VALUES (1, '%[2]s', 'test'), (2, '%[2]s', 'test_odd'), (3, '%[2]s', 'orders');
CREATE DATABASE tinyid_b; USE tinyid_b;
%[1]s
INSERT INTO tiny_id_info (biz_type, begin_id, max_id, step, delta, remainder) VALUES ('pay', 1, 5001, 1000, 1, 0);
INSERT INTO tiny_id_token (id, token, biz_type) VALUES (1, '%[3]s', 'pay'), (2, '%[3]s', 'test'), (3, '%[4]s', 'orders');
CREATE USER 'reader'@'%%' IDENTIFIED BY '%[5]s';
GRANT SELECT ON tinyid_a.* TO 'reader'@'%%';
GRANT SELECT ON tinyid_b.* TO 'reader'@'%%';`, ddl, tokA, tokB, tokC, peerPW))

	servers := mp.Servers[0].Addr() + "," + mp.Servers[1].Addr()
	// orders: a sequence of ticketd's own, not tinyid's.
	if code, out := runTicketd(t, []string{"TICKETD_SEQUENCE_PASSWORD=" + mp.SeqPassword, "TICKETD_SEQUENCE_USER=" + mp.SeqUser},
		"sequence", "create", "orders", "-servers", servers); code != 0 {
		t.Fatalf("sequence create orders: exit %d\n%s", code, out)
	}

	dir := t.TempDir()
	routes, tokens := filepath.Join(dir, "peer-routes"), filepath.Join(dir, "tokens")
	digest := func(tok string) string {
		d := sha256.Sum256([]byte(tok))
		return "sha256:" + hex.EncodeToString(d[:])
	}
	opsToken := strings.Repeat("o9", 16)
	// The operator's line, and cluster a's as release 4 wrote it: the
	// scope tickets:orders for a biz type without a row.
	release4 := "ops " + digest(opsToken) + " status,metrics\n" +
		"tinyid-1 " + digest(tokA) + " tickets:orders,tickets:test,tickets:test_odd # ticketd import tinyid\n"
	if err := os.WriteFile(tokens, []byte(release4), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"TICKETD_IMPORT_PASSWORD=" + mp.SeqPassword, "TICKETD_IMPORT_USER=" + mp.SeqUser, "TICKETD_IMPORT_FROM_PASSWORD=" + peerPW}
	imp := func(wantCode int, args ...string) string {
		t.Helper()
		args = append([]string{"import", "tinyid"}, append(args, "-from", peer.Addr(), "-from-user", "reader", "-servers", servers,
			"-routes-file", routes, "-tokens-file", tokens, "-margin-segments", "2")...)
		code, out := runTicketd(t, env, args...)
		if code != wantCode {
			t.Fatalf("ticketd %s: exit %d, want %d\n%s", strings.Join(args, " "), code, wantCode, out)
		}
		return out
	}
	says := func(out string, want ...string) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("the import does not say %q:\n%s", w, out)
			}
		}
	}
	files := func() string {
		t.Helper()
		r, _ := os.ReadFile(routes)
		k, err := os.ReadFile(tokens)
		if err != nil {
			t.Fatal(err)
		}
		return string(r) + "\x00" + string(k)
	}

	out := imp(0, "-from-database", "tinyid_a")
	says(out, "left out: tiny_id_token row 3 (token tinyid-1): biz type orders has no row of tiny_id_info",
		`tokens file: 1 line ending "# ticketd import tinyid", replacing the 1 it had`)
	afterA := files()

	// Cluster b without -cluster would take out a's line: refused, the
	// dry run too, and nothing written.
	for _, dry := range []bool{true, false} {
		args := []string{"-from-database", "tinyid_b", "-prefix", "tiny_"}
		if dry {
			args = append(args, "-dry-run")
		}
		out = imp(2, args...)
		says(out, "line 2 (tinyid-1, written by ticketd import tinyid) reaches tickets:test,tickets:test_odd", "-cluster NAME")
		if files() != afterA {
			t.Fatalf("a refused import (dry run %v) wrote something", dry)
		}
	}
	out = imp(0, "-from-database", "tinyid_b", "-prefix", "tiny_", "-cluster", "b", "-dry-run")
	says(out, "token tinyid-b-1: would be written tickets:tiny_pay",
		"left out: tiny_id_token row 2 (token tinyid-b-1): biz type test has no row of tiny_id_info",
		"left out: tiny_id_token row 3 (token tinyid-b-3): biz type orders has no row of tiny_id_info",
		"left out: token tinyid-b-3 (tiny_id_token row 3): for no biz type this import creates or routes: not written",
		`would keep: 1 line ending "# ticketd import tinyid"`)
	if files() != afterA {
		t.Fatal("a dry run wrote something")
	}
	out = imp(0, "-from-database", "tinyid_b", "-prefix", "tiny_", "-cluster", "b")
	says(out, "token tinyid-b-1: written tickets:tiny_pay", "left out: token tinyid-b-3", `kept: 1 line ending "# ticketd import tinyid"`)
	// a again, as the guide says (once tinyid is stopped): b's line stays.
	out = imp(0, "-from-database", "tinyid_a")
	says(out, `kept: 1 line ending "# ticketd import tinyid -cluster b"`)

	b, err := os.ReadFile(tokens)
	if err != nil {
		t.Fatal(err)
	}
	set, err := auth.Parse(b, auth.Config{})
	if err != nil {
		t.Fatalf("the tokens file:\n%s\n%v", b, err)
	}
	for name, want := range map[string]string{"ops": "status,metrics", "tinyid-1": "tickets:test,tickets:test_odd", "tinyid-b-1": "tickets:tiny_pay"} {
		if tok := set.Token(name); tok == nil || tok.Scopes() != want {
			t.Errorf("token %s: %v, want scopes %s", name, tok, want)
		}
	}
	if set.Len() != 3 || strings.Contains(string(b), digest(tokC)) {
		t.Fatalf("the tokens file holds %d tokens, want 3, without C's:\n%s", set.Len(), b)
	}

	// ticketd serves both clusters from those files.
	d := startDaemon(t, mp, append([]string{"-peer-routes", routes, "-tokens-file", tokens}, fastLeases...)...)
	segment := func(biz, tok string) string {
		t.Helper()
		q := url.Values{"bizType": {biz}, "token": {tok}}
		resp, err := http.Post("http://"+d.addr+"/tinyid/id/nextSegmentId?"+q.Encode(), "", nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s with a token: %d %s", biz, resp.StatusCode, body)
		}
		return string(body)
	}
	for _, tt := range []struct {
		token, name string
		allowed     []string
		refused     []string
	}{
		{tokA, "a's token", []string{"test", "test_odd"}, []string{"pay", "orders"}},
		{tokB, "b's token", []string{"pay"}, []string{"test", "test_odd", "orders"}},
		{tokC, "b's token for orders alone", nil, []string{"orders", "pay"}},
	} {
		for _, biz := range tt.allowed {
			if got := segment(biz, tt.token); !strings.Contains(got, `"code":200`) {
				t.Errorf("%s, biz type %s: %s, want a segment", tt.name, biz, got)
			}
		}
		for _, biz := range tt.refused {
			if got := segment(biz, tt.token); !strings.Contains(got, `"code":5,"message":"token is error"`) {
				t.Errorf("%s, biz type %s: %s, want tinyid's refused token", tt.name, biz, got)
			}
		}
	}
}
