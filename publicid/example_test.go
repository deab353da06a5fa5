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
