package mariadb

import (
	"errors"
	"testing"
)

// Options MariaDB would not honour are refused before anything is looked up
// or created.
func TestPrepareRefusesBadOptions(t *testing.T) {
	for _, o := range []Options{
		{Offset: 3, Increment: 2}, // MariaDB would ignore the offset
		{Offset: -1, Increment: 2},
		{Offset: 1, Increment: -2},
		{Offset: 2, Increment: 1},
	} {
		s, err := Prepare(o)
		if !errors.Is(err, ErrOptions) {
			if s != nil {
				s.Close()
			}
			t.Errorf("Prepare(%+v): got %v, want ErrOptions", o, err)
		}
	}
}
