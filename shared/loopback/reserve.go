package loopback

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// FreePort returns a loopback port that is free now and reserved for this process until
// it exits. It is for ports that are bound later, by another process or more than once:
// Envoy's listener (Envoy binds it), and servers the workbench stops and starts again on
// the same port (the control plane, the inventory backends).
//
// A port the kernel picks (bind to port 0) comes from the ephemeral range, which the
// kernel also hands out as the source port of every outgoing connection, and nothing
// stops another process from picking the same port between the probe and the real bind.
// On a busy machine both happen (two test suites at once made Envoy NACK its listener
// with "Address already in use"). So FreePort picks below the ephemeral range, and takes
// an flock on a per-port file that other workbench processes respect; the lock goes
// with the process.
func FreePort() (int, error) {
	reserved.Lock()
	defer reserved.Unlock()
	// A port this process reserved and released is reused first (Release), unless
	// something still listens on it.
	for i, port := range reserved.free {
		if l, err := net.Listen("tcp", Addr(port)); err == nil {
			_ = l.Close()
			reserved.free = slices.Delete(reserved.free, i, i+1)
			reserved.inUse[port] = true
			return port, nil
		}
	}
	lo, hi := reserveRange()
	if lo >= hi {
		return kernelPort()
	}
	dir := filepath.Join(os.TempDir(), "lab-ports")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return kernelPort()
	}
	n := hi - lo
	start := rand.IntN(n)
	for i := 0; i < n && i < 2000; i++ {
		port := lo + (start+i)%n
		if _, mine := reserved.ports[port]; mine {
			continue
		}
		f, ok := lockPort(dir, port)
		if !ok {
			continue
		}
		l, err := net.Listen("tcp", Addr(port))
		if err != nil {
			_ = f.Close() // in use by something that does not take our locks
			continue
		}
		_ = l.Close()
		reserved.ports[port] = f
		reserved.inUse[port] = true
		return port, nil
	}
	return 0, fmt.Errorf("find a free port: none free in %d-%d", lo, hi-1)
}

// Release gives back a port FreePort handed out, once its user is done with it: the
// server on it stopped and the Envoy that bound or dialled it is gone. The lock stays
// with the process, so no other workbench process takes the port; FreePort hands it out
// again in this process before it reserves a new one. Without it a long-lived process (a
// test binary under -count, a long bench) kept every port it was ever given: the 10,000
// of the range ran out under make flake. Releasing a port not handed out does nothing.
func Release(port int) {
	reserved.Lock()
	defer reserved.Unlock()
	if !reserved.inUse[port] {
		return
	}
	delete(reserved.inUse, port)
	reserved.free = append(reserved.free, port)
}

var reserved = struct {
	sync.Mutex
	ports map[int]*os.File // held locks, kept open for the life of the process
	inUse map[int]bool     // handed out and not released
	free  []int            // released, held, to hand out again
}{ports: map[int]*os.File{}, inUse: map[int]bool{}}

// lockPort takes the reservation of port, or reports that another process holds it.
func lockPort(dir string, port int) (*os.File, bool) {
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, false
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return nil, false
	}
	return f, true
}

// reserveRange is where FreePort picks: the 10,000 ports below the kernel's ephemeral
// range (net.ipv4.ip_local_port_range), and never below 10000.
func reserveRange() (lo, hi int) {
	hi = 32768 // Linux's default start of the ephemeral range
	if f, err := os.Open("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		defer f.Close()
		if fields := strings.Fields(readLine(f)); len(fields) == 2 {
			if v, err := strconv.Atoi(fields[0]); err == nil {
				hi = v
			}
		}
	}
	return max(10000, hi-10000), hi
}

func readLine(f *os.File) string {
	s := bufio.NewScanner(f)
	s.Scan()
	return s.Text()
}

// kernelPort is the fallback when no range below the ephemeral one exists.
func kernelPort() (int, error) {
	l, err := net.Listen("tcp", Addr(0))
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
