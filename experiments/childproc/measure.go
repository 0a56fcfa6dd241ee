package childproc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// clockTicks is USER_HZ on Linux: /proc/PID/stat counts CPU time in these ticks.
const clockTicks = 100

// SelfCPU is this process's user+system CPU time (the control plane, and the simulated
// clients when they run in-process).
func SelfCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// CPUClock reads another process's CPU clock, with nanosecond resolution (StatCPU's
// ticks round a small delta to 0 or 10 ms): clockid = (^pid << 3) | CPUCLOCK_SCHED, as
// glibc's clock_getcpuclockid builds it. Linux allows reading any process's clock.
func CPUClock(pid int) (time.Duration, error) {
	id := int32(^uint32(pid)<<3) | 2
	var ts unix.Timespec
	if err := unix.ClockGettime(id, &ts); err != nil {
		return 0, fmt.Errorf("clock_gettime for pid %d: %w", pid, err)
	}
	return time.Duration(ts.Nano()), nil
}

// StatCPU is pid's user+system CPU time so far, from /proc/PID/stat (10 ms ticks).
func StatCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("cpu time: %w", err)
	}
	return parseStatCPU(string(b))
}

// parseStatCPU reads utime and stime (fields 14 and 15). The command name in field 2
// may contain spaces and parentheses, so fields are counted after the last ')'.
func parseStatCPU(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("cpu time: malformed /proc stat")
	}
	f := strings.Fields(stat[i+1:])
	// f[0] is field 3 (state), so field n is f[n-3].
	if len(f) < 13 {
		return 0, fmt.Errorf("cpu time: /proc stat has %d fields after the name", len(f))
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("cpu time: %w", err)
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// RSS is pid's resident set size in bytes, from VmRSS in /proc/PID/status.
func RSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("rss: %w", err)
	}
	return parseVmRSS(string(b))
}

func parseVmRSS(status string) (int64, error) {
	for _, line := range strings.Split(status, "\n") {
		rest, ok := strings.CutPrefix(line, "VmRSS:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("rss: unexpected VmRSS line %q", line)
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("rss: %w", err)
		}
		return kb * 1024, nil
	}
	return 0, fmt.Errorf("rss: no VmRSS line")
}

// CPUTime is the child's user+system CPU time so far (StatCPU); an exited child has none.
func (p *Process) CPUTime() (time.Duration, error) {
	if p.WaitExit(context.Background(), 0) {
		return 0, fmt.Errorf("cpu time: pid %d has exited", p.Pid())
	}
	return StatCPU(p.Pid())
}

// RSS is the child's resident set size in bytes; an exited child has none.
func (p *Process) RSS() (int64, error) {
	if p.WaitExit(context.Background(), 0) {
		return 0, fmt.Errorf("rss: pid %d has exited", p.Pid())
	}
	return RSS(p.Pid())
}
