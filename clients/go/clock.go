package worker

// The clock the client times with (Go's monotonic reading of time.Now), its resolution and
// read cost as the `clock` request asks, and the process CPU time for samples' cpu_ns.

import (
	"syscall"
	"time"
	"unsafe"
)

// measureClock returns the smallest non-zero difference between consecutive clock reads and
// the mean cost of one read in ns, from about 10 ms of reads.
func measureClock() (resolution, cost float64) {
	base := time.Now()
	deadline := 10 * time.Millisecond
	var reads int64
	minDiff := time.Duration(1<<62 - 1)
	prev := time.Since(base)
	for {
		// 1000 reads between checks of the deadline, each compared with the one before.
		for i := 0; i < 1000; i++ {
			now := time.Since(base)
			if d := now - prev; d > 0 && d < minDiff {
				minDiff = d
			}
			prev = now
		}
		reads += 1000
		if prev >= deadline {
			break
		}
	}
	return float64(minDiff), float64(prev) / float64(reads)
}

// clockProcessCPUTimeID is CLOCK_PROCESS_CPUTIME_ID from <time.h>.
const clockProcessCPUTimeID = 2

// processCPU returns the process's CPU time in ns (user + system, all threads).
func processCPU() (int64, bool) {
	var ts syscall.Timespec
	// The syscall package has no clock_gettime wrapper; this is the raw call with a pointer
	// to a Timespec that lives on this frame for its duration.
	_, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockProcessCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0)
	if errno != 0 {
		return 0, false
	}
	return ts.Nano(), true
}
