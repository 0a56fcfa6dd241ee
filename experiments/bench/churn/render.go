package churn

import (
	"fmt"

	"github.com/xds-workbench/lab/experiments/bench/benchcore"
	"github.com/xds-workbench/lab/experiments/table"
)

// Tables is the churn axis' table: one row per configuration that passed its
// checks (a failed one is listed with the failures instead).
func Tables(cs []*ChurnConfig) []benchcore.Block {
	b := benchcore.Block{
		Title: "Churn: request latency under endpoint churn (steady load through Envoy)",
		Note: "churn eds: cluster 0's ClusterLoadAssignment changes (one endpoint stays, one alternates); churn cds: the cluster changes too (connect_timeout + 1 ms) with its assignment; " +
			"requests: the load's requests sent during the churn; p50, p99, p99.9: nearest rank, failures included; cx destroyed/update and cx opened/update: cluster 0's upstream_cx_destroy and upstream_cx_total grown over the churn ÷ updates; stay new cx: new connections the backend that stays in cluster 0 took over the churn (its pool drained and rebuilt); " +
			"slower than cost: share of requests slower than the backends' delay on a connection's first request; updates applied: seen in the data plane (a probe answered by the new backend) / published; cluster_modified: Envoy's counter grown over the churn",
		Table: table.Table{Head: []string{"churn", "series", "N", "requests", "failed", "p50 ms", "p99 ms", "p99.9 ms", "max ms", "cx destroyed/update", "cx opened/update", "stay new cx", "slower than cost", "updates applied", "cluster_modified", "load avg"}},
	}
	for _, c := range cs {
		if c.Error != "" {
			continue
		}
		l := c.Latency
		b.Add([]string{c.Churn, c.Series, fmt.Sprint(c.N), fmt.Sprint(l.Requests), fmt.Sprint(l.Failed), benchcore.FmtMS(l.P50MS), benchcore.FmtMS(l.P99MS), benchcore.FmtMS(l.P999MS), benchcore.FmtMS(l.MaxMS),
			fmt.Sprintf("%.2f", c.DestroyedPerUpdate), fmt.Sprintf("%.2f", c.OpenedPerUpdate), fmt.Sprint(c.StayConns), fmt.Sprintf("%.2f%%", 100*l.Share),
			fmt.Sprintf("%d/%d", c.Applied, c.Updates), fmt.Sprint(c.ClusterModified), benchcore.OrDash(c.LoadAvg)})
	}
	return []benchcore.Block{b}
}
