package lease

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"ticketd/ticket/internal/spec"
)

// HeldWorkers counts, on every server, the worker IDs of one datacenter whose
// lease is alive (expires_at in the future, by that server's clock), among
// the 2^workerBits of the layout. Each server owns the worker IDs of its
// parity, so held[i] is out of 2^workerBits / len(Config.Servers).
//
// It is for capacity figures, off the hot path: one COUNT per server, in
// parallel, each bounded by CallTimeout. It never changes the rotation: a
// server that does not answer is reported, not taken out, and a server out
// of rotation is asked all the same (the count is what matters, not its
// tickets). held[i] is -1 for a server that did not answer; err then joins
// those servers' errors, and the other counts are still good.
func (ls *Manager) HeldWorkers(ctx context.Context, datacenter uint32, workerBits uint) ([]int, error) {
	if workerBits < MinWorkerBits || workerBits > MaxWorkerBits {
		return nil, fmt.Errorf("%w: workerBits %d outside [%d, %d]", spec.ErrInvalidArgument, workerBits, MinWorkerBits, MaxWorkerBits)
	}
	held := make([]int, len(ls.servers))
	errs := make([]error, len(ls.servers))
	var wg sync.WaitGroup
	for i, s := range ls.servers {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, ls.cfg.CallTimeout)
			defer cancel()
			var n int
			err := s.Pool().GetContext(cctx, &n,
				`SELECT COUNT(*) FROM worker_leases
				  WHERE datacenter = ? AND worker < ? AND expires_at > UTC_TIMESTAMP(3)`,
				datacenter, uint64(1)<<workerBits)
			if err != nil {
				held[i], errs[i] = -1, fmt.Errorf("%s: counting held worker IDs: %w", s.Name, err)
				return
			}
			held[i] = n
		})
	}
	wg.Wait()
	return held, errors.Join(errs...)
}
