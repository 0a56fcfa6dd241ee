package scenario

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
	assert.ErrorContains(t, err, `unknown step "teleport"`)
	_, err = Select(all, []string{"envoy-restart"})
	assert.ErrorContains(t, err, "must publish")
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
