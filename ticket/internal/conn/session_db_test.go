package conn

import (
	"context"
	"fmt"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
	"ticketd/ticket/internal/spec"
)

// TestBrokenConnectionRepeated: a connection killed while a statement runs
// on it (a DBA's KILL, a tool that ends idle sessions just as one is taken)
// says nothing of the server: a statement that may be repeated is sent once
// more on another connection, and succeeds; a release, which may not, fails
// (and shows the kill did break the first attempt).
func TestBrokenConnectionRepeated(t *testing.T) {
	ms := mysqltest.Start(t, mysqltest.Options{Offset: 1, Increment: 2})
	s := testServer(t, onServer(ms, func(c *spec.Config) { c.CallTimeout = 5 * time.Second }))
	for _, tt := range []struct {
		op     Op
		wantOK bool
	}{{OpRenew, true}, {OpTicket, true}, {OpRelease, false}} {
		t.Run(tt.op.String(), func(t *testing.T) {
			ctx := context.Background()
			ss := NewSession(s, tt.op, nil)
			defer ss.Close()
			var id int64
			if err := ss.Get(ctx, "its connection", &id, "SELECT CONNECTION_ID()"); err != nil {
				t.Fatal(err)
			}
			killed := make(chan struct{})
			go func() {
				defer close(killed)
				time.Sleep(300 * time.Millisecond) // the statement below is running by then
				_, _ = ms.Run(fmt.Sprintf("KILL CONNECTION %d", id))
			}()
			_, err := ss.Exec(ctx, "sleeping", "DO SLEEP(1)")
			<-killed
			switch {
			case tt.wantOK && err != nil:
				t.Fatalf("%s statement on a killed connection: %v, want it sent again on another and done", tt.op, err)
			case !tt.wantOK && err == nil:
				t.Fatalf("%s statement on a killed connection: done, want the error (a release is not repeated)", tt.op)
			case !tt.wantOK && !brokenUnder(err):
				t.Fatalf("%s statement on a killed connection: %v, want a broken connection", tt.op, err)
			}
			if tt.wantOK {
				var now int64
				if err := ss.Get(ctx, "its connection", &now, "SELECT CONNECTION_ID()"); err != nil {
					t.Fatal(err)
				}
				if now == id {
					t.Fatalf("still on connection %d, want another one", id)
				}
			}
		})
	}
}
