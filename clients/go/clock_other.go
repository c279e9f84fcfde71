//go:build !linux

package fencegate

import "time"

// bootClock: no boot-time clock here; the monotonic clock alone decides.
func bootClock() (time.Duration, bool) { return 0, false }
