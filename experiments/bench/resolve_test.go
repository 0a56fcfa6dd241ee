package bench

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/xds-workbench/lab/experiments/bench/benchcore"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/resources"
)

// TestResolveDefaultsThatDependOnOtherOptions: grpc-go clients default to SotW and the
// endpoint workload, the on-demand axis to delta; chosen modes or workloads stay.
func TestResolveDefaultsThatDependOnOtherOptions(t *testing.T) {
	t.Parallel()
	n := benchcore.Names{Modes: []string{"sotw", "delta"}, SotWVersions: []string{"per-type"}, Caches: []string{"linear"}}
	o := benchcore.Options{Client: benchcore.ClientEnvoy, Workloads: benchcore.DefaultWorkloads}.Resolve(n, false, false)
	assert.Equal(t, []protocol.Mode{protocol.SotW, protocol.Delta}, o.Modes)
	assert.Equal(t, []publish.VersionStrategy{publish.PerType}, o.SotWVersions)
	assert.Equal(t, []publish.Cache{publish.LinearCache}, o.Caches)

	g := benchcore.Options{Client: benchcore.ClientGRPC, Workloads: []string{benchcore.WorkloadRoute}}
	assert.Equal(t, []protocol.Mode{protocol.SotW}, g.Resolve(n, false, false).Modes)
	assert.Equal(t, []string{benchcore.WorkloadEndpoint}, g.Resolve(n, false, false).Workloads)
	assert.Equal(t, []protocol.Mode{protocol.SotW, protocol.Delta}, g.Resolve(n, true, true).Modes, "chosen: Validate refuses them")
	assert.Equal(t, []string{benchcore.WorkloadRoute}, g.Resolve(n, true, true).Workloads)

	n.OnDemand = []string{"vhds"}
	od := benchcore.Options{Client: benchcore.ClientEnvoy}.Resolve(n, false, false)
	assert.Equal(t, []protocol.Mode{protocol.Delta}, od.Modes)
	assert.Equal(t, []resources.OnDemand{{VirtualHosts: true}}, od.OnDemand)
}

// TestCheckNames: each list item's reader says what is wrong without the item.
func TestCheckNames(t *testing.T) {
	t.Parallel()
	assert.NoError(t, benchcore.CheckThrough(benchcore.ThroughTap))
	assert.EqualError(t, benchcore.CheckThrough("proxy"), "unknown way (want direct or tap)")
	assert.NoError(t, benchcore.CheckWorkload(benchcore.WorkloadRoute))
	assert.ErrorContains(t, benchcore.CheckWorkload("routes"), "unknown workload (want ")
	assert.NoError(t, benchcore.CheckSotWVersion("per-type"))
	assert.EqualError(t, benchcore.CheckSotWVersion(""), "empty (want uniform or per-type)")
	assert.EqualError(t, benchcore.CheckSotWVersion("typed"), "unknown version strategy (want uniform or per-type)")
}
