package publicid

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Two keys as a key file writes them (test keys only).
const (
	hexA = "6b3f0c1e2d4a5968778695a4b3c2d1e0f00f1e2d3c4b5a69788796a5b4c3d2e1"
	hexB = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
)

func rawKey(t testing.TB, h string) []byte {
	t.Helper()
	b, err := hex.DecodeString(h)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func ring(t testing.TB, hexes ...string) *Ring {
	t.Helper()
	var keys [][]byte
	for _, h := range hexes {
		keys = append(keys, rawKey(t, h))
	}
	r, err := NewRing(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func writeFile(t *testing.T, body string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(p, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParseKeys(t *testing.T) {
	r, err := ParseKeys([]byte("# ticketd ID keys\n\n  " + hexA + "  \n# older\n" + strings.ToUpper(hexB) + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Len() != 2 || r.Check() != CheckValue(rawKey(t, hexA)) || r.Checks()[1] != CheckValue(rawKey(t, hexB)) {
		t.Errorf("got %v, want the two keys in file order", r)
	}
	many := ""
	for i := range MaxKeys + 1 {
		many += fmt.Sprintf("%064x\n", i+1)
	}
	for name, body := range map[string]string{
		"empty":        "# nothing\n\n",
		"short":        hexA[:63] + "\n",
		"long":         hexA + "0\n",
		"not hex":      "zz" + hexA[2:] + "\n",
		"twice":        hexA + "\n" + hexA + "\n",
		"too many":     many,
		"a word after": hexA + " # encodes\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseKeys([]byte(body))
			if !errors.Is(err, ErrKeyFile) {
				t.Fatalf("got %v, want ErrKeyFile", err)
			}
			for _, h := range []string{hexA, hexA[:32], hexA[32:], hexA[2:40]} {
				if strings.Contains(strings.ToLower(err.Error()), h) {
					t.Errorf("the error %q quotes key material", err)
				}
			}
		})
	}
}

func TestReadKeyFileMode(t *testing.T) {
	for _, mode := range []os.FileMode{0o600, 0o400} {
		if _, err := ReadKeyFile(writeFile(t, hexA+"\n", mode)); err != nil {
			t.Errorf("mode %04o: %v", mode, err)
		}
	}
	for _, mode := range []os.FileMode{0o644, 0o640, 0o604, 0o660, 0o602} {
		_, err := ReadKeyFile(writeFile(t, hexA+"\n", mode))
		if !errors.Is(err, ErrKeyFile) || !strings.Contains(err.Error(), "chmod 600") {
			t.Errorf("mode %04o: got %v, want ErrKeyFile naming chmod 600", mode, err)
		}
	}
	if _, err := ReadKeyFile(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, ErrKeyFile) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: got %v", err)
	}
}

// TestReadKeyFileOneOpen: the mode checked is that of the file read. The
// key file's path is a symbolic link that another goroutine keeps moving
// between a file of mode 0600 (key A) and one of mode 0644 (key B), by
// rename, as fast as it can. Every ReadKeyFile either refuses the file
// (mode 0644) or returns key A; key B, read after the check passed on A's
// file, is never returned. (Checking the path, then reading it, returned
// key B 3 to 28 times in 20,000 reads, in three runs on a 2-core VM.)
func TestReadKeyFileOneOpen(t *testing.T) {
	dir := t.TempDir()
	private := filepath.Join(dir, "a.keys")
	public := filepath.Join(dir, "b.keys")
	if err := os.WriteFile(private, []byte(hexA+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(public, []byte(hexB+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(public, 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "keys")
	if err := os.Symlink(private, path); err != nil {
		t.Fatal(err)
	}
	checkA, checkB := CheckValue(rawKey(t, hexA)), CheckValue(rawKey(t, hexB))
	stop := make(chan struct{})
	flipped := make(chan error, 1)
	go func() {
		tmp := filepath.Join(dir, "next")
		for i := 0; ; i++ {
			select {
			case <-stop:
				flipped <- nil
				return
			default:
			}
			target := private
			if i%2 == 0 {
				target = public
			}
			if err := os.Symlink(target, tmp); err != nil {
				flipped <- err
				return
			}
			if err := os.Rename(tmp, path); err != nil {
				flipped <- err
				return
			}
		}
	}()
	var gotA, refused, gotB int
	for range 20_000 {
		r, err := ReadKeyFile(path)
		switch {
		case errors.Is(err, ErrKeyFile) && strings.Contains(err.Error(), "mode 0644"):
			refused++
		case err != nil:
			t.Fatalf("ReadKeyFile: %v", err)
		case r.Check() == checkA:
			gotA++
		case r.Check() == checkB:
			gotB++
		}
	}
	close(stop)
	if err := <-flipped; err != nil {
		t.Fatal(err)
	}
	t.Logf("20000 reads: %d key A, %d refused, %d key B", gotA, refused, gotB)
	if gotB != 0 {
		t.Errorf("key B, of the file of mode 0644, was returned %d times out of 20000", gotB)
	}
	if gotA == 0 || refused == 0 {
		t.Errorf("%d reads of key A, %d refusals: the link did not move between reads, and the test shows nothing", gotA, refused)
	}
}

// TestCheckValue: the check value is HKDF-SHA-256 (RFC 5869) of the key,
// with no salt and its label, 16 bytes, computed here from HMAC directly;
// it names one key and quotes none of it.
func TestCheckValue(t *testing.T) {
	raw := rawKey(t, hexA)
	// HKDF-Extract with no salt: PRK = HMAC(zeros(32), key); Expand of one
	// block: T(1) = HMAC(PRK, info || 0x01).
	ext := hmac.New(sha256.New, make([]byte, sha256.Size))
	ext.Write(raw)
	prk := ext.Sum(nil)
	exp := hmac.New(sha256.New, prk)
	exp.Write([]byte(labelCheck))
	exp.Write([]byte{1})
	want := hex.EncodeToString(exp.Sum(nil)[:16])
	if got := CheckValue(raw); got != want {
		t.Errorf("CheckValue: got %s, want %s", got, want)
	}
	if CheckValue(raw) == CheckValue(rawKey(t, hexB)) {
		t.Error("two keys have one check value")
	}
	if strings.Contains(CheckValue(raw), hexA[:8]) {
		t.Error("the check value quotes the key")
	}
	r := ring(t, hexA, hexB)
	for _, s := range []string{r.String(), fmt.Sprintf("%v %+v %#v %s", r, r, r, r)} {
		if strings.Contains(s, hexA[:16]) || strings.Contains(s, hexB[:16]) {
			t.Errorf("printing a ring shows a key: %s", s)
		}
	}
}

// TestPublicForms: forms are positive, unique, decode back, and a ring
// decodes a form made under its older key through that key.
func TestPublicForms(t *testing.T) {
	old := ring(t, hexB)
	r := ring(t, hexA, hexB)
	seen := map[int64]int64{}
	for _, id := range []int64{1, 2, 3, 1 << 62, math.MaxInt64, 1957262335440691200, 1957262335440691201} {
		f, err := r.Public(id)
		if err != nil || f <= 0 {
			t.Fatalf("Public(%d) = %d, %v", id, f, err)
		}
		if w, ok := seen[f]; ok {
			t.Fatalf("Public(%d) = Public(%d) = %d", id, w, f)
		}
		seen[f] = id
		d, err := r.Decode(f, func(x int64) bool { return x == id })
		if err != nil || len(d) != 1 || d[0] != (Decoding{ID: id, Key: 0}) {
			t.Fatalf("Decode(Public(%d)): got %v, %v; want the ID under key 0", id, d, err)
		}
		of, _ := old.Public(id)
		d, err = r.Decode(of, func(x int64) bool { return x == id })
		if err != nil || len(d) != 1 || d[0] != (Decoding{ID: id, Key: 1}) {
			t.Fatalf("Decode of the old key's form of %d: got %v, %v; want the ID under key 1", id, d, err)
		}
		if all, _ := r.Decode(of, nil); len(all) != 2 || all[1].ID != id {
			t.Fatalf("Decode without a test: got %v, want a decoding under each key", all)
		}
	}
	for _, bad := range []int64{0, -1, math.MinInt64} {
		if _, err := r.Public(bad); !errors.Is(err, ErrNotPositive) {
			t.Errorf("Public(%d): got %v, want ErrNotPositive", bad, err)
		}
		if _, err := r.Decode(bad, nil); !errors.Is(err, ErrNotPositive) {
			t.Errorf("Decode(%d): got %v, want ErrNotPositive", bad, err)
		}
	}
	if f1, _ := r.Public(42); f1 == func() int64 { f, _ := old.Public(42); return f }() {
		t.Error("two keys give one form")
	}
}

func TestPublicAllocs(t *testing.T) {
	r := ring(t, hexA)
	id := int64(1957262335440691200)
	if got := testing.AllocsPerRun(1000, func() { _, _ = r.Public(id) }); got != 0 && !raceEnabled {
		t.Errorf("Public: %v allocations, want 0", got)
	}
	// A public sequence's value, as ticketd permutes each one it hands out,
	// without a start and above one.
	for _, bits := range []int{32, 63} {
		for _, start := range []uint64{0, 100_000} {
			s, err := r.SequenceAbove(r.Check(), "orders", bits, start)
			if err != nil {
				t.Fatal(err)
			}
			if got := testing.AllocsPerRun(1000, func() { _, _ = s.Public(123456) }); got != 0 && !raceEnabled {
				t.Errorf("Sequence.Public, %d bits above %d: %v allocations, want 0", bits, start, got)
			}
		}
	}
}

// TestSequence: a public sequence's values are distinct, within its range,
// decode back, differ between names, widths and keys, and need the key the
// sequence pins.
func TestSequence(t *testing.T) {
	r := ring(t, hexA, hexB)
	for _, bits := range []int{32, 63} {
		s, err := r.Sequence(r.Check(), "orders", bits)
		if err != nil {
			t.Fatal(err)
		}
		other, _ := r.Sequence(r.Check(), "invoices", bits)
		oldKey, _ := r.Sequence(r.Checks()[1], "orders", bits)
		seen := map[uint64]bool{}
		same := 0
		for v := uint64(1); v <= 20_000; v++ {
			p, err := s.Public(v)
			if err != nil || p == 0 || p >= 1<<bits || seen[p] {
				t.Fatalf("%d bits: Public(%d) = %d, %v: out of range or repeated", bits, v, p, err)
			}
			seen[p] = true
			if back, err := s.Counter(p); err != nil || back != v {
				t.Fatalf("%d bits: Counter(Public(%d)) = %d, %v", bits, v, back, err)
			}
			if q, _ := other.Public(v); q == p {
				same++
			}
			if q, _ := oldKey.Public(v); q == p {
				same++
			}
		}
		if same > 1 {
			t.Errorf("%d bits: %d values equal under another name or key", bits, same)
		}
		if _, err := s.Public(0); !errors.Is(err, ErrNotPositive) {
			t.Errorf("Public(0): got %v", err)
		}
		if _, err := s.Public(1 << bits); !errors.Is(err, ErrNotPositive) {
			t.Errorf("Public(2^%d): got %v", bits, err)
		}
	}
	if _, err := r.Sequence(CheckValue(make([]byte, 32)), "orders", 32); !errors.Is(err, ErrNoKey) {
		t.Errorf("a key the ring lacks: got %v, want ErrNoKey", err)
	}
	if !r.Has(r.Checks()[0]) || !r.Has(r.Checks()[1]) || r.Has(CheckValue(make([]byte, 32))) || r.Has("") {
		t.Errorf("Has: the ring's own check values %v, and only those", r.Checks())
	}
	c := r.Checks()[1]
	if got := testing.AllocsPerRun(100, func() { r.Has(c) }); got != 0 {
		t.Errorf("Has: %v allocations, want 0", got)
	}
	if _, err := r.Sequence(r.Check(), "orders", 64); !errors.Is(err, ErrWidth) {
		t.Errorf("64 bits: got %v, want ErrWidth", err)
	}
}

// TestReload: SIGHUP's rules. Adding a decoding key applies; another
// encoding key, or a key dropped, is refused and the ring stays.
func TestReload(t *testing.T) {
	p := writeFile(t, hexA+"\n", 0o600)
	st, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	write := func(body string) {
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(hexA + "\n" + hexB + "\n")
	if r, err := st.Reload(); err != nil || r.Len() != 2 || st.Load().Len() != 2 {
		t.Fatalf("adding a decoding key: got %v, %v", r, err)
	}
	for name, body := range map[string]string{
		"another encoding key": hexB + "\n" + hexA + "\n",
		"a key dropped":        hexA + "\n",
		"a broken file":        hexA[:10] + "\n",
	} {
		write(body)
		if _, err := st.Reload(); err == nil {
			t.Errorf("%s: reload accepted", name)
		}
		if st.Load().Len() != 2 || st.Load().Check() != CheckValue(rawKey(t, hexA)) {
			t.Errorf("%s: the ring changed after a refused reload: %v", name, st.Load())
		}
	}
	if _, err := NewStore(st.Load()).Reload(); !errors.Is(err, ErrReload) {
		t.Errorf("a store made in memory: got %v, want ErrReload", err)
	}
}
