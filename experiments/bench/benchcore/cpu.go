package benchcore

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/xds-workbench/lab/experiments/childproc"
	"github.com/xds-workbench/lab/experiments/envoy"
)

// Heap is the heap in use and allocated. With collect it collects garbage first, so the
// figure is what the control plane keeps (the initial state's); without, it is the heap
// as it stands. The bench does not collect between changes: a forced collection of a
// 100 MB heap before each change left that change to run in cold caches, a cost of the
// meter's that grew with N (docs/performance.md, "The floor on a quiet machine").
func Heap(collect bool) (inuse, alloc uint64) {
	if collect {
		runtime.GC()
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse, ms.HeapAlloc
}

// EnvoyCPU reads Envoy's CPU time. /proc/PID/stat (Process.CPUTime) counts in 10 ms
// ticks, which rounds a small delta update to 0 or 10 ms; the process CPU clock
// (clock_gettime on the pid's CPUCLOCK_SCHED clock) has nanosecond resolution. The tick
// figure is always read too, as a cross-check; source says which one cpu is.
func EnvoyCPU(p *envoy.Process) (cpu, ticks time.Duration, source string, err error) {
	ticks, err = p.CPUTime()
	if err != nil {
		return 0, 0, "", err
	}
	if c, cerr := childproc.CPUClock(p.Pid()); cerr == nil {
		return c, ticks, "clock_gettime", nil
	}
	return ticks, ticks, "proc_stat", nil
}

// StartCPUProfile writes a CPU profile of this process to path until stop is called
// (lab bench --cpuprofile). The changes' own collections are in it.
func StartCPUProfile(path string) (stop func(), err error) {
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
