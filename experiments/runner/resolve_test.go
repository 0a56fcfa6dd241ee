package runner

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/controlplane"
	"github.com/xds-workbench/lab/shared/option"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/scenario"
	"github.com/xds-workbench/lab/sotw"
)

// TestResolve: unset SotW options are the cache's; Steps must be the scenario's; a
// directory that holds a run is refused. Each refusal names its option.
func TestResolve(t *testing.T) {
	t.Parallel()
	sc, err := scenario.Load("teaching")
	require.NoError(t, err)
	o := Options{Mode: protocol.SotW, Cache: publish.LinearCache, Scenario: sc, Out: t.TempDir()}
	require.NoError(t, o.Resolve())
	versions, policy := controlplane.SotWDefaults(publish.LinearCache)
	assert.Equal(t, versions, o.Versions)
	assert.Equal(t, policy, o.NackPolicy)

	o = Options{Mode: protocol.SotW, Cache: publish.SnapshotCache, NackPolicy: sotw.Hold}
	require.NoError(t, o.Resolve())
	assert.Equal(t, sotw.Hold, o.NackPolicy, "a set option stays")

	o = Options{Mode: protocol.Delta, Scenario: sc, Steps: []string{"initial", "no-such-step"}}
	var oe *option.Error
	require.True(t, errors.As(o.Resolve(), &oe))
	assert.Equal(t, OptionSteps, oe.Option)
	assert.Equal(t, "initial,no-such-step", oe.Value)

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "xds.log"), nil, 0o600))
	o = Options{Mode: protocol.Delta, Out: dir}
	assert.EqualError(t, o.Resolve(), "out "+dir+": already holds a run (xds.log) (want a new directory or one without a run)")
}

// TestCheckLoad: a rate the load generator refuses names OptionLoad with the rate.
func TestCheckLoad(t *testing.T) {
	t.Parallel()
	o := Options{}
	assert.NoError(t, o.CheckLoad(), "no load")
	o.Load.Rate, o.Load.Connections = -1, 1
	var oe *option.Error
	require.True(t, errors.As(o.CheckLoad(), &oe))
	assert.Equal(t, OptionLoad, oe.Option)
	assert.Equal(t, "-1", oe.Value)
}
