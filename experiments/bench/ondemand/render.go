package ondemand

import (
	"fmt"
	"slices"
	"strings"

	"github.com/xds-workbench/lab/experiments/bench/benchcore"
	"github.com/xds-workbench/lab/experiments/table"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// Tables are the on-demand axis' tables: the initial push and Envoy's memory,
// the request latencies, and the service add and one-service change.
func Tables(ods []*OnDemandConfig) []benchcore.Block {
	var ok []*OnDemandConfig
	for _, c := range ods {
		if c.Error == "" {
			ok = append(ok, c)
		}
	}
	id := func(c *OnDemandConfig) []string { return []string{fmt.Sprint(c.N), c.Shape, c.Series} }
	head := []string{"N", "shape", "series"}
	initial := benchcore.Block{
		Title: "On demand: initial push and Envoy's memory",
		Note:  "push: what the control plane sent for the initial state; from t0 (before the build): build, publish (the publisher returned), ready (Envoy /ready LIVE; with the LinearCache Envoy is LIVE before the publish, since that cache answers Envoy's first wildcard CDS and LDS requests empty), ack (the last ACK of the push); push: ack - publish (the wire and Envoy); RSS: after the push, with the first services used, after every cold and warm request; clusters: Envoy's active_clusters at the end (xds_cluster included)",
		Table: table.Table{Head: append(slices.Clone(head), "resources", "bytes", "build ms", "publish ms", "ready ms", "ack ms", "push ms", "RSS", "RSS used", "used", "RSS after", "clusters")},
	}
	requests := benchcore.Block{
		Title: "On demand: request latency (client send -> answer read, through Envoy, one at a time)",
		Note:  "cold: each service requested for the first time (with VHDS the on_demand filter holds it while Envoy fetches); warm: the same services again; fetched: resources and bytes the control plane sent per cold request",
		Table: table.Table{Head: append(slices.Clone(head), "requests", "cold p50", "cold p99", "cold max", "fetched/req", "bytes/req", "warm p50", "warm p99", "warm fetched")},
	}
	changes := benchcore.Block{
		Title: "On demand: a service add and a one-service change",
		Note:  "add pushed: what reached Envoy unasked when service N was added (until every send was ACKed and the stream was quiet); add fetch: the cold request for it and what it fetched; change: service 0's endpoint moved (medians over the repeats): resources, bytes, publish -> ACK, publish -> answer from the new backend",
		Table: table.Table{Head: append(slices.Clone(head), "held", "add pushed", "pushed bytes", "pushed ack ms", "add fetch ms", "fetched", "fetched bytes", "change res", "change bytes", "change ack ms", "change answer ms")},
	}
	for _, c := range ok {
		in := c.Initial
		initial.Add(append(id(c), benchcore.FmtCount(float64(in.Sent.Resources)), benchcore.FmtBytes(float64(in.Sent.Bytes)),
			benchcore.FmtMS(in.BuildMS), benchcore.FmtMS(in.PublishMS), optMS(in.ReadyMS), optMS(in.AckMS), optMS(minus(in.AckMS, in.PublishMS)), benchcore.FmtBytes(float64(c.RSSInitial)), benchcore.FmtBytes(float64(c.RSSUsed)), fmt.Sprint(c.UsedAtRSS), benchcore.FmtBytes(float64(c.RSSAfter)), fmt.Sprint(c.ActiveClusters)))
		perReq := func(v float64) float64 { return v / float64(max(c.Cold.Requests, 1)) }
		requests.Add(append(id(c), fmt.Sprint(c.Cold.Requests), benchcore.FmtMS(c.Cold.P50MS), benchcore.FmtMS(c.Cold.P99MS), benchcore.FmtMS(c.Cold.MaxMS),
			fmt.Sprintf("%.1f", perReq(float64(c.ColdSent.Resources))), benchcore.FmtBytes(perReq(float64(c.ColdSent.Bytes))), benchcore.FmtMS(c.Warm.P50MS), benchcore.FmtMS(c.Warm.P99MS), benchcore.FmtCount(float64(c.WarmSent.Resources))))
		a := c.Add
		changes.Add(append(id(c), fmt.Sprint(a.Held), sentCell(a.Pushed.Sent), benchcore.FmtBytes(float64(a.Pushed.Sent.Bytes)), optMS(a.Pushed.AckMS),
			benchcore.FmtMS(a.Fetch.MS), sentCell(a.Fetch.Sent), benchcore.FmtBytes(float64(a.Fetch.Sent.Bytes)),
			medianOf(c.Changes, func(s ODStep) float64 { return float64(s.Sent.Resources) }, benchcore.FmtCount),
			medianOf(c.Changes, func(s ODStep) float64 { return float64(s.Sent.Bytes) }, benchcore.FmtBytes),
			medianOf(c.Changes, func(s ODStep) float64 { return deref(s.AckMS) }, benchcore.FmtMS),
			medianOf(c.Changes, func(s ODStep) float64 { return deref(s.DataPlaneMS) }, benchcore.FmtMS)))
	}
	return []benchcore.Block{initial, requests, changes}
}

// sentCell is "3 (VHDS 1, CDS 1, EDS 1)", or "0".
func sentCell(s Sent) string {
	if s.Resources == 0 {
		return "0"
	}
	var parts []string
	for _, t := range xdslog.Types {
		if n := s.ByType[t]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", t, n))
		}
	}
	return fmt.Sprintf("%d (%s)", s.Resources, strings.Join(parts, ", "))
}

func optMS(v *float64) string {
	if v == nil {
		return "-"
	}
	return benchcore.FmtMS(*v)
}

// minus is v - d, or nil without v.
func minus(v *float64, d float64) *float64 {
	if v == nil {
		return nil
	}
	x := *v - d
	return &x
}

func deref(v *float64) float64 {
	if v == nil {
		return 0
	}
	return *v
}

func medianOf(steps []ODStep, f func(ODStep) float64, fmtf func(float64) string) string {
	if len(steps) == 0 {
		return "-"
	}
	v := make([]float64, len(steps))
	for i, s := range steps {
		v[i] = f(s)
	}
	return fmtf(benchcore.StatOf(v).Median)
}
