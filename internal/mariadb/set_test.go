package mariadb

import (
	"errors"
	"fmt"
	"testing"
)

// TestStartSetFour: four servers from the repository's my.cnf, each with
// increment 4, the offset of its place and the server-id of its own group
// ([mariadbd.N]), each issuing tickets of its own residue; the accounts'
// passwords are the same everywhere. Sets that are no power of two are
// refused before anything starts.
func TestStartSetFour(t *testing.T) {
	needsMariaDB(t)
	t.Parallel()
	s, err := StartSet(4)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i, srv := range s.Servers {
		got, err := srv.Run("SELECT @@auto_increment_increment, @@auto_increment_offset, @@server_id")
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("4\t%d\t%d", i+1, i+1); got != want {
			t.Errorf("server %d: increment, offset, server-id = %q, want %q", i+1, got, want)
		}
		db := open(t, s.DSNs()[i])
		if id := mustTicket(t, db); id%4 != int64(i+1)%4 {
			t.Errorf("server %d gave ticket %d, want one of residue %d mod 4", i+1, id, (i+1)%4)
		}
	}
	if got, want := s.Addrs(), s.Servers[0].Addr()+","+s.Servers[1].Addr()+","+s.Servers[2].Addr()+","+s.Servers[3].Addr(); got != want {
		t.Errorf("Addrs = %q, want %q", got, want)
	}
	for _, n := range []int{0, 1, 3, 6} {
		if _, err := PrepareSet(n); !errors.Is(err, ErrOptions) {
			t.Errorf("PrepareSet(%d) = %v, want ErrOptions", n, err)
		}
	}
}
