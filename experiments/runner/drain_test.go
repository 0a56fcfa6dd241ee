package runner

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/envoy"
	"github.com/xds-workbench/lab/shared/option"
	"github.com/xds-workbench/lab/shared/protocol"
)

// TestDrainTimeRefusedBeforeStart: a negative or fractional drain time is one line
// naming it, and nothing is created; the scenario's drain_time fills an unset one.
func TestDrainTimeRefusedBeforeStart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	for d, want := range map[time.Duration]string{
		-time.Second:           "drain time -1s: must not be negative",
		500 * time.Millisecond: "drain time 500ms: not whole seconds (Envoy's --drain-time-s takes seconds)",
	} {
		_, err := Execute(context.Background(), Options{Mode: protocol.Delta, Client: ClientSim, Out: dir, DrainTime: d})
		var oe *option.Error
		require.ErrorAs(t, err, &oe)
		assert.Equal(t, envoy.OptionDrainTime, oe.Option)
		assert.EqualError(t, err, want)
		assert.NoDirExists(t, dir, "nothing is created")
	}
}
