package ff1_test

import (
	"fmt"

	"ticketd/ff1"
)

// A keyed permutation of the positive 63-bit integers: order numbers that
// say nothing about how many came before, and that turn back into the
// counter with the key.
func ExampleRange() {
	key := []byte("an example key, 32 bytes long!!!") // in real use: 32 random bytes, kept secret
	x, err := ff1.NewBinary(key, 63, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	positive, err := ff1.NewRange(x, 1, x.Max()) // [1, 2^63-1]
	if err != nil {
		fmt.Println(err)
		return
	}
	for counter := uint64(1); counter <= 3; counter++ {
		public, _ := positive.Encrypt(counter)
		back, _ := positive.Decrypt(public)
		fmt.Println(counter, public > 0, back == counter)
	}
	// Output:
	// 1 true true
	// 2 true true
	// 3 true true
}

// NIST SP 800-38G's first FF1 sample: radix 10, AES-128, no tweak.
func ExampleCipher() {
	key := []byte{0x2B, 0x7E, 0x15, 0x16, 0x28, 0xAE, 0xD2, 0xA6, 0xAB, 0xF7, 0x15, 0x88, 0x09, 0xCF, 0x4F, 0x3C}
	c, err := ff1.New(key, 10)
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := c.Encrypt([]uint16{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, nil)
	fmt.Println(out, err)
	// Output: [2 4 3 3 4 7 7 4 8 4] <nil>
}
