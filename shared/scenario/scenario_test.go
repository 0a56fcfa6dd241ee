package scenario

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTeachingScenario(t *testing.T) {
	steps := Teaching()
	assert.Equal(t, []string{"initial", "port-change", "invalid-route", "recover", "envoy-restart", "control-plane-restart", "remove-cluster", "restore"}, Names(steps))
	seen := map[string]bool{}
	for _, s := range steps {
		assert.False(t, seen[s.Checkpoint], "checkpoint names are unique")
		seen[s.Checkpoint] = true
		assert.NotEmpty(t, s.Proves)
	}
	assert.Equal(t, "RDS", steps[2].Expect.Rejected)
	assert.Equal(t, "NC", steps[6].Expect.Flags)
}

func TestSelect(t *testing.T) {
	all := Teaching()
	got, err := Select(all, nil)
	require.NoError(t, err)
	assert.Len(t, got, len(all))
	got, err = Select(all, []string{"remove-cluster", "initial"})
	require.NoError(t, err)
	assert.Equal(t, []string{"initial", "remove-cluster"}, Names(got), "scenario order, not argument order")
	_, err = Select(all, []string{"initial", "teleport"})
	assert.ErrorContains(t, err, `unknown step "teleport"`)
	_, err = Select(all, []string{"envoy-restart"})
	assert.ErrorContains(t, err, "must publish")
}
