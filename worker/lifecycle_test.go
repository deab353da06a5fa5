package worker

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"ticketd/internal/leaktest"
	"ticketd/internal/mysqltest"
	"ticketd/ticket"
)

// signallingLeaser is a real ticket.Pair that says when a renewal is sent
// and when one has succeeded, so a test knows what is in flight without
// sleeping for it.
type signallingLeaser struct {
	*ticket.Pair
	renewing, renewed chan struct{}
}

func (l signallingLeaser) RenewWorker(ctx context.Context, lease ticket.Lease, until int64, ttl time.Duration) (ticket.Lease, error) {
	signal(l.renewing)
	got, err := l.Pair.RenewWorker(ctx, lease, until, ttl)
	if err == nil {
		signal(l.renewed)
	}
	return got, err
}

// signal reports an event without ever blocking the caller.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// TestCloseFrozenServer: the server holding the keeper's lease is frozen
// (SIGSTOP) while a renewal is in flight. Close with a short context returns
// within it, although the renewal alone may take the whole CallTimeout (8 s)
// and the release another: the renewal is cancelled, the generator stops at
// once, and no goroutine of the keeper is left.
func TestCloseFrozenServer(t *testing.T) {
	mp := mysqltest.StartPair(t)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	const callTimeout = 8 * time.Second
	pair, err := ticket.Open(context.Background(), ticket.Config{
		Servers:  []ticket.ServerConfig{{Addr: mp.Servers[0].Addr()}, {Addr: mp.Servers[1].Addr()}},
		User:     mp.User,
		Password: mp.Password, CallTimeout: callTimeout, Logger: quiet,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pair.Close() })
	leaser := signallingLeaser{pair, make(chan struct{}, 1), make(chan struct{}, 1)}
	k, err := New(Config{
		TTL: 10 * time.Second, RenewEvery: 2 * time.Second, Reserve: time.Minute,
		SwitchHeadroom: 30 * time.Second, LeaseOpTimeout: callTimeout, Logger: quiet,
	}, leaser)
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Acquire(context.Background(), -1); err != nil {
		t.Fatal(err)
	}
	owner := mp.Servers[k.Status().Server]
	k.Run()
	select { // the loop runs: a renewal succeeds against the live server
	case <-leaser.renewed:
	case <-time.After(10 * time.Second):
		t.Fatal("no renewal within 10 s")
	}
	// Between that renewal's end and the next one's start (a RenewEvery of
	// 2 s apart), freeze the server; then wait for a renewal sent to it.
	select {
	case <-leaser.renewing:
	default:
	}
	owner.Freeze(t)
	defer owner.Resume(t)
	select {
	case <-leaser.renewing:
	case <-time.After(10 * time.Second):
		t.Fatal("no renewal within 10 s of the freeze")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	begin := time.Now()
	err = k.Close(ctx)
	took := time.Since(begin)
	t.Logf("Close with a frozen lease server: %v after %v", err, took)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Close = %v, want context.DeadlineExceeded (the release cannot reach a frozen server)", err)
	}
	// Generous for a loaded machine, and still far below the 8 s a renewal
	// or a release on the frozen server would hold a Close that ignored ctx.
	if took > 4*time.Second {
		t.Errorf("Close took %v with a 300ms context, want it to return when the context ends", took)
	}
	if _, err := k.Next(); !errors.Is(err, ErrNoWorker) {
		t.Errorf("Next after Close = %v, want ErrNoWorker", err)
	}
	if err := leaktest.Wait(5*time.Second, "ticketd/worker.(*Keeper)"); err != nil {
		t.Fatal(err)
	}
}
