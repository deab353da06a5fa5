package main

import (
	"fmt"
	"log/slog"

	"ticketd/peers"
	"ticketd/snowflake"
)

// Leaf's and tinyid's routes (-peer-routes): the routes file, opened at
// start; checked once the deployment's layout is settled; read again on
// SIGHUP (docs/migrating.md).

// peerRoutes opens -peer-routes into the API's config: a file that does
// not parse is a usage error.
func (c *serveConfig) peerRoutes(o serveOptions) error {
	if o.peerRoutes == "" {
		return nil
	}
	st, err := peers.Open(o.peerRoutes, nil)
	if err != nil {
		return usagef("-peer-routes: %v", err)
	}
	c.frontend.Peers = st
	return nil
}

// checkPeerRoutes refuses routes that declare Leaf snowflake workers the IDs
// of this ticketd could equal: bits 12 to 21 of an ID are Leaf's worker ID,
// and the layout and datacenter fix some of them (peers.LeafWorkers.Overlap).
func checkPeerRoutes(l snowflake.Layout, datacenter uint32) func(*peers.Routes) error {
	return func(r *peers.Routes) error {
		w, declared := r.LeafWorkers()
		if !declared {
			return nil
		}
		if clash := w.Overlap(l, datacenter); len(clash) > 0 {
			return fmt.Errorf("refusing Leaf's routes: this ticketd's IDs (layout %s, datacenter %d) read as Leaf's workers %s, and Leaf holds %d of them (%d first; -peer-routes says %s): "+
				"give it a datacenter whose IDs read as none of Leaf's (docs/migrating.md, \"Leaf's snowflake IDs\")",
				l, datacenter, peers.LeafRange(l, datacenter), len(clash), clash[0], w)
		}
		return nil
	}
}

// reloadPeerRoutes is what SIGHUP does to the routes.
func reloadPeerRoutes(log *slog.Logger, c serveConfig) {
	st := c.frontend.Peers
	if st == nil {
		return
	}
	r, err := st.Reload(checkPeerRoutes(c.layout, c.datacenter))
	if err != nil {
		log.Error("routes file NOT reloaded: the previous routes stay in force", "err", err)
		return
	}
	w, declared := r.LeafWorkers()
	log.Info("routes file reloaded (-peer-routes)", "routes", r.Len(), "leaf_workers_declared", declared, "leaf_workers", w.String(), "file", st.Path())
}
