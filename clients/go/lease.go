package fencegate

// A lease: acquired, renewed in the background at a third of its length,
// and judged on the LOCAL clocks (Go's monotonic reading, and the boot-time
// clock, which counts a suspend of the machine: clock.go), never on a
// server's answer.  The lease is lost when
// its deadline passes without a confirmed renewal, whatever the network does
// (a watchdog timer fires then, and every read of the lease compares the
// clock itself), or at once when a renewal is refused.  The deadline counts
// from when the granting (or renewing) request was SENT, so it never falls
// after the gateway's own.

import (
	"context"
	"errors"
	"sync"
	"time"
)

// WaitForever as LeaseOptions.WaitMs waits until granted or ctx ends.
const WaitForever int64 = -1

// Without LeaseMs, long polls are sliced as if the lease were this long.
const defaultSliceLeaseMs = 15000

// LeaseOptions for Gateway.Lease.
type LeaseOptions struct {
	Holder  string // who holds it; host-pid by default
	LeaseMs int64  // the lease's length; the gateway's default when 0
	WaitMs  int64  // how long to wait for a held lock: 0 answers at once, WaitForever
}

// Lease is a granted lock, renewed in the background until lost or released.
// Safe for concurrent use.
type Lease struct {
	gw      *Gateway
	lock    string
	holder  string
	leaseID string
	token   uint64

	ctx    context.Context
	cancel context.CancelFunc

	mu           sync.Mutex
	leaseMs      int64
	deadline     time.Time    // monotonic: the lease may be gone from here on
	bootDeadline bootDeadline // the same instant on the boot-time clock (clock.go)
	next         time.Time    // the next renewal is due
	reason       string       // "" while held
	failure      error        // the last renewal's failure, cleared by a success
	renewing     bool
	renewals     int
	watchdog     *time.Timer
	onLost       []func(reason string)
	kick         chan struct{}

	releaseOnce sync.Once
	releaseErr  error
}

// Lease acquires lock and keeps it renewed in the background.  ctx bounds
// the acquisition only.  Past opts.WaitMs it returns a *LockHeldError
// (errors.Is(err, ErrLockHeld)).
func (g *Gateway) Lease(ctx context.Context, lock string, opts LeaseOptions) (*Lease, error) {
	holder := opts.Holder
	if holder == "" {
		holder = defaultHolder()
	}
	start := time.Now()
	forever := opts.WaitMs < 0
	total := time.Duration(opts.WaitMs) * time.Millisecond
	sliceLease := opts.LeaseMs
	if sliceLease <= 0 {
		sliceLease = defaultSliceLeaseMs
	}
	failures := 0
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		left := total - time.Since(start)
		if forever {
			left = waitSlice
		}
		if left < 0 {
			left = 0
		}
		// A grant's deadline counts from when its request was sent, so one
		// long poll lasts a third of the lease at most.
		slice := minDur(left, waitSlice, time.Duration(sliceLease)*time.Millisecond/3)
		body := map[string]interface{}{"holder": holder, "wait_ms": slice.Milliseconds()}
		if opts.LeaseMs > 0 {
			body["lease_ms"] = opts.LeaseMs
		}
		sentAt := stampNow()
		r, err := g.call(ctx, "POST", lockPath(lock, "acquire"), nil, body, slice+reqExtra)
		done := !forever && time.Since(start) >= total
		if err == nil && r.status == 200 && r.num("token") > 0 && r.str("lease_id") != "" {
			l := newLease(g, lock, holder, r, sentAt)
			if ctx.Err() != nil {
				_ = l.Release()
				return nil, ctx.Err()
			}
			if l.Remaining() < time.Duration(l.LeaseMs())*time.Millisecond*2/3 {
				// Granted late in a long poll: confirm now, so the caller
				// starts with most of a lease on our own clock.
				l.renewOnce()
			}
			if l.Reason() == "" {
				go l.renewer()
				return l, nil
			}
			l.sendRelease() // granted too late to be sure of it: give it back
			if done {
				return nil, &GatewayError{Op: "acquire " + lock,
					Err: errors.New("granted, but lost before it could be confirmed")}
			}
			continue
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err == nil && r.status == 409 {
			if done {
				return nil, &LockHeldError{Lock: lock, Holder: r.str("holder"),
					Token: uint64(r.num("token")), ExpiresInMs: r.num("expires_in_ms")}
			}
			failures = 0
			if took := time.Since(sentAt.t); took < time.Second {
				sleepCtx(ctx, minDur(time.Second-took, remainingWait(forever, total, start)))
			}
			continue
		}
		if err == nil {
			err = &GatewayError{Op: "acquire " + lock, Status: r.status, Body: r.raw}
		}
		var ge *GatewayError
		if done || !errors.As(err, &ge) || !ge.transient() {
			return nil, err
		}
		sleepCtx(ctx, minDur(backoff(failures, 250*time.Millisecond), remainingWait(forever, total, start)))
		failures++
	}
}

func remainingWait(forever bool, total time.Duration, start time.Time) time.Duration {
	if forever {
		return time.Hour
	}
	return total - time.Since(start)
}

func minDur(a time.Duration, more ...time.Duration) time.Duration {
	for _, b := range more {
		if b < a {
			a = b
		}
	}
	return a
}

func newLease(g *Gateway, lock, holder string, r *apiReply, sentAt stamp) *Lease {
	l := &Lease{gw: g, lock: lock, holder: holder, leaseID: r.str("lease_id"),
		token: uint64(r.num("token")), leaseMs: r.num("lease_ms"), kick: make(chan struct{}, 1)}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	l.mu.Lock()
	l.grantedLocked(sentAt, r)
	l.mu.Unlock()
	return l
}

// Token is the fencing token: the epoch granted.
func (l *Lease) Token() uint64 { return l.token }

// Lock is the lock's name.
func (l *Lease) Lock() string { return l.lock }

// ID is the lease's id, as the gateway granted it (its renew and release
// requests name it with the token).
func (l *Lease) ID() string { return l.leaseID }

// Holder is who holds it, as sent to the gateway.
func (l *Lease) Holder() string { return l.holder }

// LeaseMs is the lease's length as granted.
func (l *Lease) LeaseMs() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.leaseMs
}

// Renewals counts the confirmed renewals.
func (l *Lease) Renewals() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.renewals
}

// Context is cancelled when the lease is lost or released (as client-go's
// OnStartedLeading ctx): pass it to work that must stop with the lease.
func (l *Lease) Context() context.Context { return l.ctx }

// Done is closed when the lease is lost or released (as etcd's Session.Done).
func (l *Lease) Done() <-chan struct{} {
	l.checkDeadline()
	return l.ctx.Done()
}

// Reason is "" while the lease is held; then ReasonSuperseded,
// ReasonExpired, ReasonUnreachable or ReasonReleased.
func (l *Lease) Reason() string {
	l.checkDeadline()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.reason
}

// Remaining is the time left on the local clocks (0 once lost).
func (l *Lease) Remaining() time.Duration {
	l.checkDeadline()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.reason != "" {
		return 0
	}
	d := time.Until(l.deadline)
	if b, ok := l.bootDeadline.past(); ok && -b < d {
		d = -b
	}
	if d < 0 {
		d = 0
	}
	return d
}

// Deadline is the instant (monotonic) at which the lease is judged lost
// unless a renewal confirms it first.
func (l *Lease) Deadline() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deadline
}

// Check returns a *LeaseLost unless the lease is held.
func (l *Lease) Check() error {
	if r := l.Reason(); r != "" {
		return &LeaseLost{Lock: l.lock, Token: l.token, Reason: r}
	}
	return nil
}

// OnLost calls fn(reason) once, in the goroutine that notices the loss, after
// Done is closed; at once if the lease is already lost.  Keep fn short.
func (l *Lease) OnLost(fn func(reason string)) {
	l.checkDeadline()
	l.mu.Lock()
	if l.reason == "" {
		l.onLost = append(l.onLost, fn)
		l.mu.Unlock()
		return
	}
	r := l.reason
	l.mu.Unlock()
	fn(r)
}

// Release gives the lease back: it counts as lost (ReasonReleased) at once,
// so attached clients refuse writes; then one release request, bounded at
// ReleaseTimeout.  It sends nothing after a loss.  Returns nil when the
// gateway confirmed (or there was nothing to give back).  Idempotent.
func (l *Lease) Release() error {
	l.releaseOnce.Do(func() {
		if l.Reason() != "" {
			return
		}
		l.lose(ReasonReleased)
		l.releaseErr = l.sendRelease()
	})
	return l.releaseErr
}

func (l *Lease) sendRelease() error {
	r, err := l.gw.call(context.Background(), "POST", lockPath(l.lock, "release"), nil,
		map[string]interface{}{"token": l.token, "lease_id": l.leaseID}, ReleaseTimeout)
	if err != nil {
		return err
	}
	if r.status != 200 {
		return &GatewayError{Op: "release " + l.lock, Status: r.status, Body: r.raw}
	}
	return nil
}

// grantedLocked: a grant or renewal confirmed, for a request sent at sentAt.
func (l *Lease) grantedLocked(sentAt stamp, r *apiReply) {
	if ms := r.num("lease_ms"); ms > 0 {
		l.leaseMs = ms
	}
	lease := l.leaseMs
	if e := r.num("expires_in_ms"); e > 0 && e < lease {
		lease = e
	}
	d := time.Duration(lease) * time.Millisecond
	l.deadline = sentAt.t.Add(d)
	l.bootDeadline = bootDeadline{at: sentAt.boot + d, ok: sentAt.bootOK}
	l.next = sentAt.t.Add(d / 3)
	l.failure = nil
	wait := time.Until(l.deadline) + time.Millisecond
	if l.watchdog == nil {
		l.watchdog = time.AfterFunc(wait, l.checkDeadline)
	} else {
		l.watchdog.Reset(wait)
	}
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// checkDeadline: the local deadline decides, before any timer or answer.
// Lost on time with a renewal failed or unanswered: unreachable.  Noticed
// late (this process was stopped, so it could not renew), or with no
// renewal tried: expired.
func (l *Lease) checkDeadline() {
	l.mu.Lock()
	over := time.Since(l.deadline) // how far past it, on either clock
	if b, ok := l.bootDeadline.past(); ok && b > over {
		over = b // the machine was suspended: the monotonic clock missed that
	}
	if l.reason != "" || over < 0 {
		l.mu.Unlock()
		return
	}
	slack := time.Duration(l.leaseMs) * time.Millisecond / 10
	if slack < 100*time.Millisecond {
		slack = 100 * time.Millisecond
	}
	late := over > slack
	reason := ReasonExpired
	if !late && (l.failure != nil || l.renewing) {
		reason = ReasonUnreachable
	}
	l.mu.Unlock()
	l.lose(reason)
}

// refused: the fence refused a write in this lease's name (its document
// names the lease's lock and token, or the write carried them; see
// Lease.judged), its judgment on the lease: lost now, superseded (StaleFencingToken)
// or expired (FencingLeaseExpired).  The deadline is judged first, so a
// process woken from a pause past it reads expired, as its timer would say a
// moment later.
func (l *Lease) refused(err error) {
	reason := ""
	switch err.(type) {
	case *StaleFencingToken:
		reason = ReasonSuperseded
	case *FencingLeaseExpired:
		reason = ReasonExpired
	default:
		return
	}
	l.checkDeadline()
	l.lose(reason) // no-op once lost
}

func (l *Lease) lose(reason string) {
	l.mu.Lock()
	if l.reason != "" {
		l.mu.Unlock()
		return
	}
	l.reason = reason
	if l.watchdog != nil {
		l.watchdog.Stop()
	}
	fns := l.onLost
	l.onLost = nil
	l.mu.Unlock()
	l.cancel()
	for _, fn := range fns {
		fn(reason)
	}
}

// renewer renews at a third of the lease until the lease is lost.
func (l *Lease) renewer() {
	for {
		l.checkDeadline()
		l.mu.Lock()
		if l.reason != "" {
			l.mu.Unlock()
			return
		}
		wait := time.Until(l.next)
		l.mu.Unlock()
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-l.kick:
				t.Stop()
				continue
			case <-l.ctx.Done():
				t.Stop()
				return
			}
		}
		l.renewOnce()
	}
}

// renewOnce sends one renewal and judges its answer.
func (l *Lease) renewOnce() {
	l.checkDeadline()
	l.mu.Lock()
	if l.reason != "" {
		l.mu.Unlock()
		return
	}
	l.renewing = true
	sentAt := stampNow()
	// Never wait for an answer past the deadline: the lease is judged then.
	timeout := minDur(reqExtra, l.deadline.Sub(sentAt.t))
	l.mu.Unlock()
	r, err := l.gw.call(l.ctx, "POST", lockPath(l.lock, "renew"), nil,
		map[string]interface{}{"token": l.token, "lease_id": l.leaseID}, timeout)
	l.checkDeadline() // an answer after the deadline revives nothing
	l.mu.Lock()
	l.renewing = false
	if l.reason != "" {
		l.mu.Unlock()
		return
	}
	if err == nil && r.status == 200 {
		l.renewals++
		l.grantedLocked(sentAt, r)
		l.mu.Unlock()
		return
	}
	if err == nil {
		if reason := refusalReason(r, l.token); reason != "" {
			l.mu.Unlock()
			l.lose(reason)
			return
		}
		err = &GatewayError{Op: "renew " + l.lock, Status: r.status, Body: r.raw}
	}
	// May succeed if tried again: soon, never past the deadline.
	l.failure = err
	retry := minDur(time.Second, time.Duration(l.leaseMs)*time.Millisecond/10)
	if retry < 100*time.Millisecond {
		retry = 100 * time.Millisecond
	}
	l.next = time.Now().Add(retry)
	if l.next.After(l.deadline) {
		l.next = l.deadline
	}
	l.mu.Unlock()
}

// refusalReason is the loss reason for a renewal the gateway refused, or ""
// when the answer is no judgment on the lease (unavailable, auth, ...).
func refusalReason(r *apiReply, token uint64) string {
	switch {
	case r.status == 409 && r.str("error") == "superseded":
		if t := r.num("token"); t > 0 && uint64(t) > token {
			return ReasonSuperseded
		}
		return ReasonExpired
	case r.status == 404 && r.str("error") == "not_found", r.status == 403 && r.str("error") == "denied":
		return ReasonExpired // no such epoch, or not ours: the gateway holds no lease of ours
	}
	return ""
}
