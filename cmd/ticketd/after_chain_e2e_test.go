package main

// A chain of after= on one ticketd: real processes on a real pair of
// MariaDB servers.

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
	"ticketd/snowflake"
)

// chainStatus is what TestE2EAfterChain reads of /v1/status.
type chainStatus struct {
	Lease *struct {
		Worker  uint32 `json:"worker"`
		NowMs   int64  `json:"now_ms"`
		FenceMs int64  `json:"fence_ms"`
	} `json:"lease"`
}

// TestE2EAfterChain: one ticketd with the default lease settings (-reserve
// 1m, -max-wait 5s: after= X at most 6 s past its clock) and a caller that
// chains 100 after= calls, each X 500 ms past the answer before it, within
// a second or two of wall clock. The calls with X within 6 s of the clock
// are answered with an ID above X; the first past it gets the 400 docs/api.md
// promises, and so does every later one: the answers do not move the bound.
// The generator's time (/v1/status now_ms) stays within the bound and its
// fence within the bound plus -reserve. Then 100 calls, each after= the
// ticketd's own last answer (at the edge of the bound), are all answered.
func TestE2EAfterChain(t *testing.T) {
	const step, calls, slack = 500 * time.Millisecond, 100, 50 // slack in ms: the clock read here and there
	p := mysqltest.StartPair(t)
	d := startDaemon(t, p)
	l := d.layoutOf()
	const bound, reserve = 6_000, 60_000 // ms: 1 s plus -max-wait; -reserve
	const says = "(at most 6s: 1s plus -max-wait 5s)"
	status := func() chainStatus {
		t.Helper()
		var st chainStatus
		d.getJSON("/v1/status", &st)
		if st.Lease == nil {
			t.Fatal("/v1/status shows no lease")
		}
		return st
	}
	msOf := func(id int64) int64 {
		pt, err := l.Decompose(id)
		if err != nil {
			t.Fatal(err)
		}
		return pt.UnixMs
	}
	get := func(path string) (int64, int, string) {
		t.Helper()
		code, body := getBody(t, d.addr, path)
		id, _ := strconv.ParseInt(strings.TrimSpace(body), 10, 64)
		return id, code, body
	}
	other := status().Lease.Worker ^ 1

	prev, code, body := get("/v1/id")
	if code != 200 {
		t.Fatalf("/v1/id: got %d %q", code, body)
	}
	answered, refused, wrong := 0, 0, 0
	for i := range calls {
		x, err := l.Compose(snowflake.Parts{UnixMs: msOf(prev) + step.Milliseconds(), Worker: other})
		if err != nil {
			t.Fatal(err)
		}
		sent := time.Now().UnixMilli()
		id, code, body := get(fmt.Sprintf("/v1/id?after=%d", x))
		back := time.Now().UnixMilli()
		switch {
		case code == 200 && id > x:
			if msOf(x) > back+bound+slack {
				if wrong++; wrong == 1 {
					t.Errorf("call %d: after= an ID %d ms past the clock answered %d, want 400 past %d ms", i+1, msOf(x)-back, id, bound)
				}
			} else {
				answered++
			}
			prev = id
		case code == 400 && msOf(x) > sent+bound:
			var e struct{ Error string }
			if err := json.Unmarshal([]byte(body), &e); err != nil || !strings.Contains(e.Error, "past this ticketd's clock") || !strings.Contains(e.Error, says) {
				t.Fatalf("call %d: 400 %q, want a JSON error saying %q", i+1, body, says)
			}
			refused++
		default:
			t.Fatalf("call %d: after= an ID %d ms past the clock: got %d %q, want 200 and an ID above it within %d ms, 400 beyond",
				i+1, msOf(x)-sent, code, body, bound)
		}
	}
	st, now := status(), time.Now().UnixMilli()
	t.Logf("%d calls answered within the bound, %d refused beyond it, %d answered beyond it; the generator %d ms and the fence %d ms past the clock",
		answered, refused, wrong, st.Lease.NowMs-now, st.Lease.FenceMs-now)
	if refused == 0 {
		t.Fatalf("no call of %d refused", calls)
	}
	if st.Lease.NowMs > now+bound+slack || st.Lease.FenceMs > now+bound+reserve+slack {
		t.Errorf("the generator %d ms and the fence %d ms past the clock: want at most %d and %d ms (the bound, plus -reserve)",
			st.Lease.NowMs-now, st.Lease.FenceMs-now, bound, bound+reserve)
	}

	for i := range calls {
		id, code, body := get(fmt.Sprintf("/v1/id?after=%d", prev))
		if code != 200 || id <= prev {
			t.Fatalf("own chain, call %d: after=%d (its own last ID, %d ms past the clock): got %d %q, want 200 and an ID above it",
				i+1, prev, msOf(prev)-time.Now().UnixMilli(), code, body)
		}
		prev = id
	}
}
