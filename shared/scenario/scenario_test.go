package scenario

import (
	"strings"
	"testing"

	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/resources"
)

func TestTeachingScenario(t *testing.T) {
	sc, err := Builtin("teaching")
	require.NoError(t, err)
	steps := sc.Steps
	assert.Equal(t, []string{"initial", "port-change", "invalid-route", "recover", "envoy-restart", "control-plane-restart", "remove-cluster", "restore"}, Names(steps))
	seen := map[string]bool{}
	for _, s := range steps {
		assert.False(t, seen[s.Checkpoint], "checkpoint names are unique")
		seen[s.Checkpoint] = true
		assert.NotEmpty(t, s.Proves)
	}
	assert.Equal(t, []string{"initial", "updated", "rejected-keeps-v2", "recovered", "reconnected", "cp-restarted", "removed", "restored"},
		func() (out []string) {
			for _, s := range steps {
				out = append(out, s.Checkpoint)
			}
			return
		}())
	assert.Equal(t, resources.RDS, steps[2].Expect.Nacks[0].Type)
	assert.Equal(t, "NC", steps[6].Expect.Requests[0].Flags)
	assert.Equal(t, RestartEnvoy, steps[4].Action)
	assert.Equal(t, RestartControlPlane, steps[5].Action)
}

// The teaching file publishes exactly what the teaching State builds: the same
// resources, byte for byte (same hashes), at every publish.
func TestTeachingEqualsTheTeachingState(t *testing.T) {
	sc, err := Builtin("teaching")
	require.NoError(t, err)
	env := Env{Backends: map[string]int{"v1": 18081, "v2": 18082}, ListenerPort: 19000, AccessLog: "/tmp/access.log"}
	states := map[string]resources.State{
		"initial":        {Version: "1", InventoryPort: 18081},
		"port-change":    {Version: "2", InventoryPort: 18082},
		"invalid-route":  {Version: "3", InventoryPort: 18082, InvalidRoute: true},
		"recover":        {Version: "4", InventoryPort: 18081},
		"remove-cluster": {Version: "5", InventoryPort: 18081, InventoryRemoved: true},
		"restore":        {Version: "6", InventoryPort: 18081},
	}
	d := NewDesired(sc)
	for _, st := range sc.Steps {
		if st.Action != Publish {
			continue
		}
		v, err := d.Apply(st.Change)
		require.NoError(t, err)
		got, err := d.Set(v, env)
		require.NoError(t, err, st.Name)
		want := states[st.Name]
		want.ListenerPort, want.AccessLogPath = env.ListenerPort, env.AccessLog
		ws, err := resources.Build(want)
		require.NoError(t, err)
		assert.Equal(t, want.Version, got.Version, st.Name)
		for _, typ := range resources.Types {
			assert.Equal(t, ws.Hashes(typ), got.Hashes(typ), "%s %s", st.Name, typ)
		}
		assert.Equal(t, ws.Invalid, got.Invalid, st.Name)
	}
}

func TestSelect(t *testing.T) {
	sc, err := Builtin("teaching")
	require.NoError(t, err)
	all := sc.Steps
	got, err := Select(all, nil)
	require.NoError(t, err)
	assert.Len(t, got, len(all))
	got, err = Select(all, []string{"remove-cluster", "initial"})
	require.NoError(t, err)
	assert.Equal(t, []string{"initial", "remove-cluster"}, Names(got), "scenario order, not argument order")
	_, err = Select(all, []string{"initial", "teleport"})
	assert.ErrorContains(t, err, `unknown step "teleport" (known: initial,`, "no step is near: no guess")
	_, err = Select(all, []string{"inital", "restore"})
	assert.ErrorContains(t, err, `unknown step "inital"; did you mean initial? (known: `)
	_, err = Select(all, []string{"envoy-restart"})
	assert.ErrorContains(t, err, "must publish")
}

// TestMistypedScenarioName: a name near a built-in one is offered (shared/suggest),
// wherever a scenario is named; a far one gets the list only.
func TestMistypedScenarioName(t *testing.T) {
	_, err := Load("teachnig")
	assert.EqualError(t, err, `no built-in scenario "teachnig" and no such file; did you mean teaching? (built-in: `+strings.Join(PackNames(), ", ")+")")
	_, err = Builtin("warming-ordr")
	assert.ErrorContains(t, err, `no built-in scenario "warming-ordr"; did you mean warming-order? (built-in: `)
	_, err = BuiltinSource("undr-load")
	assert.ErrorContains(t, err, "; did you mean under-load? ")
	_, err = Load("quux")
	assert.ErrorContains(t, err, `no built-in scenario "quux" and no such file (built-in: `)
}

func typeOf(s string) resources.Type { return resources.Type(s) }

// TestVersionLabels: publishes count 1, 2, ...; an explicit label stands as given, and
// "{prev}" is the last label given without it.
func TestVersionLabels(t *testing.T) {
	sc, err := Builtin("teaching")
	require.NoError(t, err)
	d := NewDesired(sc)
	var got []string
	for _, c := range []Change{
		{Upsert: []string{"quote-listener", "quote-route", "inventory-v1"}},
		{Upsert: []string{"inventory-v2"}},
		{Version: "{prev}.1", Delete: []string{"inventory-v2"}},
		{Version: "{prev}.2", Upsert: []string{"inventory-v1"}},
		{Upsert: []string{"inventory-v2"}},
		{Version: "blue", Upsert: []string{"inventory-v1"}},
		{Version: "{prev}-again", Upsert: []string{"inventory-v2"}},
	} {
		v, err := d.Apply(c)
		require.NoError(t, err)
		got = append(got, v)
	}
	assert.Equal(t, []string{"1", "2", "2.1", "2.2", "3", "blue", "blue-again"}, got)
	assert.Len(t, d.Keys(), 4, "deleting inventory-v2 removed the CDS and EDS resources named inventory; the next upsert put them back")
}

// TestOnDemandKeys: on_demand (a list or "vhds,cds") selects the on_demand filter on
// short-form listeners and limits the scenario to delta; the vhost short form is named
// <route>/<host>; route rules take cluster_header; requests take a Host.
func TestOnDemandKeys(t *testing.T) {
	sc, err := Parse("od.yaml", []byte(`name: od
description: on-demand keys
on_demand: vhds,cds
backends: [v1]
resources:
  l:
    listener: {route: r, odcds_timeout: 2s}
  r:
    route: {vhds: true}
  a:
    vhost:
      route: r
      host: a
      domains: [a.example]
      routes: [{prefix: /quote, cluster_header: x-cluster}]
  c:
    cluster: {backends: [v1]}
steps:
  - name: initial
    publish: {upsert: [l, r, a, c]}
    expect:
      requests: [{path: /quote, host: a, headers: {x-cluster: c}, status: 200, backend: v1}]
`))
	require.NoError(t, err)
	assert.Equal(t, resources.OnDemand{VirtualHosts: true, Clusters: true}, sc.OnDemand)
	assert.Equal(t, []protocol.Mode{protocol.Delta}, sc.Modes, "on-demand runs in delta only")
	assert.NoError(t, sc.CheckMode("delta"))
	err = sc.CheckMode("sotw")
	assert.True(t, IsNotApplicable(err))
	assert.ErrorIs(t, err, resources.ErrOnDemandNeedsDelta)
	assert.Equal(t, "a", sc.Steps[0].Expect.Requests[0].Host)

	env := checkEnv(sc.Backends)
	vh := sc.Resources["a"].Items[0]
	assert.Equal(t, resources.VHDS, vh.Type)
	assert.Equal(t, "r/a", vh.Name)
	m, err := vh.Build(env)
	require.NoError(t, err)
	v := m.(*route.VirtualHost)
	assert.Equal(t, []string{"a", "a.example"}, v.GetDomains())
	assert.Equal(t, "x-cluster", v.GetRoutes()[0].GetRoute().GetClusterHeader())
	m, err = sc.Resources["r"].Items[0].Build(env)
	require.NoError(t, err)
	assert.NotNil(t, m.(*route.RouteConfiguration).GetVhds())
	m, err = sc.Resources["l"].Items[0].Build(env)
	require.NoError(t, err)
	raw, err := protojson.Marshal(m)
	require.NoError(t, err)
	assert.Contains(t, string(raw), "envoy.filters.http.on_demand")
	assert.Contains(t, string(raw), `"timeout":"2s"`, "odcds_timeout")

	// The list form reads the same; modes alone limits a scenario too.
	sc2, err := Parse("m.yaml", []byte("name: m\ndescription: d\non_demand: [vhds]\nmodes: [delta]\nresources: {l: {listener: {route: r}}}\nsteps: [{name: i, publish: {upsert: [l]}}]\n"))
	require.NoError(t, err)
	assert.Equal(t, resources.OnDemand{VirtualHosts: true}, sc2.OnDemand)
	sc3, err := Parse("m.yaml", []byte("name: m\ndescription: d\nmodes: [sotw]\nresources: {l: {listener: {route: r}}}\nsteps: [{name: i, publish: {upsert: [l]}}]\n"))
	require.NoError(t, err)
	err = sc3.CheckMode("delta")
	assert.True(t, IsNotApplicable(err))
	assert.EqualError(t, err, "scenario m does not apply to mode delta: it runs in sotw only (modes:)")
}
