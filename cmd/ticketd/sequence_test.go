package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
	"ticketd/ticket"
)

func TestSequenceOptions(t *testing.T) {
	pwFile := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pwFile, []byte("s3q\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	withPW := map[string]string{"TICKETD_SEQUENCE_PASSWORD": "from-env"}
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string // substring of the usage error; "" means success
		check   func(t *testing.T, o sequenceOptions, c ticket.Config)
	}{
		{name: "create defaults", args: []string{"create", "orders"}, env: withPW, check: func(t *testing.T, o sequenceOptions, c ticket.Config) {
			if c.User != "ticketd_seq" || c.Password != "from-env" || len(c.Servers) != 2 || c.Servers[0].Addr != "127.0.0.1:3307" || c.Database != "tickets" ||
				o.bits != 64 || o.block != 1 || len(o.names) != 1 || o.names[0] != "orders" {
				t.Fatalf("got %+v / %v", o, c)
			}
		}},
		{name: "names around flags", args: []string{"create", "a", "-block", "1000", "b", "-bits", "32", "c"}, env: withPW,
			check: func(t *testing.T, o sequenceOptions, c ticket.Config) {
				if strings.Join(o.names, ",") != "a,b,c" || o.block != 1000 || o.bits != 32 {
					t.Fatalf("got %+v", o)
				}
			}},
		{name: "public", args: []string{"create", "orders", "-public"}, env: withPW, check: func(t *testing.T, o sequenceOptions, c ticket.Config) {
			if !o.public || len(o.names) != 1 {
				t.Fatalf("got %+v, want orders public", o)
			}
		}},
		{name: "public from the environment", args: []string{"create", "orders"}, env: map[string]string{"TICKETD_SEQUENCE_PASSWORD": "x", "TICKETD_SEQUENCE_PUBLIC": "true"},
			check: func(t *testing.T, o sequenceOptions, c ticket.Config) {
				if !o.public {
					t.Fatalf("got %+v, want public", o)
				}
			}},
		{name: "password file", args: []string{"list", "-password-file", pwFile}, check: func(t *testing.T, o sequenceOptions, c ticket.Config) {
			if c.Password != "s3q" {
				t.Fatalf("password from file: got %q", c.Password)
			}
		}},
		{name: "env sets flags", args: []string{"create", "x"}, env: map[string]string{"TICKETD_SEQUENCE_PASSWORD": "x",
			"TICKETD_SEQUENCE_SERVERS": "10.0.0.1:3306,10.0.0.2:3306", "TICKETD_SEQUENCE_USER": "dba", "TICKETD_SEQUENCE_BLOCK": "500"},
			check: func(t *testing.T, o sequenceOptions, c ticket.Config) {
				if c.Servers[1].Addr != "10.0.0.2:3306" || c.User != "dba" || o.block != 500 {
					t.Fatalf("got %+v / %v", o, c)
				}
			}},
		{name: "flag beats env", args: []string{"check", "-user", "me"}, env: map[string]string{"TICKETD_SEQUENCE_PASSWORD": "x", "TICKETD_SEQUENCE_USER": "dba"},
			check: func(t *testing.T, o sequenceOptions, c ticket.Config) {
				if c.User != "me" {
					t.Fatalf("user %q, want the flag's", c.User)
				}
			}},
		{name: "repair's variables do not apply", args: []string{"list"}, env: map[string]string{"TICKETD_SEQUENCE_PASSWORD": "x", "TICKETD_REPAIR_USER": "r"},
			check: func(t *testing.T, o sequenceOptions, c ticket.Config) {
				if c.User != "ticketd_seq" {
					t.Fatalf("got %v", c)
				}
			}},
		{name: "no command", args: nil, env: withPW, wantErr: "want create, adopt, list or check"},
		{name: "adopt", args: []string{"adopt", "photos", "-table", "TicketsPhotos", "-user", "dba"}, env: withPW,
			check: func(t *testing.T, o sequenceOptions, c ticket.Config) {
				if o.cmd != "adopt" || len(o.names) != 1 || o.names[0] != "photos" || o.table != "TicketsPhotos" || c.User != "dba" {
					t.Fatalf("got %+v / %v", o, c)
				}
			}},
		{name: "adopt without a table", args: []string{"adopt", "photos"}, env: withPW, wantErr: "want one NAME and -table T"},
		{name: "adopt of two names", args: []string{"adopt", "a", "b", "-table", "T"}, env: withPW, wantErr: "want one NAME and -table T"},
		{name: "unknown command", args: []string{"drop", "x"}, env: withPW, wantErr: `unknown command "drop"`},
		{name: "create without a name", args: []string{"create", "-block", "10"}, env: withPW, wantErr: "name a sequence"},
		{name: "list with an argument", args: []string{"list", "orders"}, env: withPW, wantErr: "use -name"},
		{name: "name and prefix", args: []string{"check", "-name", "a", "-prefix", "b"}, env: withPW, wantErr: "exclude each other"},
		{name: "negative limit", args: []string{"list", "-limit", "-1"}, env: withPW, wantErr: "-limit"},
		{name: "no password", args: []string{"list", "-password-file", filepath.Join(t.TempDir(), "missing")}, wantErr: "no password"},
		{name: "bad env value", args: []string{"create", "x"}, env: map[string]string{"TICKETD_SEQUENCE_PASSWORD": "x", "TICKETD_SEQUENCE_BITS": "many"}, wantErr: "TICKETD_SEQUENCE_BITS"},
		{name: "one server", args: []string{"list", "-servers", "127.0.0.1:3307"}, env: withPW, wantErr: "-servers"},
		{name: "database", args: []string{"check", "-database", "ids"}, env: withPW, check: func(t *testing.T, o sequenceOptions, c ticket.Config) {
			if c.Database != "ids" {
				t.Fatalf("database %q, want ids", c.Database)
			}
		}},
		{name: "database from the environment", args: []string{"list"}, env: map[string]string{"TICKETD_SEQUENCE_PASSWORD": "x", "TICKETD_SEQUENCE_DATABASE": "ticketserver"},
			check: func(t *testing.T, o sequenceOptions, c ticket.Config) {
				if c.Database != "ticketserver" {
					t.Fatalf("database %q, want ticketserver", c.Database)
				}
			}},
		{name: "bad database", args: []string{"list", "-database", "a-b"}, env: withPW, wantErr: "-database"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			o, err := parseSequence(tt.args, &stderr, env(tt.env))
			var c ticket.Config
			if err == nil {
				c, err = sequenceConfig(o)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || exitCode(err, &stderr) != 2 {
					t.Fatalf("error %v (exit %d), want a usage error containing %q", err, exitCode(err, &stderr), tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, o, c)
			if len(c.Password) > 4 && strings.Contains(fmt.Sprint(c), c.Password) {
				t.Fatalf("config prints its password")
			}
		})
	}
	if out, errOut, code := runCmd("sequence", "create", "-h"); code != 0 || !strings.Contains(errOut, "-block") || out != "" {
		t.Errorf("sequence create -h: exit %d, stderr %q", code, errOut)
	}
	if _, errOut, code := runCmd("sequence", "list", "-limit", "x"); code != 2 || !strings.Contains(errOut, "invalid value") {
		t.Errorf("sequence list -limit x: exit %d, stderr %q", code, errOut)
	}
	if out, _, _ := runCmd("help"); !strings.Contains(out, "sequence create|adopt|list|check") || !strings.Contains(out, "pair check") {
		t.Errorf("usage does not list sequence:\n%s", out)
	}
}

// TestSequenceDefs: the names of the command line and the lines of -file,
// each checked before anything is written; a bad line is a usage error
// naming the file and the line.
func TestSequenceDefs(t *testing.T) {
	open := func(content string) func(string) (io.ReadCloser, error) {
		return func(string) (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(content)), nil }
	}
	o := sequenceOptions{cmd: "create", names: []string{"cli"}, file: "defs.txt", bits: 64, block: 100, start: 7}
	defs, err := sequenceDefs(o, open("# tenants\nalpha\nbeta 32\n\ngamma 64 1000   # big\nphotos 64 1 5200000000\nleaf 64 1000 0\n"+
		"orders public\ninvoices 32 1000 public\ncarts 64 1 9 public # all four\npublic\nplain plain\n"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range defs {
		got = append(got, fmt.Sprintf("%s/%q/%d/%d/%d/%v", d.Name, d.Table, d.Bits, d.BlockSize, d.Start, d.Public))
	}
	want := `cli/""/64/100/7/false alpha/""/64/100/7/false beta/""/32/100/7/false gamma/""/64/1000/7/false photos/""/64/1/5200000000/false leaf/""/64/1000/0/false ` +
		`orders/""/64/100/7/true invoices/""/32/1000/7/true carts/""/64/1/9/true public/""/64/100/7/false plain/""/64/100/7/false`
	if got := strings.Join(got, " "); got != want {
		t.Fatalf("defs = %s, want %s", got, want)
	}
	// -public: every name and line public, unless the line says plain.
	o.public = true
	defs, err = sequenceDefs(o, open("alpha\nbeta 32 plain\n"))
	if err != nil || len(defs) != 3 || !defs[0].Public || !defs[1].Public || defs[2].Public {
		t.Fatalf("with -public: %+v, %v; want cli and alpha public, beta plain", defs, err)
	}
	for _, tt := range []struct{ content, want string }{
		{"Alpha\n", "defs.txt:1: ticket: invalid argument: name"},
		{"a\nb 16\n", "defs.txt:2: ticket: invalid argument: bits 16"},
		{"a 64 0\n", "defs.txt:1: ticket: invalid argument: block_size 0"},
		{"a 64 x\n", `defs.txt:1: block "x"`},
		{"a 64 1 extra\n", `defs.txt:1: start "extra"`},
		{"a 64 1 -5\n", `defs.txt:1: start "-5"`},
		{"a 64 1 18446744073709551616\n", `defs.txt:1: start "18446744073709551616"`},
		{"a 64 1 5 6\n", "defs.txt:1: 5 fields"},
		{"a 64 1 5 6 public\n", "defs.txt:1: 5 fields"},
		{"a public 64\n", `defs.txt:1: bits "public"`},
		{"a 64 1 5 Public\n", "defs.txt:1: 5 fields"},
		{strings.Repeat("a", 5000) + "\n", "longer than 4096 bytes"},
	} {
		_, err := sequenceDefs(sequenceOptions{cmd: "create", file: "defs.txt", bits: 64, block: 1}, open(tt.content))
		if err == nil || !strings.Contains(err.Error(), tt.want) || exitCode(err, io.Discard) != 2 {
			t.Errorf("%.40q: %v, want a usage error containing %q", tt.content, err, tt.want)
		}
	}
	if _, err := sequenceDefs(sequenceOptions{cmd: "create", file: "empty", bits: 64, block: 1}, open("# nothing\n")); err == nil {
		t.Error("an empty file accepted")
	}
}

func FuzzParseDefs(f *testing.F) {
	for _, s := range []string{"a\n", "a 32\n", "a 64 1000 # x\n", "# c\n\n", "a b c d\n", "Z 1 2\n", "a 64 18446744073709551616\n",
		"photos 64 1 5200000000\n", "a 32 1000 4294967295\n", "a 64 1 -1\n", "a 64 1 18446744073709551616\n", "a 64 1 1 1\n", "a 64 1 0x10\n",
		"a public\n", "a 32 1000 7 public\n", "a plain\n", "public\n", "a public public\n", "a 64 public 1\n", "a 64 1 1 1 public\n", "a PUBLIC\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		defs, err := parseDefs(strings.NewReader(s), "f", 64, 1, 0, false)
		if err != nil {
			if exitCode(err, io.Discard) != 2 {
				t.Fatalf("%q: %v is not a usage error", s, err)
			}
			return
		}
		for _, d := range defs {
			if err := ticket.CheckSequenceInfo(d.SequenceInfo); err != nil {
				t.Fatalf("%q: accepted %+v: %v", s, d, err)
			}
			if f := strings.Fields(strings.SplitN(s, "#", 2)[0]); len(f) < 4 && d.Start != 0 {
				t.Fatalf("%q: start %d from no start column", s, d.Start)
			}
			if d.Public && !strings.Contains(s, "public") {
				t.Fatalf("%q: public without the word", s)
			}
			if d.KeyCheck != "" {
				t.Fatalf("%q: key check %q from a file", s, d.KeyCheck)
			}
		}
	})
}

// seqCmd runs `ticketd sequence` in process against mp with the sequence
// account's password in the environment.
func seqCmd(t *testing.T, mp *mysqltest.Pair, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	t.Setenv("TICKETD_SEQUENCE_PASSWORD", mp.SeqPassword)
	t.Setenv("TICKETD_SEQUENCE_USER", mp.SeqUser)
	t.Setenv("TICKETD_SEQUENCE_SERVERS", mp.Servers[0].Addr()+","+mp.Servers[1].Addr())
	return runCmd(append([]string{"sequence"}, args...)...)
}

// TestSequenceCommand: create twice (the second changes nothing), from a
// file too; list shows both counters; check agrees; then a block size
// changed on one server behind the triggers' back: check names it and exits 1,
// and a create that asks for another definition is refused, writing nothing.
func TestSequenceCommand(t *testing.T) {
	mp := mysqltest.StartPair(t)
	out, errOut, code := seqCmd(t, mp, "create", "orders", "-block", "1000")
	if code != 0 || !strings.Contains(out, "server 1 ("+mp.Servers[0].Addr()+"): 1 created, 0 already there") ||
		!strings.Contains(out, "server 2 ("+mp.Servers[1].Addr()+"): 1 created, 0 already there") {
		t.Fatalf("create: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = seqCmd(t, mp, "create", "orders", "-block", "1000")
	if code != 0 || strings.Count(out, "0 created, 1 already there") != 2 {
		t.Fatalf("create again: exit %d, want nothing created\n%s%s", code, out, errOut)
	}
	for _, s := range mp.Servers {
		got := s.Query(t, "SELECT CONCAT(c.value, ' ', c.start, ' ', c.step, ' ', q.bits, ' ', q.block_size, ' ', IFNULL(q.table_name, 'NULL'), ' ', p.block_size) "+
			"FROM tickets.counters c JOIN tickets.sequences q USING (name) JOIN tickets.sequence_pins p USING (name) WHERE name = 'orders'")
		if want := fmt.Sprintf("%d %d 2 64 1000 NULL 1000", s.Offset, s.Offset); got != want {
			t.Fatalf("server %d holds %q, want %q (value, start, step, bits, block, table, pin)", s.Offset, got, want)
		}
	}
	file := filepath.Join(t.TempDir(), "tenants")
	var lines strings.Builder
	for i := range 2500 { // three batches
		fmt.Fprintf(&lines, "tenant%04d\n", i)
	}
	lines.WriteString("small 32 10\n")
	if err := os.WriteFile(file, []byte(lines.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code = seqCmd(t, mp, "create", "-file", file, "-block", "100"); code != 0 || strings.Count(out, "2501 created") != 2 {
		t.Fatalf("create -file: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code = seqCmd(t, mp, "create", "-file", file, "-block", "100"); code != 0 || strings.Count(out, "0 created, 2501 already there") != 2 {
		t.Fatalf("create -file again: exit %d\n%s%s", code, out, errOut)
	}

	out, errOut, code = seqCmd(t, mp, "list", "-prefix", "s")
	if code != 0 || !strings.Contains(out, "NAME") || !strings.Contains(out, "COUNTER2") || len(strings.Split(strings.TrimSpace(out), "\n")) != 2 {
		t.Fatalf("list -prefix s: exit %d, want a header and small\n%s%s", code, out, errOut)
	}
	f := strings.Fields(strings.Split(out, "\n")[1])
	if f[0] != "small" || f[1] != "32" || f[2] != "10" || f[3] != "counters" || f[4] != "-" || f[5] != "1" || f[6] != "2" {
		t.Fatalf("list line %q, want small 32 10 counters - 1 2 …", f)
	}
	if out, errOut, code = seqCmd(t, mp, "list"); code != 0 || len(strings.Split(strings.TrimSpace(out), "\n")) != 1+2504 {
		t.Fatalf("list: exit %d, %d lines, want a header and 2504 sequences\n%s", code, len(strings.Split(strings.TrimSpace(out), "\n")), errOut)
	}
	if out, errOut, code = seqCmd(t, mp, "check"); code != 0 || !strings.Contains(out, "ok: 2504 sequences checked") {
		t.Fatalf("check: exit %d\n%s%s", code, out, errOut)
	}

	// Behind the triggers' back, on server 2 only.
	mp.Servers[1].Exec(t, `CREATE TEMPORARY TABLE keep AS SELECT name, table_name, bits, block_size FROM tickets.sequences;
TRUNCATE TABLE tickets.sequences;
INSERT INTO tickets.sequences (name, table_name, bits, block_size)
  SELECT name, table_name, bits, IF(name = 'orders', 10, block_size) FROM keep;`)
	out, errOut, code = seqCmd(t, mp, "check")
	if code != 1 || !strings.Contains(out, "orders: defined differently on the servers (server 1: 64 bits, block size 1000, a row of counters; server 2: 64 bits, block size 10, a row of counters)") ||
		!strings.Contains(out, "orders: redefined on server 2: the catalog says 64 bits, block size 10, a row of counters, but it was served as 64 bits, block size 1000, a row of counters") ||
		!strings.Contains(out, "2504 sequences checked, 2 differences") {
		t.Fatalf("check after the change: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code = seqCmd(t, mp, "check", "-name", "small"); code != 0 {
		t.Fatalf("check -name small: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = seqCmd(t, mp, "create", "orders", "newone", "-block", "10")
	if code != 2 || !strings.Contains(errOut, `nothing created: "orders" exists on server 1 as 64 bits, block size 1000`) {
		t.Fatalf("create of orders with another block size: exit %d\n%s%s", code, out, errOut)
	}
	for _, s := range mp.Servers {
		if got := s.Query(t, "SELECT COUNT(*) FROM tickets.counters WHERE name = 'newone'"); got != "0" {
			t.Fatalf("server %d: the refused create wrote newone", s.Offset)
		}
	}
}

// TestSequenceListRewound: a sequence whose counter on server 1 is behind
// the mark server 2 holds for it (what a restore of server 1 leaves) is
// named by sequence check, and sequence list's NOTE says so too (it was
// empty): a row of counters and a table alike.
func TestSequenceListRewound(t *testing.T) {
	mp := mysqltest.StartPair(t)
	if out, errOut, code := seqCmd(t, mp, "create", "orders", "-block", "10"); code != 0 {
		t.Fatalf("create: exit %d\n%s%s", code, out, errOut)
	}
	mp.Servers[1].Exec(t, "INSERT INTO tickets.high_water (table_name, peer_offset, mark) VALUES ('counters.orders', 1, 1001), ('Tickets64', 1, 1001)")
	out, errOut, code := seqCmd(t, mp, "check")
	if code != 1 || !strings.Contains(out, "orders: rewound on server 1") || !strings.Contains(out, "tickets64: rewound on server 1") {
		t.Fatalf("check: exit %d, want orders and tickets64 rewound on server 1\n%s%s", code, out, errOut)
	}
	out, errOut, code = seqCmd(t, mp, "list")
	if code != 0 {
		t.Fatalf("list: exit %d\n%s%s", code, out, errOut)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		name := strings.Fields(line)[0]
		rewound := strings.HasSuffix(line, "rewound on server 1: refused there until ticketd repair runs, see check")
		if want := name == "orders" || name == "tickets64"; rewound != want {
			t.Errorf("list line of %s: %q; want its NOTE to say rewound on server 1: %v", name, line, want)
		}
	}
	// Server 2 down: nothing is said of what it holds (it said "missing on
	// server 2"), and stderr says why its column shows -.
	mp.Servers[1].Stop(t)
	out, errOut, code = seqCmd(t, mp, "list", "-name", "orders")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); code != 0 || len(lines) != 2 || strings.Contains(lines[1], "server 2") ||
		!strings.Contains(errOut, "column COUNTER2 shows -: ") {
		t.Errorf("list with server 2 down: exit %d\n%s%s; want orders without a word of server 2 in its line, and why on stderr", code, out, errOut)
	}
}

// TestSequenceCreateHalfway: with server 2 down, create writes server 1,
// says server 2 was left out, and exits 1; ticketd meanwhile serves the
// sequence from server 1 and reports it missing on server 2; once server 2
// is back, the same create completes it, check agrees, and both serve it.
func TestSequenceCreateHalfway(t *testing.T) {
	mp := mysqltest.StartPair(t)
	d := startDaemon(t, mp, fastLeases...)
	mp.Servers[1].Stop(t)
	out, errOut, code := seqCmd(t, mp, "create", "half", "-block", "10")
	server2 := "server 2 (" + mp.Servers[1].Addr() + ")"
	if code != 1 || !strings.Contains(out, "server 1 ("+mp.Servers[0].Addr()+"): 1 created") ||
		!strings.Contains(errOut, server2+": not created there") || !strings.Contains(errOut, "run the same create again") {
		t.Fatalf("create with server 2 down: exit %d\n%s%s", code, out, errOut)
	}
	if n := strings.Count(errOut, server2); n != 1 {
		t.Fatalf("create with server 2 down names %s %d times, want once:\n%s", server2, n, errOut)
	}
	if v := getTicket(t, d.addr, "half"); v/10%2 != 1 {
		t.Fatalf("value %d of half: want a block of server 1 (odd tickets)", v)
	}
	mp.Servers[1].Restart(t)
	waitFor(t, "server 2 back in rotation", 20*time.Second, d.bothUp)
	var st struct {
		Sequences struct {
			Problems    map[string]int `json:"problems"`
			ProblemList []struct {
				Name   string `json:"name"`
				Detail string `json:"detail"`
			} `json:"problem_list"`
		} `json:"sequences"`
	}
	d.getJSON("/v1/status", &st)
	if st.Sequences.Problems["missing"] != 1 || len(st.Sequences.ProblemList) != 1 || !strings.Contains(st.Sequences.ProblemList[0].Detail, "missing on server 2") {
		t.Fatalf("/v1/status sequences = %+v, want half missing on server 2", st.Sequences)
	}
	if m := d.metric(`ticketd_sequence_problems{kind="missing"}`); m != 1 {
		t.Fatalf(`ticketd_sequence_problems{kind="missing"} = %v, want 1`, m)
	}
	if out, errOut, code = seqCmd(t, mp, "check"); code != 1 || !strings.Contains(out, "half: defined on server 1, missing on server 2") {
		t.Fatalf("check before the rerun: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = seqCmd(t, mp, "create", "half", "-block", "10")
	if code != 0 || !strings.Contains(out, "server 1 ("+mp.Servers[0].Addr()+"): 0 created, 1 already there") ||
		!strings.Contains(out, "server 2 ("+mp.Servers[1].Addr()+"): 1 created, 0 already there") {
		t.Fatalf("the rerun: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code = seqCmd(t, mp, "check"); code != 0 {
		t.Fatalf("check after the rerun: exit %d\n%s%s", code, out, errOut)
	}
	parity := map[uint64]int{}
	waitFor(t, "values of half from both servers", 30*time.Second, func() bool {
		parity[getTicket(t, d.addr, "half")/10%2]++
		return parity[0] > 0 && parity[1] > 0
	})
	waitFor(t, "the missing report cleared", 20*time.Second, func() bool {
		return d.metric(`ticketd_sequence_problems{kind="missing"}`) == 0
	})
}

// getTicket takes one value of a sequence over HTTP.
func getTicket(t *testing.T, addr, name string) uint64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/v1/tickets/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var v uint64
	if resp.StatusCode != 200 {
		t.Fatalf("/v1/tickets/%s: %d %s", name, resp.StatusCode, body)
	}
	if _, err := fmt.Sscan(string(body), &v); err != nil {
		t.Fatalf("/v1/tickets/%s: %q", name, body)
	}
	return v
}

// TestE2ESequenceCreatedServesAtOnce: with ticketd running, a sequence made
// by `ticketd sequence create` is served at once, without a restart.
func TestE2ESequenceCreatedServesAtOnce(t *testing.T) {
	mp := mysqltest.StartPair(t)
	d := startDaemon(t, mp)
	if code, _ := httpStatus(t, "http://"+d.addr+"/v1/tickets/orders"); code != http.StatusNotFound {
		t.Fatalf("/v1/tickets/orders before the create: %d, want 404", code)
	}
	at := time.Now()
	if out, errOut, code := seqCmd(t, mp, "create", "orders", "-block", "1000"); code != 0 {
		t.Fatalf("create: exit %d\n%s%s", code, out, errOut)
	}
	created := time.Now()
	var took time.Duration
	waitFor(t, "the first value of orders", 10*time.Second, func() bool {
		code, _ := httpStatus(t, "http://"+d.addr+"/v1/tickets/orders")
		took = time.Since(created)
		return code == http.StatusOK
	})
	t.Logf("first value %v after the create returned (%v after it began)", took.Round(time.Millisecond), time.Since(at).Round(time.Millisecond))
}

// TestE2ESequenceRedefinedAcrossRestart is the operability issue's scenario
// end to end: values of a sequence are served (and so pinned); TRUNCATE
// tickets.sequences (no trigger fires) and the same name inserted with a
// smaller block size; ticketd restarts. The sequence is refused (500), the
// log names both definitions, /v1/status lists it, the metric counts it, and
// no value repeats; another sequence is served as before.
func TestE2ESequenceRedefinedAcrossRestart(t *testing.T) {
	mp := mysqltest.StartPair(t)
	if out, errOut, code := seqCmd(t, mp, "create", "renum", "other", "-block", "10"); code != 0 {
		t.Fatalf("create: exit %d\n%s%s", code, out, errOut)
	}
	d := startDaemon(t, mp)
	seen := map[uint64]bool{}
	for range 50 {
		v := getTicket(t, d.addr, "renum")
		if seen[v] {
			t.Fatalf("value %d twice", v)
		}
		seen[v] = true
	}
	d.stop()
	bothServers := func(sql string) {
		for _, s := range mp.Servers {
			s.Exec(t, sql)
		}
	}
	bothServers(`TRUNCATE TABLE tickets.sequences;
INSERT INTO tickets.sequences (name, table_name, bits, block_size) VALUES
  ('tickets64', 'Tickets64', 64, 1), ('tickets32', 'Tickets32', 32, 1), ('renum', NULL, 64, 3), ('other', NULL, 64, 10)`)

	d = startDaemon(t, mp)
	code, body := httpStatus(t, "http://"+d.addr+"/v1/tickets/renum?n=5")
	if code != http.StatusInternalServerError || !strings.Contains(body, "misconfigured") {
		t.Fatalf("/v1/tickets/renum after the redefinition: %d %s, want 500 misconfigured", code, body)
	}
	var st struct {
		Sequences struct {
			Problems    map[string]int `json:"problems"`
			ProblemList []struct {
				Name    string `json:"name"`
				Kind    string `json:"kind"`
				Refused bool   `json:"refused"`
				Detail  string `json:"detail"`
			} `json:"problem_list"`
		} `json:"sequences"`
	}
	d.getJSON("/v1/status", &st)
	if st.Sequences.Problems["redefined"] != 1 || len(st.Sequences.ProblemList) != 1 {
		t.Fatalf("/v1/status sequences = %+v, want renum redefined", st.Sequences)
	}
	if pr := st.Sequences.ProblemList[0]; pr.Name != "renum" || pr.Kind != "redefined" || !pr.Refused ||
		!strings.Contains(pr.Detail, "block size 3") || !strings.Contains(pr.Detail, "block size 10") {
		t.Fatalf("problem %+v, want renum refused, naming both block sizes", pr)
	}
	if m := d.metric(`ticketd_sequence_problems{kind="redefined"}`); m != 1 {
		t.Fatalf(`ticketd_sequence_problems{kind="redefined"} = %v, want 1`, m)
	}
	if logs := d.logs.String(); !strings.Contains(logs, "sequence refused") || !strings.Contains(logs, "block size 3") || !strings.Contains(logs, "block size 10") {
		t.Fatalf("the log does not name both definitions:\n%s", logs)
	}
	for range 20 {
		getTicket(t, d.addr, "other")
	}
}

// httpStatus answers a GET with its status code and body, whatever they are.
func httpStatus(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
