package main

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/xds-workbench/lab/experiments/bench/benchcore"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/resources"
)

// TestBenchOnDemandFlagsRefused: every bad --on-demand combination is refused before
// anything starts, in one line on the flag as typed, and nothing is written. SotW is
// refused with resources.ErrOnDemandNeedsDelta's own line.
func TestBenchOnDemandFlagsRefused(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"unknown shape":  {[]string{"--on-demand", "vhds,rds"}, "--on-demand vhds,rds: rds: unknown shape (want none, vhds, cds or vhds+cds)"},
		"one unknown":    {[]string{"--on-demand", "lazy"}, "--on-demand lazy: unknown shape (want none, vhds, cds or vhds+cds)"},
		"shape twice":    {[]string{"--on-demand", "vhds,vhds"}, "--on-demand vhds,vhds: vhds is listed twice"},
		"same shape":     {[]string{"--on-demand", "vhds+cds,cds+vhds"}, "--on-demand vhds+cds,cds+vhds: vhds+cds is listed twice"},
		"sotw":           {[]string{"--on-demand", "none,vhds", "--modes", "sotw,delta"}, "--modes sotw,delta: --on-demand vhds runs delta only (want --modes delta): " + resources.ErrOnDemandNeedsDelta.Error()},
		"sim":            {[]string{"--on-demand", "vhds", "--client", "sim"}, "--client sim: the on-demand axis runs real Envoy only (the simulated client does not subscribe to virtual hosts or clusters on demand)"},
		"envoys":         {[]string{"--on-demand", "vhds", "--envoys", "2"}, "--envoys 2: the on-demand axis runs one Envoy"},
		"tap":            {[]string{"--on-demand", "vhds", "--through", "direct,tap"}, "--through direct,tap: the on-demand axis runs direct only"},
		"other workload": {[]string{"--on-demand", "vhds", "--workload", "endpoint,route"}, "--workload endpoint,route: route is not measured on demand: the on-demand sequence measures endpoint (a one-service change) and cluster-add (a service add); want those or no --workload"},
		"cold hosts":     {[]string{"--on-demand", "vhds", "--cold-hosts", "0"}, "--cold-hosts 0: outside 1-10000"},
	} {
		t.Run(name, func(t *testing.T) { assertBenchRefused(t, tc.args, tc.want) })
	}
}

// TestBenchOnDemandFlags: shapes parse in order, "+" joins the parts of one; without
// --modes the axis runs delta; --cold-hosts reaches the options.
func TestBenchOnDemandFlags(t *testing.T) {
	o := parseBench(t)
	assert.Empty(t, o.OnDemand, "no on-demand axis by default")
	assert.Equal(t, benchcore.DefaultModes, o.Modes)

	o = parseBench(t, "--on-demand", "none,vhds,vhds+cds", "--cold-hosts", "50")
	assert.Equal(t, []resources.OnDemand{{}, {VirtualHosts: true}, {VirtualHosts: true, Clusters: true}}, o.OnDemand)
	assert.Equal(t, []protocol.Mode{protocol.Delta}, o.Modes, "on demand is delta only")
	assert.Equal(t, 50, o.ColdHosts)

	// Wildcard alone may run SotW (today's shape in the on-demand sequence).
	o = parseBench(t, "--on-demand", "none", "--modes", "sotw", "--sotw-versions", "per-type")
	assert.Equal(t, []protocol.Mode{protocol.SotW}, o.Modes)
}
