package ff1

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// NIST's published FF1 samples (SP 800-38G, FF1samples.pdf), samples 1 to
// 9: AES-128, -192 and -256, radix 10 without and with a tweak, radix 36
// with a tweak.
var nistSamples = []struct {
	radix                  int
	key, tweak, plain, enc string
}{
	{10, "2B7E151628AED2A6ABF7158809CF4F3C", "", "0123456789", "2433477484"},
	{10, "2B7E151628AED2A6ABF7158809CF4F3C", "39383736353433323130", "0123456789", "6124200773"},
	{36, "2B7E151628AED2A6ABF7158809CF4F3C", "3737373770717273373737", "0123456789abcdefghi", "a9tv40mll9kdu509eum"},
	{10, "2B7E151628AED2A6ABF7158809CF4F3CEF4359D8D580AA4F", "", "0123456789", "2830668132"},
	{10, "2B7E151628AED2A6ABF7158809CF4F3CEF4359D8D580AA4F", "39383736353433323130", "0123456789", "2496655549"},
	{36, "2B7E151628AED2A6ABF7158809CF4F3CEF4359D8D580AA4F", "3737373770717273373737", "0123456789abcdefghi", "xbj3kv35jrawxv32ysr"},
	{10, "2B7E151628AED2A6ABF7158809CF4F3CEF4359D8D580AA4F7F036D6F04FC6A94", "", "0123456789", "6657667009"},
	{10, "2B7E151628AED2A6ABF7158809CF4F3CEF4359D8D580AA4F7F036D6F04FC6A94", "39383736353433323130", "0123456789", "1001623463"},
	{36, "2B7E151628AED2A6ABF7158809CF4F3CEF4359D8D580AA4F7F036D6F04FC6A94", "3737373770717273373737", "0123456789abcdefghi", "xs8a0azh2avyalyzuwd"},
}

const digits36 = "0123456789abcdefghijklmnopqrstuvwxyz"

func numerals(t testing.TB, s string) []uint16 {
	t.Helper()
	out := make([]uint16, len(s))
	for i := range s {
		d := strings.IndexByte(digits36, s[i])
		if d < 0 {
			t.Fatalf("%q: %q is no base-36 digit", s, s[i])
		}
		out[i] = uint16(d)
	}
	return out
}

func text(x []uint16) string {
	var b strings.Builder
	for _, d := range x {
		b.WriteByte(digits36[d])
	}
	return b.String()
}

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestNISTSamples(t *testing.T) {
	for i, s := range nistSamples {
		t.Run(fmt.Sprintf("sample %d", i+1), func(t *testing.T) {
			c, err := New(mustHex(t, s.key), s.radix)
			if err != nil {
				t.Fatal(err)
			}
			tweak := mustHex(t, s.tweak)
			got, err := c.Encrypt(numerals(t, s.plain), tweak)
			if err != nil {
				t.Fatal(err)
			}
			if text(got) != s.enc {
				t.Errorf("Encrypt(%s): got %s, want %s", s.plain, text(got), s.enc)
			}
			back, err := c.Decrypt(numerals(t, s.enc), tweak)
			if err != nil {
				t.Fatal(err)
			}
			if text(back) != s.plain {
				t.Errorf("Decrypt(%s): got %s, want %s", s.enc, text(back), s.plain)
			}
		})
	}
}

func TestCipherRefuses(t *testing.T) {
	key := make([]byte, 16)
	if _, err := New(make([]byte, 15), 10); !errors.Is(err, ErrKeySize) {
		t.Errorf("15-byte key: got %v, want ErrKeySize", err)
	}
	for _, r := range []int{0, 1, 65537} {
		if _, err := New(key, r); !errors.Is(err, ErrRadix) {
			t.Errorf("radix %d: got %v, want ErrRadix", r, err)
		}
	}
	c, err := New(key, 10)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Encrypt(make([]uint16, 5), nil); !errors.Is(err, ErrLength) {
		t.Errorf("5 decimal numerals (10^5 < 10^6): got %v, want ErrLength", err)
	}
	if _, err := c.Encrypt([]uint16{1, 2, 3, 4, 5, 10}, nil); !errors.Is(err, ErrNumeral) {
		t.Errorf("numeral 10 in radix 10: got %v, want ErrNumeral", err)
	}
	for radix, want := range map[int]int{2: 20, 10: 6, 36: 4, 65536: 2} {
		if got := MinLen(radix); got != want {
			t.Errorf("MinLen(%d): got %d, want %d", radix, got, want)
		}
	}
}
