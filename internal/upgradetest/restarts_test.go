package upgradetest

import (
	"fmt"
	"time"
)

// restarts replaces each host's ticketd by the same release, n times in
// turn, under the load, with nothing else going on: the stops of a release
// on the settings it documented, behind one of the HAProxy configurations.
// Release 1 has no drain delay: at SIGTERM it closes its idle keep-alive
// connections at once, and a request HAProxy has just sent on one gets no
// answer. Both configurations then send it again: each carries the
// retry-on line (empty-response) docs/upgrading.md tells an operator to
// add while release 1 runs; without it, 1 to 5 requests failed per ten
// restarts at 1,600 requests/s.
func (s *scenario) restarts(n int) []*phase {
	s.deploy(fmt.Sprintf("release %d, nothing stopped", s.old.Number))
	s.hold(s.tm.hold)
	for i := range n {
		h := s.hosts[i%len(s.hosts)]
		s.begin(fmt.Sprintf("restart %d: %s", i+1, h.name))
		s.replace(h, s.old.Binary, s.old.Number)
		s.hold(1500 * time.Millisecond)
	}
	return s.end()
}
