package publicid_test

import (
	"fmt"

	"ticketd/publicid"
)

// An application that holds the deployment's key file shows public forms
// and turns them back into IDs locally.
func ExampleRing() {
	// In real use: publicid.ReadKeyFile("/etc/ticketd/id-keys"), a file of
	// mode 0600 with one key per line (openssl rand -hex 32).
	ring, err := publicid.ParseKeys([]byte("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n"))
	if err != nil {
		fmt.Println(err)
		return
	}
	id := int64(1957262335440691200) // an ID from ticketd: the primary key
	form, _ := ring.Public(id)       // what users see
	back, _ := ring.Decode(form, func(x int64) bool { return x > 0 })
	fmt.Println(form != id, back[0].ID == id, back[0].Key)
	// Output: true true 0
}

// A public sequence created with a start (ticketd sequence create orders
// -public -start 1000000) hands out, for each counter value above the
// start, a value above the start too; the key turns it back.
func ExampleRing_SequenceAbove() {
	ring, err := publicid.ParseKeys([]byte("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n"))
	if err != nil {
		fmt.Println(err)
		return
	}
	seq, err := ring.SequenceAbove(ring.Check(), "orders", 32, 1_000_000)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, counter := range []uint64{1_000_001, 1_000_002, 1<<32 - 1} {
		v, _ := seq.Public(counter)
		back, _ := seq.Counter(v)
		fmt.Println(v > seq.Start(), v <= seq.Max(), back == counter)
	}
	_, err = ring.SequenceAbove(ring.Check(), "orders", 32, 1<<32-1-999_999)
	fmt.Println(err)
	// Output:
	// true true true
	// true true true
	// true true true
	// publicid: too few values above the sequence's start: 32 bits above 4293967296 leave 999999 values, want at least 1000000
}
