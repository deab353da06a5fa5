package publicid

import (
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"

	"ticketd/ff1"
)

// KeySize is the size of an operator's key: 32 random bytes.
const KeySize = 32

// MaxKeys bounds a ring: every key costs a decryption when a form is
// decoded.
const MaxKeys = 8

// Sentinel errors. Errors returned by this package wrap one of these.
var (
	// ErrKeyFile: a key file that cannot be used (unreadable, readable by
	// others than its owner, malformed, empty, a key twice, too many).
	ErrKeyFile = errors.New("publicid: key file")
	// ErrNotPositive: a value that is not a positive int64 (or, for a
	// sequence, not in (start, 2^bits-1]).
	ErrNotPositive = errors.New("publicid: not in range")
	// ErrNoKey: no key of the ring has the check value asked for.
	ErrNoKey = errors.New("publicid: no such key in the ring")
	// ErrReload: a reload that would change an answer already given (another
	// encoding key, or a key dropped): it needs a restart.
	ErrReload = errors.New("publicid: reload refused")
	// ErrWidth: a sequence width other than 32 or 63 bits.
	ErrWidth = errors.New("publicid: sequence width must be 32 or 63 bits")
	// ErrFewValues: a sequence whose start leaves fewer than
	// MinSequenceValues values within its width.
	ErrFewValues = errors.New("publicid: too few values above the sequence's start")
)

// The HKDF labels of the keys derived from an operator's key. Changing one
// changes every public value made with it: they are part of the format.
const (
	labelForms    = "ticketd v1 public forms of snowflake IDs"
	labelSequence = "ticketd v1 public sequence"
	labelCheck    = "ticketd v1 key check value"
)

// key is one operator's key, ready to use. The operator's 32 bytes are not
// kept (ParseKeys clears them), but prk stands in for them: it is their
// HKDF-Extract (RFC 5869), and every key of this package is HKDF-Expand of
// prk with a label, the forms' key and the check value as well as each
// public sequence's. So whoever reads prk from the process's memory can
// make every public form and public sequence value the operator's key
// makes; only the 32 bytes themselves, and other uses of them, stay out of
// reach.
//
// prk cannot be dropped for narrower keys derived at load: a public
// sequence's key is HKDF-Expand of prk with the sequence's name and width,
// and sequences are created (under any name) while ticketd runs. Nor can it
// be narrowed: HKDF-Expand is HMAC keyed with prk, and the most one could
// keep instead, SHA-256's states after HMAC's two key blocks, computes HMAC
// for every message alike, since the sequences' label is shorter than a
// block and cannot be folded into them. The forms' key is kept only as its
// AES key schedule (in forms).
type key struct {
	check string     // CheckValue of the key
	forms *ff1.Range // public forms: [1, 2^63-1]
	prk   []byte     // HKDF-Extract of the key: public sequences' keys, and every other, follow from it
}

func newKey(raw []byte) (*key, error) {
	if len(raw) != KeySize {
		return nil, fmt.Errorf("%w: a key is %d bytes, got %d", ErrKeyFile, KeySize, len(raw))
	}
	fk, err := derive(raw, labelForms, 16)
	if err != nil {
		return nil, err
	}
	x, err := ff1.NewBinary(fk, 63, nil)
	if err != nil {
		return nil, err
	}
	forms, err := ff1.NewRange(x, 1, x.Max())
	if err != nil {
		return nil, err
	}
	prk, err := hkdf.Extract(sha256.New, raw, nil)
	if err != nil {
		return nil, err
	}
	return &key{check: CheckValue(raw), forms: forms, prk: prk}, nil
}

func derive(raw []byte, label string, n int) ([]byte, error) {
	return hkdf.Key(sha256.New, raw, nil, label, n)
}

// CheckValue names a key without revealing it: 16 bytes of HKDF-SHA-256
// under the key with a label of its own, in hexadecimal (32 digits). Two
// keys have the same check value only if they are the same key (short of a
// 2^-128 chance); the check value gives no way back to the key, nor to the
// keys derived from it for forms and sequences (other labels, independent
// outputs). What ticketd records on the ticket servers to make sure every
// ticketd of a deployment holds the same key.
func CheckValue(raw []byte) string {
	b, err := derive(raw, labelCheck, 16)
	if err != nil { // HKDF fails only for outputs over 255 hash lengths
		panic(err)
	}
	return hex.EncodeToString(b)
}

// sequenceKey derives the AES-128 key of one public sequence. A sequence
// without a start (start 0) has the key release 3 gave it; a start is
// part of the label otherwise.
func (k *key) sequenceKey(name string, bits int, start uint64) ([]byte, error) {
	info := labelSequence + "\x00" + name + "\x00" + strconv.Itoa(bits)
	if start > 0 {
		info += "\x00above\x00" + strconv.FormatUint(start, 10)
	}
	return hkdf.Expand(sha256.New, k.prk, info, 16)
}
