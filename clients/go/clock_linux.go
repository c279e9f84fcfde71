package fencegate

import (
	"syscall"
	"time"
	"unsafe"
)

const clockBoottime = 7 // CLOCK_BOOTTIME, <linux/time.h>

// bootClock reads CLOCK_BOOTTIME (a system call: Go's vDSO path serves
// CLOCK_MONOTONIC and CLOCK_REALTIME only; about a microsecond, once per
// lease check).
func bootClock() (time.Duration, bool) {
	var ts syscall.Timespec
	_, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockBoottime, uintptr(unsafe.Pointer(&ts)), 0)
	if e != 0 {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
