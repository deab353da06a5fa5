package main

import (
	"bytes"
	"strings"
	"testing"

	"ticketd/ticket/dba/paircheck"
)

func TestCount(t *testing.T) {
	for _, tt := range []struct {
		n    int
		want string
	}{{0, "0 problems"}, {1, "1 problem"}, {2, "2 problems"}, {1000, "1000 problems"}} {
		if got := count(tt.n, "problem", "problems"); got != tt.want {
			t.Errorf("count(%d): got %q, want %q", tt.n, got, tt.want)
		}
	}
}

// TestPrintPairOneProblem: pair check of a pair with one problem says
// "1 problem", not "1 problems".
func TestPrintPairOneProblem(t *testing.T) {
	var b bytes.Buffer
	printPair(&b, paircheck.PairReport{
		Servers:  []string{"server 1 (127.0.0.1:3307)", "server 2 (127.0.0.1:3308)"},
		Problems: []paircheck.PairProblem{{Servers: []int{2}, What: "sync_binlog is 0, not 1", Fix: "SET GLOBAL sync_binlog = 1"}},
	}, "tickets")
	if want := "\n1 problem, in the order to fix them:\n1. server 2 (127.0.0.1:3308): sync_binlog is 0, not 1\n"; !strings.Contains(b.String(), want) {
		t.Errorf("got\n%s\nwant %q in it", b.String(), want)
	}
}
