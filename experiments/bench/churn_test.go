package bench

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/bench/benchcore"
	"github.com/xds-workbench/lab/experiments/envoy/envoytest"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
)

// TestChurnOptions: the churn axis refuses every client but real Envoy with one line
// before anything starts, and holds the request floor unless told otherwise.
func TestChurnOptions(t *testing.T) {
	base := func() benchcore.Options {
		return benchcore.Options{Clusters: []int{10}, Modes: []protocol.Mode{protocol.Delta}, Repeat: 1, Churn: []string{benchcore.ChurnEDS, benchcore.ChurnCDS}, Out: t.TempDir()}
	}
	for _, client := range []string{benchcore.ClientSim, benchcore.ClientGRPC} {
		o := base()
		o.Client = client
		_, err := Run(context.Background(), o)
		var oe *benchcore.OptionError
		require.ErrorAs(t, err, &oe, client)
		assert.Equal(t, benchcore.OptionClient, oe.Option)
		assert.ErrorIs(t, err, benchcore.ErrChurnNeedsEnvoy)
		assert.NotContains(t, err.Error(), "\n", "one line")
	}
	o := base()
	require.NoError(t, o.Validate())
	assert.Equal(t, benchcore.DefaultChurnRequests, o.ChurnRequests)
	assert.Equal(t, benchcore.DefaultConnCost, o.ConnCost)

	o = base()
	o.ChurnRequests = 500
	var oe *benchcore.OptionError
	require.ErrorAs(t, o.Validate(), &oe)
	assert.Equal(t, benchcore.OptionChurnRequests, oe.Option)
	o = base()
	o.ChurnRequests, o.ChurnFewRequests = 500, true
	assert.NoError(t, o.Validate())

	o = base()
	o.Churn = []string{"rds"}
	require.ErrorAs(t, o.Validate(), &oe)
	assert.Equal(t, benchcore.OptionChurn, oe.Option)
	o = base()
	o.Workloads = []string{benchcore.WorkloadRoute}
	require.ErrorAs(t, o.Validate(), &oe)
	assert.Equal(t, benchcore.OptionWorkloads, oe.Option)
}

// TestChurnEnvoy: both churn modes against real Envoy, delta on the indexed cache, a few
// hundred requests each. Every update reaches the data plane; cds churn modifies the
// cluster once per update and eds churn never. Both destroy upstream connections (eds
// churn those of the host that leaves), but only cds churn drains the pool of the host
// that stays: it takes new connections with every update, under eds churn next to none.
// No latency is asserted.
func TestChurnEnvoy(t *testing.T) {
	envoytest.Require(t)
	rep, err := Run(context.Background(), benchcore.Options{
		Clusters: []int{5}, Client: benchcore.ClientEnvoy, Modes: []protocol.Mode{protocol.Delta}, Caches: []publish.Cache{publish.IndexedCache}, Repeat: 1,
		Churn: []string{benchcore.ChurnEDS, benchcore.ChurnCDS}, ChurnRequests: 600, ChurnFewRequests: true, ChurnRate: 200, Out: t.TempDir(),
	})
	require.NoError(t, err)
	require.Len(t, rep.Churn, 2)
	eds, cds := rep.Churn[0], rep.Churn[1]
	for _, c := range rep.Churn {
		require.Empty(t, c.Error, c.Churn)
		assert.GreaterOrEqual(t, c.Latency.Requests, 600, c.Churn)
		assert.Positive(t, c.Updates, c.Churn)
		assert.Equal(t, c.Updates, c.Applied, c.Churn)
		assert.Zero(t, c.WarmingClusters, c.Churn)
		assert.Zero(t, c.Latency.Failed, c.Churn)
	}
	t.Logf("eds %+v\ncds %+v", *eds, *cds)
	assert.Zero(t, eds.ClusterModified)
	assert.Equal(t, int64(cds.Updates), cds.ClusterModified)
	assert.Positive(t, eds.CxDestroyed, "eds churn drains the pool of the host that leaves")
	assert.GreaterOrEqual(t, cds.StayConns, int64(cds.Updates), "cds churn: a new connection to the host that stays with every update")
	assert.Less(t, 10*eds.StayConns, cds.StayConns, "eds churn keeps the pool of the host that stays")
	md, err := readFile(t, rep)
	require.NoError(t, err)
	assert.Contains(t, md, "Churn: request latency under endpoint churn")
}

func readFile(t *testing.T, rep *Report) (string, error) {
	t.Helper()
	var b strings.Builder
	for _, bl := range rep.tables() {
		b.WriteString(bl.Title + "\n")
	}
	if b.Len() == 0 {
		return "", errors.New("no table")
	}
	return b.String(), nil
}
