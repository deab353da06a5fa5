package frontend

import (
	"strings"
	"testing"
	"time"

	"ticketd/ticket"
)

// claimStats are two sequences in use, one holding a large claim.
func claimStats() []ticket.SequenceStat {
	orders := ticket.SequenceStat{Name: "orders", Bits: 64, Block: 1000, Issued: 120000, Remaining: 1}
	orders.Held, orders.Claiming, orders.ClaimBlocks = 48500, true, 48
	orders.Demand, orders.RoundTrip = 60123.4, 201500*time.Microsecond
	orders.Claims, orders.Waits, orders.Dropped = 9, 3, 2000
	small := ticket.SequenceStat{Name: "small", Bits: 32, Block: 10, Issued: 5, Remaining: 0.5}
	small.Held, small.ClaimBlocks, small.Claims = 5, 1, 1
	return []ticket.SequenceStat{orders, small}
}

// TestSequenceClaimMetrics: per sequence, what is held, the last claim's
// size, the claims, the calls that waited for one and the values dropped
// after an idle spell; and what every sequence holds together.
func TestSequenceClaimMetrics(t *testing.T) {
	tk := newFakeTickets()
	tk.seqStats = claimStats()
	ids := newFakeIDs()
	h := startWith(t, testConfig(), ids, allTickets{tk}, ids, tk)
	m := scrape(t, h)
	for series, want := range map[string]string{
		`ticketd_sequence_held_values{sequence="orders"}`:          "48500",
		`ticketd_sequence_claim_blocks{sequence="orders"}`:         "48",
		`ticketd_sequence_claims_total{sequence="orders"}`:         "9",
		`ticketd_sequence_waits_total{sequence="orders"}`:          "3",
		`ticketd_sequence_dropped_values_total{sequence="orders"}`: "2000",
		`ticketd_sequence_held_values{sequence="small"}`:           "5",
		`ticketd_sequence_waits_total{sequence="small"}`:           "0",
		`ticketd_sequences_held_values`:                            "1500",
	} {
		if got := m[series]; got != want {
			t.Errorf("%s: got %q, want %s", series, got, want)
		}
	}
}

// TestStatusInUse: /v1/status lists the sequences in use, the most used
// first, with what is held of each and how its claims go, and the total
// held; an empty list, never null, before any.
func TestStatusInUse(t *testing.T) {
	tk := newFakeTickets()
	ids := newFakeIDs()
	h := startWith(t, testConfig(), ids, allTickets{tk}, ids, tk)
	if r := h.get(t, "/v1/status"); !strings.Contains(r.body, `"held_values":1500,"in_use":[]`) {
		t.Errorf("/v1/status with no sequence in use lacks \"held_values\":1500,\"in_use\":[]:\n%s", r.body)
	}
	tk.mu.Lock()
	tk.seqStats = claimStats()
	tk.mu.Unlock()
	r := h.get(t, "/v1/status")
	for _, want := range []string{
		`"in_use":[{"name":"orders","block":1000,"issued":120000,"held":48500,"claiming":true,"claim_blocks":48,` +
			`"demand_per_s":60123,"round_trip_ms":201.5,"claims":9,"waits":3,"dropped":2000},` +
			`{"name":"small","block":10,"issued":5,"held":5,"claiming":false,"claim_blocks":1,` +
			`"demand_per_s":0,"round_trip_ms":0,"claims":1,"waits":0,"dropped":0}]`,
	} {
		if !strings.Contains(r.body, want) {
			t.Errorf("/v1/status lacks %s:\n%s", want, r.body)
		}
	}
	tk.mu.Lock()
	limit := tk.statsLimit
	tk.mu.Unlock()
	if limit != statusInUse {
		t.Errorf("SequenceStats asked for %d, want the bound %d", limit, statusInUse)
	}
}
