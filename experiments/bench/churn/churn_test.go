package churn

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/xds-workbench/lab/experiments/bench/benchcore"
	"github.com/xds-workbench/lab/experiments/load"
)

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
	ok := &ChurnConfig{Churn: benchcore.ChurnCDS, Updates: 5, Applied: 5, ClusterModified: 5}
	assert.NoError(t, checkChurn(ok))
	for name, c := range map[string]*ChurnConfig{
		"throttled cds": {Churn: benchcore.ChurnCDS, Updates: 5, Applied: 5, ClusterModified: 3},
		"eds modifies":  {Churn: benchcore.ChurnEDS, Updates: 5, Applied: 5, ClusterModified: 1},
		"unapplied":     {Churn: benchcore.ChurnEDS, Updates: 5, Applied: 4},
		"warming":       {Churn: benchcore.ChurnEDS, Updates: 5, Applied: 5, WarmingClusters: 1},
		"no update":     {Churn: benchcore.ChurnEDS},
	} {
		assert.Error(t, checkChurn(c), name)
	}
}
