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
