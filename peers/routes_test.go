package peers

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const sample = `# routes
leaf-workers 0-63,100
leaf leaf-segment-test leaf_segment_test_0c1e5d3a
leaf orders orders   # a comment
tinyid test test segment=100000 delta=1 remainder=0
tinyid test_odd test_odd segment=100000 delta=2 remainder=1
tinyid %E8%AE%A2%E5%8D%95%20x orders_cn
`

func TestParseRoutes(t *testing.T) {
	r, err := Parse([]byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		p     Peer
		key   string
		want  Route
		found bool
	}{
		{Leaf, "leaf-segment-test", Route{Sequence: "leaf_segment_test_0c1e5d3a"}, true},
		{Leaf, "orders", Route{Sequence: "orders"}, true},
		{Leaf, "unlisted", Route{Sequence: "unlisted"}, true},
		{Leaf, "Not-A-Name", Route{}, false},
		{Leaf, "test_odd", Route{Sequence: "test_odd"}, true}, // leaf's keys are not tinyid's
		{TinyID, "test", Route{Sequence: "test", Segment: 100000, Delta: 1}, true},
		{TinyID, "test_odd", Route{Sequence: "test_odd", Segment: 100000, Delta: 2, Remainder: 1}, true},
		{TinyID, "订单 x", Route{Sequence: "orders_cn", Segment: DefaultSegment, Delta: 1}, true},
		{TinyID, "plain", Route{Sequence: "plain", Segment: DefaultSegment, Delta: 1}, true},
		{TinyID, "", Route{}, false},
	}
	for _, tt := range tests {
		got, ok := r.Lookup(tt.p, []byte(tt.key))
		if ok != tt.found || got != tt.want {
			t.Errorf("Lookup(%s, %q) = %+v, %v; want %+v, %v", tt.p, tt.key, got, ok, tt.want, tt.found)
		}
	}
	w, declared := r.LeafWorkers()
	if !declared || w.String() != "0-63,100" {
		t.Fatalf("leaf-workers %v, %v; want 0-63,100 declared", w, declared)
	}
	// Format writes what Parse reads back the same.
	again, err := Parse(r.Format("written by a test\nsecond line"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again, r) {
		t.Fatalf("format and parse again:\n%s", r.Format(""))
	}
	if n := testing.AllocsPerRun(100, func() { r.Lookup(TinyID, []byte("test_odd")) }); n != 0 {
		t.Fatalf("Lookup of a listed key allocates %v times, want 0", n)
	}
}

func TestParseRoutesRefuses(t *testing.T) {
	for _, tt := range []struct{ file, want string }{
		{"leaf x", "2 field(s)"},
		{"leaf x BadName", "sequence \"BadName\""},
		{"leaf x y segment=3", "a leaf line is leaf KEY SEQUENCE"},
		{"tinyid x y segment=0", "segment=0"},
		{"tinyid x y segment=100001", "segment=100001"},
		{"tinyid x y delta=0", "delta=0"},
		{"tinyid x y delta=2 remainder=2", "remainder=2"},
		{"tinyid x y delta=x", "want a whole number"},
		{"tinyid x y delta=2 delta=3", "given twice"},
		{"tinyid x y colour=red", "only segment=N"},
		{"tinyid %zz y", "two hex digits"},
		{"tinyid x% y", "two hex digits"},
		{"leaf a b\nleaf a c", "already routed on line 1"},
		{"leaf-workers 0-1024", "leaf-workers"},
		{"leaf-workers 5-3", "leaf-workers"},
		{"leaf-workers none\nleaf-workers 1", "already given on line 1"},
		{"leaf-workers", "want leaf-workers none"},
		{"snowflake x y", "want leaf, tinyid or leaf-workers"},
		{"leaf a\x01 b", "control character"},
		{"leaf " + strings.Repeat("k", MaxKeyLen+1) + " b", "a key of 385 bytes"},
	} {
		_, err := Parse([]byte(tt.file))
		if !errors.Is(err, ErrBadRoute) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%q): %v; want ErrBadRoute saying %q", tt.file, err, tt.want)
		}
	}
	// Every problem, with its line number.
	_, err := Parse([]byte("leaf a\n\nleaf b BAD\n"))
	var fe *FileError
	if !errors.As(err, &fe) || len(fe.Lines) != 2 || fe.Lines[0].Line != 1 || fe.Lines[1].Line != 3 {
		t.Fatalf("got %v; want problems on lines 1 and 3", err)
	}
}

func TestStoreReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "routes")
	if err := os.WriteFile(path, []byte("leaf a seq_a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rt, _ := st.Load().Lookup(Leaf, []byte("a")); rt.Sequence != "seq_a" {
		t.Fatalf("route %+v", rt)
	}
	refuse := errors.New("refused by check")
	os.WriteFile(path, []byte("leaf a seq_b\n"), 0o600)
	if _, err := st.Reload(func(*Routes) error { return refuse }); err != refuse {
		t.Fatalf("Reload with a refusing check: %v", err)
	}
	os.WriteFile(path, []byte("leaf a BAD\n"), 0o600)
	if _, err := st.Reload(nil); !errors.Is(err, ErrBadRoute) {
		t.Fatalf("Reload of a bad file: %v", err)
	}
	if rt, _ := st.Load().Lookup(Leaf, []byte("a")); rt.Sequence != "seq_a" {
		t.Fatalf("a failed reload changed the routes: %+v", rt)
	}
	os.WriteFile(path, []byte("leaf a seq_b\n"), 0o600)
	if _, err := st.Reload(nil); err != nil {
		t.Fatal(err)
	}
	if rt, _ := st.Load().Lookup(Leaf, []byte("a")); rt.Sequence != "seq_b" {
		t.Fatalf("after a reload: %+v", rt)
	}
}

func TestEscape(t *testing.T) {
	for _, key := range []string{"plain-key_1", "with blank", "hash#", "pct%", "订单", "\x00\x7f\xff", "tab\t"} {
		esc := Escape(key)
		if strings.ContainsAny(esc, " \t#") {
			t.Errorf("Escape(%q) = %q holds a blank or #", key, esc)
		}
		got, err := Unescape(esc)
		if err != nil || got != key {
			t.Errorf("Unescape(Escape(%q)) = %q, %v", key, got, err)
		}
	}
}

func TestSequenceName(t *testing.T) {
	tests := []struct{ prefix, key, want string }{
		{"", "test_odd", "test_odd"},
		{"tiny_", "test", "tiny_test"},
		{"", "leaf-segment-test", "leaf_segment_test_" + hexOf("leaf-segment-test")},
		{"", "Orders", "orders_" + hexOf("Orders")},
		{"", "9lives", "k9lives_" + hexOf("9lives")},
		{"", "订单", "k" + strings.Repeat("_", 6) + "_" + hexOf("订单")},
		{"", strings.Repeat("a", 48), strings.Repeat("a", 48)},
		{"", strings.Repeat("a", 49), strings.Repeat("a", 39) + "_" + hexOf(strings.Repeat("a", 49))},
	}
	for _, tt := range tests {
		if got := SequenceName(tt.prefix, tt.key); got != tt.want {
			t.Errorf("SequenceName(%q, %q) = %q, want %q", tt.prefix, tt.key, got, tt.want)
		}
	}
	// Keys that fit alike get names of their own, each a valid name.
	seen := map[string]string{}
	for _, key := range []string{"a-b", "a_b", "A_B", "a.b", "a b", "", "_", "-", strings.Repeat("Z", 300)} {
		name := SequenceName("", key)
		if prev, dup := seen[name]; dup {
			t.Errorf("keys %q and %q share the name %q", prev, key, name)
		}
		seen[name] = key
		if _, err := Parse([]byte("leaf x " + name)); err != nil {
			t.Errorf("SequenceName(%q) = %q, not a name: %v", key, name, err)
		}
	}
}

// hexOf is the first 8 hex digits of key's SHA-256.
func hexOf(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:4])
}
