package bench

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xds-workbench/lab/experiments/envoy"
)

// selfCPU is this process's user+system CPU time (the control plane, and the simulated
// clients when they run in-process).
func selfCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// heap collects garbage first, so the figure is what the control plane keeps, not what
// it has not yet freed.
func heap() (inuse, alloc uint64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse, ms.HeapAlloc
}

// envoyCPU reads Envoy's CPU time. /proc/PID/stat (Process.CPUTime) counts in 10 ms
// ticks, which rounds a small delta update to 0 or 10 ms; the process CPU clock
// (clock_gettime on the pid's CPUCLOCK_SCHED clock) has nanosecond resolution. The tick
// figure is always read too, as a cross-check; source says which one cpu is.
func envoyCPU(p *envoy.Process) (cpu, ticks time.Duration, source string, err error) {
	ticks, err = p.CPUTime()
	if err != nil {
		return 0, 0, "", err
	}
	if c, cerr := processClock(p.Pid()); cerr == nil {
		return c, ticks, "clock_gettime", nil
	}
	return ticks, ticks, "proc_stat", nil
}

// processClock reads another process's CPU clock: clockid = (^pid << 3) | CPUCLOCK_SCHED,
// as glibc's clock_getcpuclockid builds it. Linux allows reading any process's clock.
func processClock(pid int) (time.Duration, error) {
	id := int32(^uint32(pid)<<3) | 2
	var ts unix.Timespec
	if err := unix.ClockGettime(id, &ts); err != nil {
		return 0, fmt.Errorf("clock_gettime for pid %d: %w", pid, err)
	}
	return time.Duration(ts.Nano()), nil
}

// startCPUProfile writes a CPU profile of this process to path until stop is called
// (lab bench --cpuprofile). The forced collections the bench makes between changes
// (heap figures) are in it too, as runtime.GC; the changes' own collections are not
// told apart from them.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile %s: %w", path, err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
