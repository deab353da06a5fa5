package main

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ticketd/peers"
	"ticketd/snowflake"
)

// TestServePeerRoutes: -peer-routes turns the peers' routes on with the
// file's routes; a file that does not parse is a usage error naming it.
func TestServePeerRoutes(t *testing.T) {
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "routes"), filepath.Join(dir, "bad")
	os.WriteFile(good, []byte("leaf-workers 0-255\nleaf leaf-segment-test orders\n"), 0o600)
	os.WriteFile(bad, []byte("leaf a BAD\n"), 0o600)
	build := func(args ...string) (serveConfig, error) {
		o, err := parseServe(args, io.Discard, env(map[string]string{"TICKETD_PASSWORD": "pw"}))
		if err != nil {
			return serveConfig{}, err
		}
		return buildServe(o, io.Discard)
	}
	c, err := build()
	if err != nil || c.frontend.Peers != nil {
		t.Fatalf("without -peer-routes: routes %v, %v; want off", c.frontend.Peers, err)
	}
	c, err = build("-peer-routes", good)
	if err != nil || c.frontend.Peers == nil {
		t.Fatalf("-peer-routes: %v", err)
	}
	if rt, _ := c.frontend.Peers.Load().Listed(peers.Leaf, "leaf-segment-test"); rt.Sequence != "orders" {
		t.Fatalf("route %+v", rt)
	}
	_, err = build("-peer-routes", bad)
	if _, ok := err.(usageError); !ok || !strings.Contains(err.Error(), "-peer-routes") {
		t.Fatalf("a bad routes file: %v, want a usage error naming -peer-routes", err)
	}
}

// TestCheckPeerRoutes: routes that declare Leaf's workers are refused when
// this ticketd's IDs could look like one of them (the layout and datacenter
// fix bits 12 to 21 otherwise), accepted when none of them can.
func TestCheckPeerRoutes(t *testing.T) {
	tests := []struct {
		workers, layout string
		dc              uint32
		ok              bool
	}{
		{"0-255", "41/2/9/11", 1, true}, // what -datacenter 1 gives a new deployment
		{"0-255", "41/2/9/11", 0, false},
		{"0-255", "flat", 0, false},
		{"none", "flat", 0, true},
		{"", "flat", 0, true}, // not declared: the snowflake route is off
		{"0-31", "twitter", 1, true},
		{"0-32", "twitter", 1, false},
	}
	for _, tt := range tests {
		file := "leaf a b\n"
		if tt.workers != "" {
			file = "leaf-workers " + tt.workers + "\n" + file
		}
		r, err := peers.Parse([]byte(file))
		if err != nil {
			t.Fatal(err)
		}
		l, _ := snowflake.ParseLayout(tt.layout)
		err = checkPeerRoutes(l, tt.dc)(r)
		if (err == nil) != tt.ok {
			t.Errorf("workers %q, layout %s, datacenter %d: %v, want ok %v", tt.workers, tt.layout, tt.dc, err, tt.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "docs/migrating.md") {
			t.Errorf("the refusal says not where to look: %v", err)
		}
	}
}

// TestReloadPeerRoutes: SIGHUP reads the routes file again, and keeps the
// routes in force when the new file does not parse or declares Leaf
// workers this ticketd's IDs could look like.
func TestReloadPeerRoutes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "routes")
	os.WriteFile(path, []byte("leaf-workers 0-255\nleaf k first\n"), 0o600)
	st, err := peers.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	var c serveConfig
	c.frontend.Peers = st
	c.layout, _ = snowflake.ParseLayout("41/2/9/11")
	c.datacenter = 1
	var logs strings.Builder
	log := slog.New(slog.NewTextHandler(&logs, nil))
	route := func() string {
		rt, _ := st.Load().Listed(peers.Leaf, "k")
		return rt.Sequence
	}
	for _, tt := range []struct{ file, want, log string }{
		{"leaf-workers 0-511\nleaf k clash\n", "first", "routes file NOT reloaded"}, // 256-511 are this ticketd's
		{"leaf k BAD\n", "first", "routes file NOT reloaded"},
		{"leaf-workers 0-255\nleaf k second\n", "second", "routes file reloaded"},
	} {
		logs.Reset()
		os.WriteFile(path, []byte(tt.file), 0o600)
		reloadPeerRoutes(log, c)
		if route() != tt.want || !strings.Contains(logs.String(), tt.log) {
			t.Errorf("reload of %q: route %s, log %q; want %s and %q", tt.file, route(), logs.String(), tt.want, tt.log)
		}
	}
}
