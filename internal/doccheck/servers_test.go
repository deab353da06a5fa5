package doccheck

import (
	"context"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"ticketd/internal/mysqltest"
	"ticketd/ticket"
)

// TestDocsOnFourServers: the DBA's recipes hold for any number of servers.
// Every runnable sql block of the docs runs on four real servers (increment
// 4), each per-server recipe written for each of them (S its offset, N 4):
// the sequence made by hand, the repair statements, the accounts. Then every
// named sequence the recipes made is served by all four through ticketd's
// ticket package: values of each server's residue, none twice.
func TestDocsOnFourServers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts MariaDB: runs in make test, not under -short")
	}
	_, all := docs(t)
	ms := mysqltest.StartSet(t, 4)
	recipes := 0
	for _, d := range all {
		for _, b := range d.Blocks {
			if b.Mode == "" || b.Lang != "sql" {
				continue
			}
			if b.Mode == PerServer {
				recipes++
			}
			runSQL(t, d.Path, b, ms.Servers)
		}
	}
	if recipes == 0 {
		t.Fatal("no per-server recipe in the docs: the check reads nothing")
	}
	// name and block size of every sequence whose counter is a row.
	rows := strings.Fields(ms.Servers[0].Query(t, "SELECT c.name, s.block_size FROM tickets.counters c JOIN tickets.sequences s USING (name) ORDER BY c.name"))
	if len(rows) == 0 {
		t.Fatal("the recipes made no named sequence")
	}

	cfg := ticket.DefaultConfig()
	cfg.Servers = nil
	for _, s := range ms.Servers {
		cfg.Servers = append(cfg.Servers, ticket.ServerConfig{Addr: s.Addr()})
	}
	cfg.User, cfg.Password = ms.User, ms.Password
	cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), nil))
	p, err := ticket.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var names []string
	for k := 0; k+1 < len(rows); k += 2 {
		name := rows[k]
		block, err := strconv.ParseUint(rows[k+1], 10, 64)
		if err != nil || block == 0 || block > 100_000 {
			t.Fatalf("sequence %s: block size %q", name, rows[k+1])
		}
		names = append(names, name)
		// A block of B values stands for one ticket t = value / B, of its
		// server's residue: take a block a call until every server has
		// served one.
		seen := map[uint64]bool{}
		var residues []uint64
		dst := make([]uint64, block)
		for call := 0; len(residues) < 4 && call < 40; call++ {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			n, err := p.NextN(ctx, name, dst)
			cancel()
			if err != nil || n != len(dst) {
				t.Fatalf("sequence %s made by the docs' recipe, on four servers: NextN = %d, %v", name, n, err)
			}
			for _, v := range dst {
				if seen[v] {
					t.Fatalf("sequence %s: %d twice", name, v)
				}
				seen[v] = true
				if r := (v / block) % 4; !slices.Contains(residues, r) {
					residues = append(residues, r)
				}
			}
		}
		slices.Sort(residues)
		if !slices.Equal(residues, []uint64{0, 1, 2, 3}) {
			t.Errorf("sequence %s: tickets of residues %v mod 4 in 40 blocks, want all four servers serving it", name, residues)
		}
	}
	t.Logf("%d per-server recipes ran on four servers; sequences %v served by all four", recipes, names)
}
