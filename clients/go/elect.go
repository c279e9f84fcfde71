package fencegate

// Gateway.Elect: leader election on one lock, in the manner of client-go's
// LeaderElector.
//
//   - campaigns (a long-polled acquire) until it holds the lock;
//   - OnStarted(lease), then run(ctx, lease) while leading; ctx is cancelled
//     when the lease is lost or the election stopped;
//   - when run returns, or the lease is lost: the lease is released,
//     OnStopped(lease) is called (only ever after an OnStarted; lease.Reason()
//     says why), and it campaigns again;
//   - OnNewLeader(holder, token) once per epoch, from the API's long poll;
//   - it stops when ctx ends: a leader's run sees its ctx cancelled, its
//     lease is released, and Elect returns once run has returned.

import (
	"context"
	"errors"
	"sync"
	"time"
)

// A leader whose run returned quickly waits this long before campaigning again.
const minTerm = time.Second

// ElectOptions for Gateway.Elect.  All are optional.
type ElectOptions struct {
	Holder      string
	LeaseMs     int64
	OnStarted   func(l *Lease)
	OnStopped   func(l *Lease)
	OnNewLeader func(holder string, token uint64)
}

// Elect campaigns for lock until ctx ends, calling run(ctx, lease) while
// leading.  It returns nil once stopped by ctx, or run's error when run fails
// for another reason than the loss of its lease (after releasing the lease
// and calling OnStopped), or the gateway's refusal of the campaign itself.
func (g *Gateway) Elect(ctx context.Context, lock string, run func(ctx context.Context, l *Lease) error,
	opts ElectOptions) error {
	holder := opts.Holder
	if holder == "" {
		holder = defaultHolder()
	}
	notify := leaderNotifier(opts.OnNewLeader)
	var wg sync.WaitGroup
	wctx, stopWatch := context.WithCancel(ctx)
	defer func() {
		stopWatch()
		wg.Wait()
	}()
	if opts.OnNewLeader != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for info := range g.Watch(wctx, lock) {
				if info.Live {
					notify(info.Holder, info.Token)
				}
			}
		}()
	}
	for ctx.Err() == nil {
		lease, err := g.Lease(ctx, lock, LeaseOptions{Holder: holder, LeaseMs: opts.LeaseMs, WaitMs: WaitForever})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		notify(holder, lease.Token())
		began := time.Now()
		err = lead(ctx, lease, run, opts)
		if err != nil {
			return err
		}
		if term := time.Since(began); term < minTerm {
			sleepCtx(ctx, minTerm-term)
		}
	}
	return nil
}

// lead runs one term: OnStarted, run, release, OnStopped.
func lead(ctx context.Context, lease *Lease, run func(ctx context.Context, l *Lease) error,
	opts ElectOptions) error {
	rctx, cancel := context.WithCancel(lease.Context())
	stopped := make(chan struct{})
	go func() { // the election stopped: the leader's run is cancelled
		select {
		case <-ctx.Done():
			cancel()
		case <-stopped:
		}
	}()
	defer func() {
		close(stopped)
		cancel()
	}()
	if opts.OnStarted != nil {
		opts.OnStarted(lease)
	}
	var err error
	if lease.Reason() == "" {
		err = run(rctx, lease)
	}
	lost := lease.Reason() != ""
	_ = lease.Release()
	if opts.OnStopped != nil {
		opts.OnStopped(lease)
	}
	if err == nil || lost || ctx.Err() != nil || isLoss(err) {
		return nil
	}
	return err
}

func isLoss(err error) bool {
	var ll *LeaseLost
	_, fencing := AsFencingError(err)
	return fencing || errors.As(err, &ll) || errors.Is(err, context.Canceled)
}

// leaderNotifier calls fn once per epoch, from the watch or our own grant.
func leaderNotifier(fn func(holder string, token uint64)) func(holder string, token uint64) {
	var mu sync.Mutex
	var last uint64
	return func(holder string, token uint64) {
		if fn == nil || holder == "" {
			return
		}
		mu.Lock()
		if token <= last {
			mu.Unlock()
			return
		}
		last = token
		mu.Unlock()
		fn(holder, token)
	}
}
