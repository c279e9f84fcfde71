package fencegate

// The lease clock.  Go's monotonic clock (the reading a time.Time carries)
// is Linux's CLOCK_MONOTONIC, which stops while the machine is suspended: a
// worker resumed from a host suspend would count a lease that ran out
// meanwhile as live.  So every deadline is also kept on the boot-time clock
// (CLOCK_BOOTTIME, which counts a suspend; clock_linux.go), and a lease is
// lost when either clock says its deadline has passed.

import "time"

// stamp is one instant on both clocks.
type stamp struct {
	t      time.Time     // with its monotonic reading
	boot   time.Duration // the boot-time clock, when bootOK
	bootOK bool
}

// bootNow reads the boot-time clock (ok false where there is none); a
// variable so that tests can play a suspend.
var bootNow = bootClock

func stampNow() stamp {
	b, ok := bootNow()
	return stamp{t: time.Now(), boot: b, bootOK: ok}
}

// bootDeadline is a deadline on the boot-time clock (ok false: none kept).
type bootDeadline struct {
	at time.Duration
	ok bool
}

// past is how far past the deadline the boot-time clock is now (negative:
// before it; ok false when it cannot say).
func (d bootDeadline) past() (time.Duration, bool) {
	if !d.ok {
		return 0, false
	}
	now, ok := bootNow()
	if !ok {
		return 0, false
	}
	return now - d.at, true
}
