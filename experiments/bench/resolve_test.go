package bench

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/resources"
)

// TestResolveDefaultsThatDependOnOtherOptions: grpc-go clients default to SotW and the
// endpoint workload, the on-demand axis to delta; chosen modes or workloads stay.
func TestResolveDefaultsThatDependOnOtherOptions(t *testing.T) {
	t.Parallel()
	n := Names{Modes: []string{"sotw", "delta"}, SotWVersions: []string{"per-type"}, Caches: []string{"linear"}}
	o := Options{Client: ClientEnvoy, Workloads: DefaultWorkloads}.Resolve(n, false, false)
	assert.Equal(t, []protocol.Mode{protocol.SotW, protocol.Delta}, o.Modes)
	assert.Equal(t, []publish.VersionStrategy{publish.PerType}, o.SotWVersions)
	assert.Equal(t, []publish.Cache{publish.LinearCache}, o.Caches)

	g := Options{Client: ClientGRPC, Workloads: []string{WorkloadRoute}}
	assert.Equal(t, []protocol.Mode{protocol.SotW}, g.Resolve(n, false, false).Modes)
	assert.Equal(t, []string{WorkloadEndpoint}, g.Resolve(n, false, false).Workloads)
	assert.Equal(t, []protocol.Mode{protocol.SotW, protocol.Delta}, g.Resolve(n, true, true).Modes, "chosen: Validate refuses them")
	assert.Equal(t, []string{WorkloadRoute}, g.Resolve(n, true, true).Workloads)

	n.OnDemand = []string{"vhds"}
	od := Options{Client: ClientEnvoy}.Resolve(n, false, false)
	assert.Equal(t, []protocol.Mode{protocol.Delta}, od.Modes)
	assert.Equal(t, []resources.OnDemand{{VirtualHosts: true}}, od.OnDemand)
}

// TestCheckNames: each list item's reader says what is wrong without the item.
func TestCheckNames(t *testing.T) {
	t.Parallel()
	assert.NoError(t, CheckThrough(ThroughTap))
	assert.EqualError(t, CheckThrough("proxy"), "unknown way (want direct or tap)")
	assert.NoError(t, CheckWorkload(WorkloadRoute))
	assert.ErrorContains(t, CheckWorkload("routes"), "unknown workload (want ")
	assert.NoError(t, CheckSotWVersion("per-type"))
	assert.EqualError(t, CheckSotWVersion(""), "empty (want uniform or per-type)")
	assert.EqualError(t, CheckSotWVersion("typed"), "unknown version strategy (want uniform or per-type)")
}
