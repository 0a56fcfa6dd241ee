package loopback

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFreePortIsReservedOutsideTheEphemeralRange: FreePort's ports are bindable, distinct,
// below the range the kernel hands out as source ports, and locked against every other
// workbench process (an flock on another open file of the same port conflicts, as a
// second process's would).
func TestFreePortIsReservedOutsideTheEphemeralRange(t *testing.T) {
	lo, hi := reserveRange()
	seen := map[int]bool{}
	for range 20 {
		p, err := FreePort()
		require.NoError(t, err)
		assert.False(t, seen[p], "port %d handed out twice", p)
		seen[p] = true
		if lo < hi {
			assert.GreaterOrEqual(t, p, lo)
			assert.Less(t, p, hi, "below the ephemeral range")
			_, ok := lockPort(filepath.Join(os.TempDir(), "lab-ports"), p)
			assert.False(t, ok, "port %d is locked against other processes", p)
		}
		l, err := net.Listen("tcp", Addr(p))
		require.NoError(t, err, "port %d is free", p)
		require.NoError(t, l.Close())
	}
}

// A released port is handed out again by this process, before any new reservation, and
// stays locked against other processes meanwhile.
func TestReleasedPortIsReusedAndStaysLocked(t *testing.T) {
	p, err := FreePort()
	require.NoError(t, err)
	Release(p)
	lo, hi := reserveRange()
	if lo < hi {
		_, ok := lockPort(filepath.Join(os.TempDir(), "lab-ports"), p)
		assert.False(t, ok, "a released port %d is still locked against other processes", p)
	}
	q, err := FreePort()
	require.NoError(t, err)
	assert.Equal(t, p, q, "the released port comes back first")
	r, err := FreePort()
	require.NoError(t, err)
	assert.NotEqual(t, q, r, "a port in use is not handed out twice")
	Release(q)
	Release(r)
	Release(r) // twice: no effect
	Release(1) // never handed out: no effect
	reserved.Lock()
	free := append([]int(nil), reserved.free...)
	reserved.Unlock()
	assert.Equal(t, 1, count(free, r), "released once: %v", free)
}

// A released port that something still listens on is not handed out.
func TestReleasedPortStillBoundIsSkipped(t *testing.T) {
	p, err := FreePort()
	require.NoError(t, err)
	l, err := net.Listen("tcp", Addr(p))
	require.NoError(t, err)
	defer l.Close()
	Release(p)
	q, err := FreePort()
	require.NoError(t, err)
	assert.NotEqual(t, p, q)
	Release(q)
}

// Listen(0) gives its port back when closed, so a process that opens and closes
// listeners for a long time (a test binary under -count, make flake) holds a bounded
// number of reservations, not one per listener.
func TestListenZeroReleasesItsPort(t *testing.T) {
	reserved.Lock()
	before := len(reserved.ports)
	reserved.Unlock()
	for range 300 {
		l, err := Listen(0)
		require.NoError(t, err)
		require.NoError(t, l.Close())
	}
	reserved.Lock()
	after := len(reserved.ports)
	reserved.Unlock()
	assert.LessOrEqual(t, after-before, 2, "300 listeners, at most a couple of new reservations")
}

func count(xs []int, x int) int {
	n := 0
	for _, v := range xs {
		if v == x {
			n++
		}
	}
	return n
}
