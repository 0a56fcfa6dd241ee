package bench

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/bench/benchcore"
	"github.com/xds-workbench/lab/experiments/envoy/envoytest"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/resources"
)

// TestOnDemandSweepEnvoy: the on-demand axis against real Envoy at small N. Wildcard
// pushes every service up front; VHDS with on-demand CDS pushes no VirtualHost and no
// Cluster, each cold request fetches exactly its VirtualHost, Cluster and assignment and
// is answered 200 by its backend (fetch checks the backend), warm requests fetch
// nothing, and a service add sends this Envoy nothing unasked and at most 3 resources
// when it asks. No timings are asserted.
func TestOnDemandSweepEnvoy(t *testing.T) {
	envoytest.Require(t)
	const n = 20
	wildcard, vhds, both := resources.OnDemand{}, resources.OnDemand{VirtualHosts: true}, resources.OnDemand{VirtualHosts: true, Clusters: true}
	dir := t.TempDir()
	rep, err := Run(context.Background(), benchcore.Options{
		Clusters: []int{n}, Client: benchcore.ClientEnvoy, Modes: []protocol.Mode{protocol.Delta}, Repeat: 2, ColdHosts: 12,
		OnDemand: []resources.OnDemand{wildcard, vhds, both}, Out: dir,
	})
	require.NoError(t, err)
	require.Len(t, rep.OnDemand, 3)
	assert.Empty(t, rep.Configs, "the on-demand sequence replaces the workload loop")
	for _, c := range rep.OnDemand {
		require.Empty(t, c.Error)
		assert.Equal(t, 12, c.Cold.Requests, c.Shape)
		assert.Equal(t, 12, c.Warm.Requests, c.Shape)
		assert.Zero(t, c.WarmSent.Resources, "%s: a warm request fetches nothing", c.Shape)
		require.Len(t, c.Changes, 2, c.Shape)
		for i, ch := range c.Changes {
			require.NotNil(t, ch.Answer, c.Shape)
			assert.Equal(t, []string{"endpoint-b", "endpoint-a"}[i%2], ch.Answer.Backend, c.Shape)
			assert.Equal(t, map[string]int{"EDS": 1}, ch.Sent.ByType, "%s: a one-service change is its assignment", c.Shape)
		}
		assert.Equal(t, n, c.Add.Service)
		assert.Equal(t, "endpoint-b", c.Add.Fetch.Answer.Backend, c.Shape)
		assert.FileExists(t, filepath.Join(dir, c.Log))
		assert.Positive(t, c.RSSInitial)
	}
	w, v, b := rep.OnDemand[0], rep.OnDemand[1], rep.OnDemand[2]
	assert.Equal(t, map[string]int{"LDS": 1, "RDS": 1, "CDS": n, "EDS": n}, w.Initial.Sent.ByType, "wildcard: everything up front")
	assert.Zero(t, w.ColdSent.Resources, "wildcard: nothing to fetch")

	assert.Equal(t, map[string]int{"LDS": 1, "RDS": 1, "CDS": n, "EDS": n}, v.Initial.Sent.ByType, "vhds: route configuration without virtual hosts, clusters still wildcard")
	assert.Len(t, v.ColdSent.Subscribed["VHDS"], 12, "one VirtualHost subscribe per cold host")
	assert.Contains(t, v.ColdSent.Subscribed["VHDS"], "quote-route/svc-0000")

	assert.Equal(t, map[string]int{"LDS": 1, "RDS": 1}, b.Initial.Sent.ByType, "vhds+cds: no VirtualHost, no Cluster up front: %+v", b.Initial.Sent)
	assert.Equal(t, map[string]int{"VHDS": 12, "CDS": 12, "EDS": 12}, b.ColdSent.ByType)
	for _, typ := range []string{"VHDS", "CDS", "EDS"} {
		assert.Len(t, b.ColdSent.Subscribed[typ], 12, "exactly one %s subscribe per cold host", typ)
	}
	// The service add: nothing pushed unasked, then exactly VirtualHost, Cluster and
	// assignment on the cold request.
	assert.Zero(t, b.Add.Pushed.Sent.Resources, "nothing reaches an on-demand Envoy that did not ask")
	assert.LessOrEqual(t, b.Add.Fetch.Sent.Resources, 3)
	assert.Equal(t, map[string]int{"VHDS": 1, "CDS": 1, "EDS": 1}, b.Add.Fetch.Sent.ByType)
	assert.Equal(t, int64(12+1+1), b.ActiveClusters, "the xDS cluster and the 13 services used")
}

// TestOnDemandValidate: the axis' option refusals, each an *OptionError naming its option.
func TestOnDemandValidate(t *testing.T) {
	good := func() benchcore.Options {
		return benchcore.Options{Clusters: []int{10}, Client: benchcore.ClientEnvoy, Modes: []protocol.Mode{protocol.Delta}, Repeat: 1,
			OnDemand: []resources.OnDemand{{}, {VirtualHosts: true, Clusters: true}}}
	}
	for name, tc := range map[string]struct {
		edit         func(*benchcore.Options)
		option, want string
	}{
		"sotw": {func(o *benchcore.Options) {
			o.Modes = []protocol.Mode{"sotw", "delta"}
			o.SotWVersions = benchcore.DefaultVersions
		}, benchcore.OptionModes, "vhds+cds runs delta only"},
		"twice":        {func(o *benchcore.Options) { o.OnDemand = append(o.OnDemand, resources.OnDemand{}) }, benchcore.OptionOnDemand, "none is listed twice"},
		"sim":          {func(o *benchcore.Options) { o.Client = benchcore.ClientSim }, benchcore.OptionClient, "real Envoy only"},
		"envoys":       {func(o *benchcore.Options) { o.Envoys = 2 }, benchcore.OptionEnvoys, "one Envoy"},
		"tap":          {func(o *benchcore.Options) { o.Through = []string{benchcore.ThroughTap} }, benchcore.OptionThrough, "direct only"},
		"workload":     {func(o *benchcore.Options) { o.Workloads = []string{benchcore.WorkloadRoute} }, benchcore.OptionWorkloads, "route is not measured on demand"},
		"cold hosts":   {func(o *benchcore.Options) { o.ColdHosts = benchcore.MaxColdHosts + 1 }, benchcore.OptionColdHosts, "outside"},
		"negative hot": {func(o *benchcore.Options) { o.ColdHosts = -1 }, benchcore.OptionColdHosts, "outside 1-10000"},
	} {
		t.Run(name, func(t *testing.T) {
			o := good()
			tc.edit(&o)
			assertOptionError(t, o.Validate(), tc.option, tc.want)
		})
	}
	o := good()
	o.Modes = []protocol.Mode{"sotw"}
	o.SotWVersions = benchcore.DefaultVersions
	err := o.Validate()
	require.ErrorIs(t, err, resources.ErrOnDemandNeedsDelta)
	var oe *benchcore.OptionError
	require.True(t, errors.As(err, &oe))
	o = good()
	require.NoError(t, o.Validate())
	assert.Equal(t, benchcore.DefaultColdHosts, o.ColdHosts)
	// SotW with nothing on demand is today's bench.
	o = good()
	o.Modes, o.SotWVersions, o.OnDemand = []protocol.Mode{"sotw"}, benchcore.DefaultVersions, []resources.OnDemand{{}}
	require.NoError(t, o.Validate())
}
