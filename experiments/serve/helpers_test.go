package serve

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/shared/loopback"
)

// freePorts returns n distinct free loopback ports.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	seen := map[int]bool{}
	var out []int
	for len(out) < n {
		p, err := loopback.FreePort()
		require.NoError(t, err)
		t.Cleanup(func() { loopback.Release(p) }) // after serve's own cleanups
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}
