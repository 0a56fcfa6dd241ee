package bench

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/envoy/envoytest"
	"github.com/xds-workbench/lab/experiments/load"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
)

// TestChurnOptions: the churn axis refuses every client but real Envoy with one line
// before anything starts, and holds the request floor unless told otherwise.
func TestChurnOptions(t *testing.T) {
	base := func() Options {
		return Options{Clusters: []int{10}, Modes: []protocol.Mode{protocol.Delta}, Repeat: 1, Churn: []string{ChurnEDS, ChurnCDS}, Out: t.TempDir()}
	}
	for _, client := range []string{ClientSim, ClientGRPC} {
		o := base()
		o.Client = client
		_, err := Run(context.Background(), o)
		var oe *OptionError
		require.ErrorAs(t, err, &oe, client)
		assert.Equal(t, OptionClient, oe.Option)
		assert.ErrorIs(t, err, ErrChurnNeedsEnvoy)
		assert.NotContains(t, err.Error(), "\n", "one line")
	}
	o := base()
	require.NoError(t, o.Validate())
	assert.Equal(t, DefaultChurnRequests, o.ChurnRequests)
	assert.Equal(t, DefaultConnCost, o.ConnCost)

	o = base()
	o.ChurnRequests = 500
	var oe *OptionError
	require.ErrorAs(t, o.Validate(), &oe)
	assert.Equal(t, OptionChurnRequests, oe.Option)
	o = base()
	o.ChurnRequests, o.ChurnFewRequests = 500, true
	assert.NoError(t, o.Validate())

	o = base()
	o.Churn = []string{"rds"}
	require.ErrorAs(t, o.Validate(), &oe)
	assert.Equal(t, OptionChurn, oe.Option)
	o = base()
	o.Workloads = []string{WorkloadRoute}
	require.ErrorAs(t, o.Validate(), &oe)
	assert.Equal(t, OptionWorkloads, oe.Option)
}

// TestChurnLatency pins the window, the nearest-rank percentiles and the share slower
// than the connection cost on a fixture.
func TestChurnLatency(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var rs []load.Response
	// 1000 requests in the window, latency i+1 ms (1..1000 ms); one before and one at
	// the end of the window, both huge, must not count.
	for i := range 1000 {
		rs = append(rs, load.Response{Sent: t0.Add(time.Duration(i) * time.Millisecond), Latency: time.Duration(i+1) * time.Millisecond, Status: 200})
	}
	rs[10].Status, rs[10].Error = 0, "timeout"
	rs = append(rs, load.Response{Sent: t0.Add(-time.Millisecond), Latency: time.Hour, Status: 200},
		load.Response{Sent: t0.Add(time.Second), Latency: time.Hour, Status: 200})
	got := churnLatency(rs, t0, t0.Add(time.Second), 900*time.Millisecond)
	assert.Equal(t, ChurnLatency{Requests: 1000, Failed: 1, P50MS: 500, P99MS: 990, P999MS: 999, MaxMS: 1000, Slower: 100, Share: 0.1}, got)
	assert.Equal(t, ChurnLatency{}, churnLatency(nil, t0, t0.Add(time.Second), time.Millisecond))
}

// TestCheckChurn: a configuration whose updates did not all take effect fails.
func TestCheckChurn(t *testing.T) {
	ok := &ChurnConfig{Churn: ChurnCDS, Updates: 5, Applied: 5, ClusterModified: 5}
	assert.NoError(t, checkChurn(ok))
	for name, c := range map[string]*ChurnConfig{
		"throttled cds": {Churn: ChurnCDS, Updates: 5, Applied: 5, ClusterModified: 3},
		"eds modifies":  {Churn: ChurnEDS, Updates: 5, Applied: 5, ClusterModified: 1},
		"unapplied":     {Churn: ChurnEDS, Updates: 5, Applied: 4},
		"warming":       {Churn: ChurnEDS, Updates: 5, Applied: 5, WarmingClusters: 1},
		"no update":     {Churn: ChurnEDS},
	} {
		assert.Error(t, checkChurn(c), name)
	}
}

// TestChurnEnvoy: both churn modes against real Envoy, delta on the indexed cache, a few
// hundred requests each. Every update reaches the data plane; cds churn modifies the
// cluster once per update and eds churn never. Both destroy upstream connections (eds
// churn those of the host that leaves), but only cds churn drains the pool of the host
// that stays: it takes new connections with every update, under eds churn next to none.
// No latency is asserted.
func TestChurnEnvoy(t *testing.T) {
	envoytest.Require(t)
	rep, err := Run(context.Background(), Options{
		Clusters: []int{5}, Client: ClientEnvoy, Modes: []protocol.Mode{protocol.Delta}, Caches: []publish.Cache{publish.IndexedCache}, Repeat: 1,
		Churn: []string{ChurnEDS, ChurnCDS}, ChurnRequests: 600, ChurnFewRequests: true, ChurnRate: 200, Out: t.TempDir(),
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
		b.WriteString(bl.title + "\n")
	}
	if b.Len() == 0 {
		return "", errors.New("no table")
	}
	return b.String(), nil
}
