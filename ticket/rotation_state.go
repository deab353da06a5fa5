package ticket

// ServerUp reports whether server i (its index in Config.Servers) is in
// rotation: false from its first failed call until the prober's check passes
// again. It reads one atomic and never waits, so a lease keeper may ask it on
// every renewal to see a switch coming. An index outside the pair is false.
func (p *Pair) ServerUp(i int) bool {
	if i < 0 || i >= len(p.servers) {
		return false
	}
	return p.servers[i].up.Load()
}
