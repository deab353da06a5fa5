// Package ff1 is NIST SP 800-38G (Rev. 1) FF1, format-preserving encryption,
// over the standard library's AES: a keyed permutation of the numeral
// strings of one length in one radix. It imports nothing outside the
// standard library, so an application may use it on its own.
//
// Two forms:
//
//   - [Cipher] is FF1 as the standard writes it, for any radix from 2 to
//     65536 and any length the standard allows, numerals as []uint16, with
//     a tweak per call. It passes NIST's published samples (FF1samples.pdf,
//     samples 1 to 9) and costs microseconds: it is the reference.
//   - [Binary] is the same function for radix 2 and up to 64 numerals held
//     in a uint64 (the numeral string is the value's bits, most significant
//     first), with the tweak fixed when it is made. Its tests check it
//     against Cipher value by value. It costs ten AES blocks per call and
//     allocates nothing: what a hot path can afford.
//
// # The algorithm
//
// FF1 is a ten-round Feistel network. The string X of n numerals is split
// into A (the first u = floor(n/2) numerals) and B (the other v = n-u).
// Round i computes R = AES-CBC-MAC(P || Q), where P is one block that
// depends only on the radix, u, n and the tweak's length, and Q holds the
// tweak, the round number i and B's value in b bytes. The first d bytes of
// R (extended by AES counter blocks when d > 16) are read as a number y;
// then C = (A + y) mod radix^m, where m is u in even rounds and v in odd
// ones, and the halves move along: A = B, B = C. Decryption runs the rounds
// backwards and subtracts.
//
// Binary exploits what is constant for one key, length and tweak: P, and so
// AES(P), the first step of every round's CBC-MAC, is computed once; with a
// tweak of at most 15-b bytes Q is a single block, so every round is one
// AES call on AES(P) XOR Q; and with radix 2 every "mod radix^m" is a mask.
// n ≤ 64 gives b ≤ 4 and d = 8: y is the first 8 bytes of R.
//
// # Domains that are not a power of the radix
//
// A permutation of [lo, hi] inside [0, 2^n) is made by cycle-walking
// ([Binary.EncryptIn]): encrypt, and encrypt the result again while it falls
// outside the range. Since the values outside are walked past in the
// permutation's own cycles, the result is a permutation of [lo, hi], and
// decryption walks back the same way. With a range of at least half of
// [0, 2^n), a call costs at most twice a plain one on average.
//
// # Limits
//
// The standard asks radix^n ≥ 1,000,000, so Binary needs n ≥ 20
// ([MinBinaryBits]) and Cipher n ≥ ceil(6 / log10(radix)). FF1 is a
// permutation with a key, nothing more: equal inputs give equal outputs, and
// anyone with the key can invert it. Which key to use and how to keep it is
// the caller's affair.
package ff1
