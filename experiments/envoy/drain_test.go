package envoy

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/shared/option"
)

// TestDrainTimeArgs: whole seconds become --drain-time-s, 0 leaves Envoy's own, and a
// negative or fractional drain time is refused with one line naming it.
func TestDrainTimeArgs(t *testing.T) {
	args, err := DrainTimeArgs(2 * time.Second)
	require.NoError(t, err)
	assert.Equal(t, []string{"--drain-time-s", "2"}, args)
	args, err = DrainTimeArgs(0)
	require.NoError(t, err)
	assert.Empty(t, args, "0 leaves Envoy's own 600 s")
	for d, want := range map[time.Duration]string{
		-time.Second:            "drain time -1s: must not be negative",
		1500 * time.Millisecond: "drain time 1.5s: not whole seconds (Envoy's --drain-time-s takes seconds)",
	} {
		_, err := DrainTimeArgs(d)
		require.Error(t, err)
		assert.Equal(t, want, err.Error())
		var oe *option.Error
		assert.True(t, errors.As(err, &oe))
	}
}
