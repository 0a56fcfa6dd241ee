package bench

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/bench/benchcore"
	"github.com/xds-workbench/lab/experiments/compare"
	"github.com/xds-workbench/lab/shared/publish"
)

// TestScaleReadsBenchJSON: compare reads the scale sweep from bench.json with its own
// view of the file (compare cannot import bench); every figure it takes is the one this
// package wrote.
func TestScaleReadsBenchJSON(t *testing.T) {
	out := t.TempDir()
	rep, err := Run(context.Background(), benchcore.Options{
		Clusters: []int{1, 10}, Client: benchcore.ClientSim, Modes: benchcore.DefaultModes, SotWVersions: []publish.VersionStrategy{publish.PerType},
		Caches: []publish.Cache{publish.SnapshotCache, publish.LinearCache}, Workloads: []string{benchcore.WorkloadEndpoint, benchcore.WorkloadClusterAdd},
		Repeat: 2, Out: out, Timeout: time.Minute,
	})
	require.NoError(t, err)
	s, err := compare.LoadScale(filepath.Join(out, "bench.json"))
	require.NoError(t, err)
	assert.Equal(t, benchcore.ClientSim, s.Client)
	assert.True(t, s.Simulated)
	require.Len(t, s.Points, len(rep.Configs))
	for i, c := range rep.Configs {
		p := s.Points[i]
		assert.Equal(t, [5]any{c.Workload, c.Series, c.Cache, c.Mode, c.N}, [5]any{p.Workload, p.Series, p.Cache, p.Mode, p.N})
		assert.Equal(t, c.Summary["bytes"].Median, p.Bytes)
		assert.Equal(t, c.Summary["bytes"].Min, p.BytesMin)
		assert.Equal(t, c.Summary["bytes"].Max, p.BytesMax)
		assert.Equal(t, c.Summary["resources"].Median, p.Resources)
		assert.Equal(t, c.Updates[0].ByType["CDS"].Resources, p.CDS)
		if c.Workload == benchcore.WorkloadClusterAdd && c.Mode == "sotw" {
			assert.Equal(t, c.N+1, p.CDS, "a SotW cluster add sends every cluster")
		}
	}
}
