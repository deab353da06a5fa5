package main

// after= and from=public on a ticketd whose generator runs ahead of its
// clock because it took over a worker ID that its previous holder, killed,
// had reserved ahead: real processes on a real pair of MariaDB servers.

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
	"ticketd/snowflake"
)

// TestE2EAfterTakeover: a deployment of two worker IDs (41/0/1/21), both
// held; the holder of one is killed (its reservation, 30 s ahead, stays) and
// a new ticketd with -max-wait 30s takes that worker ID over. Its generator
// counts up from the reservation, 27 s ahead of its clock. It answers
// after= with its own last ID (200, and IDs above it, single and batched),
// after= an ID 500 ms past its last one, and from=public with the form of
// its own ID; so does the other ticketd, whose generator is not ahead (the
// bound is 1 s plus -max-wait past a ticketd's clock: a client failing over
// from the new ticketd to it). Both still refuse an ID 36 s past the new
// ticketd's last one (a forged ID, past the bound).
func TestE2EAfterTakeover(t *testing.T) {
	p := mysqltest.StartPair(t)
	keys, _, _ := writeKeyFile(t, 1)
	args := append(slices.Clone(fastLeases), "-layout", "41/0/1/21", "-reserve", "30s", "-max-wait", "30s", "-id-key-file", keys)
	first := startDaemon(t, p, args...)
	other := startDaemon(t, p, args...)
	w, l := first.status().Worker, first.layoutOf()
	if err := first.cmd.Process.Kill(); err != nil { // no release: the reservation stays
		t.Fatal(err)
	}
	<-first.done
	took := startDaemon(t, p, args...) // leases w once the killed one's lease expires
	if got := took.status().Worker; got != w {
		t.Fatalf("the new ticketd holds worker %d, want the killed one's %d", got, w)
	}

	get := func(d *daemon, path string) (int, string) {
		t.Helper()
		status, body := getBody(t, d.addr, path)
		return status, strings.TrimSpace(body)
	}
	timeOf := func(id int64) time.Time {
		pt, err := l.Decompose(id)
		if err != nil {
			t.Fatal(err)
		}
		return time.UnixMilli(pt.UnixMs)
	}
	status, body := get(took, "/v1/id?with=public")
	f := strings.Fields(body)
	if status != 200 || len(f) != 2 {
		t.Fatalf("/v1/id?with=public: got %d %q", status, body)
	}
	last, _ := strconv.ParseInt(f[0], 10, 64)
	form := f[1]
	ahead := time.Until(timeOf(last))
	t.Logf("the new ticketd's first ID %d is %s ahead of the clock", last, ahead)
	if ahead < 5*time.Second {
		t.Fatalf("the new ticketd's ID is %s ahead of the clock, want over 5 s: the takeover did not put its generator ahead, and the test shows nothing", ahead)
	}

	for i := range 3 {
		status, body = get(took, "/v1/id?after="+strconv.FormatInt(last, 10))
		id, _ := strconv.ParseInt(body, 10, 64)
		if status != 200 || id <= last {
			t.Fatalf("after=%d (its own ID, %s ahead of its clock), call %d: got %d %q, want 200 and an ID above it", last, time.Until(timeOf(last)), i, status, body)
		}
		last = id
	}
	status, body = get(took, "/v1/ids?n=5&after="+strconv.FormatInt(last, 10))
	if status != 200 || len(strings.Fields(body)) != 5 {
		t.Fatalf("/v1/ids?n=5&after=%d: got %d %q, want 200 and 5 IDs", last, status, body)
	}
	for _, s := range strings.Fields(body) {
		id, _ := strconv.ParseInt(s, 10, 64)
		if id <= last {
			t.Fatalf("/v1/ids?n=5&after=%d gave %d, not above it", last, id)
		}
		last = max(last, id)
	}
	status, body = get(took, "/v1/ids/"+form+"?from=public")
	if status != 200 || !strings.Contains(body, `"key":0`) {
		t.Fatalf("from=public of its own ID's form %s: got %d %q, want 200", form, status, body)
	}

	// IDs of another worker past its last one: 500 ms is within the bound
	// (the generator moves forward), 5 s past the bound (1 s plus
	// -max-wait 30s) is not.
	past := func(d time.Duration) int64 {
		id, err := l.Compose(snowflake.Parts{UnixMs: timeOf(last).Add(d).UnixMilli(), Worker: 1 - w})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	near, forged := past(500*time.Millisecond), past(36*time.Second)
	status, body = get(took, "/v1/id?after="+strconv.FormatInt(near, 10))
	if id, _ := strconv.ParseInt(body, 10, 64); status != 200 || id <= near {
		t.Fatalf("after= an ID 500 ms past its last: got %d %q, want 200 and an ID above it", status, body)
	}
	// The bound is each one's clock plus -max-wait, not its generator's
	// time, which after= moves. A generator may read a millisecond past
	// the time of the request (fasthttp's, taken as it arrived); then the
	// message names both.
	const bound = "(at most 31s: 1s plus -max-wait 30s)"
	for _, tt := range []struct {
		d    *daemon
		says []string
	}{{took, []string{"past this ticketd's clock", bound}}, {other, []string{"past this ticketd's clock", bound}}} {
		status, body = get(tt.d, "/v1/id?after="+strconv.FormatInt(forged, 10))
		for _, says := range tt.says {
			if status != 400 || !strings.Contains(body, says) {
				t.Errorf("ticketd %s, after= an ID 36 s past the new ticketd's last: got %d %q, want 400 saying %q", tt.d.addr, status, body, says)
			}
		}
	}
	// The other ticketd, at its clock, answers after= the new ticketd's
	// last ID, over 20 s past its clock: a client failing over.
	status, body = get(other, "/v1/id?after="+strconv.FormatInt(last, 10))
	if id, _ := strconv.ParseInt(body, 10, 64); status != 200 || id <= last {
		t.Fatalf("the other ticketd, after=%d (%s past its clock): got %d %q, want 200 and an ID above it", last, time.Until(timeOf(last)), status, body)
	}
}
