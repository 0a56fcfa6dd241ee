package runner

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/bootstrap"
	"github.com/xds-workbench/lab/experiments/analysis"
	"github.com/xds-workbench/lab/experiments/controlplane"
	"github.com/xds-workbench/lab/experiments/envoy/envoytest"
	"github.com/xds-workbench/lab/experiments/inventory"
	"github.com/xds-workbench/lab/shared/loopback"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
	"github.com/xds-workbench/lab/shared/xdslog/xdslogtest"
)

// TestRunEnvoyLinear: the eight teaching steps pass against real Envoy with --cache
// linear in both protocols. What the LinearCache changes is asserted here: run.json
// says linear (and, in SotW, per-type and hold, what it does); SotW versions are the
// caches' own, behind a prefix; a restarted control plane gives out versions under a
// new prefix, never one the old server gave out (contour#6250); Envoy's NACK of the
// invalid route is not answered with a re-send.
func TestRunEnvoyLinear(t *testing.T) {
	envoytest.Require(t)
	for _, mode := range []protocol.Mode{protocol.SotW, protocol.Delta} {
		t.Run(mode.String(), func(t *testing.T) {
			dir := t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			res, err := Execute(ctx, Options{Mode: mode, Client: ClientEnvoy, Out: dir, StepTimeout: 40 * time.Second, Cache: publish.LinearCache})
			require.NoError(t, err)
			require.True(t, res.Passed)
			assert.Equal(t, "PASS", readLine(t, filepath.Join(dir, "envoy.result")))
			for _, st := range teachingSteps(t) {
				c := readCheckpoint(t, dir, st.Checkpoint)
				assert.True(t, c.Passed, "%s passed", st.Name)
			}
			info := rawRunInfo(t, dir)
			assert.Equal(t, "linear", info.Cache)
			if mode == protocol.SotW {
				assert.Equal(t, "per-type", info.SotWVersions)
				assert.Equal(t, "hold", info.NackPolicy)
			}
			ev := logEvents(t, dir)
			prefixes := map[int]string{}
			for _, e := range ev {
				if e.Event != xdslog.EventSend {
					continue
				}
				dot := strings.LastIndexByte(e.Version, '.')
				require.Greater(t, dot, 0, "a LinearCache version has the instance prefix: %q", e.Version)
				p := e.Version[:dot+1]
				if old, ok := prefixes[e.Server]; ok {
					assert.Equal(t, old, p, "one prefix per server")
				}
				prefixes[e.Server] = p
			}
			require.Len(t, prefixes, 2, "two servers (control-plane-restart)")
			assert.NotEqual(t, prefixes[1], prefixes[2], "a restarted control plane never reuses a version")

			nacks := eventsOf(ev, "invalid-route", xdslog.EventNack, "RDS")
			require.NotEmpty(t, nacks)
			assert.Len(t, nacks, 1, "the LinearCache does not re-send the rejected route")
			assert.Len(t, eventsOf(ev, "invalid-route", xdslog.EventSend, "RDS"), 1)
		})
	}
}

// TestEnvoyAppliesOneOfNAssignments: with the LinearCache, a SotW EDS response holds
// only the assignment that changed (in SotW only LDS and CDS are full-state types; an
// EDS resource absent from a response is kept: xds_protocol.rst, "Grouping Resources
// into Responses"), and real
// Envoy applies it without touching the others. N=3 clusters; one endpoint changes; the
// EDS send has exactly one resource; Envoy's config dump still has all three
// assignments, the other two at their old version and port.
func TestEnvoyAppliesOneOfNAssignments(t *testing.T) {
	bin := envoytest.Require(t)
	const mode = protocol.SotW
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	acc := analysis.NewAccumulator()
	var log xdslogtest.Log
	rec := xdslog.NewRecorder(&log, mode, xdslog.WithObserver(acc.Observe))
	cp, err := controlplane.Start(ctx, controlplane.Options{Mode: mode, Addr: loopback.Addr(0), Recorder: rec, Cache: publish.LinearCache})
	require.NoError(t, err)
	defer cp.Stop()
	b, err := inventory.Start("v1", 0, "")
	require.NoError(t, err)
	defer func() { _ = b.Stop(context.Background()) }()
	backends := &backendSet{}
	backends.add(b)
	lp, err := loopback.FreePort()
	require.NoError(t, err)
	t.Cleanup(func() { loopback.Release(lp) })
	other, err := loopback.FreePort()
	require.NoError(t, err)
	t.Cleanup(func() { loopback.Release(other) })
	acks := func(step, typ string) int {
		if st := acc.Step(step); st != nil && st.Types[typ] != nil {
			return st.Types[typ].Acks
		}
		return 0
	}
	publish := func(step string, s resources.State) {
		t.Helper()
		rec.SetStep(step)
		_, err := cp.Publish(ctx, s)
		require.NoError(t, err)
	}

	publish("initial", resources.State{Version: "1", InventoryPort: b.Port(), ListenerPort: lp, Clusters: 3})
	p, err := newEnvoyClient(bin, mode, t.TempDir(), bootstrap.Params{XDSAddr: cp.Addr()}, lp, "", nil, nil)
	require.NoError(t, err)
	require.NoError(t, p.Start(ctx))
	defer func() { _ = p.Stop(context.Background()) }()
	dumpEDS := func() map[string]string {
		dump, err := p.ConfigDump(ctx)
		if err != nil {
			return nil
		}
		return configVersions(dump)
	}
	var before map[string]string
	require.Eventually(t, func() bool {
		before = dumpEDS()
		for i := range 3 {
			if before["EDS/"+resources.ScaledClusterName(i)+" port"] == "" {
				return false
			}
		}
		return true
	}, 30*time.Second, 50*time.Millisecond, "Envoy runs the three assignments")
	// And the initial exchange is over (RDS comes last, after the listener): otherwise its
	// late RDS send lands in the next step.
	require.Eventually(t, func() bool {
		return acks("initial", "LDS") >= 1 && acks("initial", "RDS") >= 1 && acks("initial", "CDS") >= 1
	}, 30*time.Second, 20*time.Millisecond, "Envoy ACKed the initial state")

	statsBefore, err := p.Stats(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, statsBefore["cluster."+resources.ScaledClusterName(0)+".update_success"])
	changed := resources.ScaledClusterName(1)
	publish("one-endpoint", resources.State{Version: "2", InventoryPort: b.Port(), ListenerPort: lp, Clusters: 3, EndpointPorts: map[int]int{1: other}})
	require.Eventually(t, func() bool { return acks("one-endpoint", "EDS") >= 1 }, 30*time.Second, 20*time.Millisecond, "Envoy ACKs the EDS response")
	var after map[string]string
	require.Eventually(t, func() bool {
		after = dumpEDS()
		return after["EDS/"+changed+" port"] == strconv.Itoa(other)
	}, 30*time.Second, 50*time.Millisecond, "Envoy applies the new endpoint")

	var sends []xdslog.Event
	for _, e := range log.Events(t) {
		if e.Step == "one-endpoint" && e.Event == xdslog.EventSend {
			sends = append(sends, e)
		}
	}
	require.Len(t, sends, 1, "only EDS is sent")
	require.Equal(t, "EDS", sends[0].Type)
	require.Len(t, sends[0].Resources, 1, "the SotW EDS response holds one of the three assignments")
	assert.Equal(t, changed, sends[0].Resources[0].Name)
	statsAfter, err := p.Stats(ctx)
	require.NoError(t, err)
	for i := range 3 {
		name := resources.ScaledClusterName(i)
		require.Contains(t, after, "EDS/"+name, "Envoy still has %s", name)
		k := "cluster." + name + ".update_success"
		if name == changed {
			b, _ := strconv.Atoi(statsBefore[k])
			a, _ := strconv.Atoi(statsAfter[k])
			assert.Greater(t, a, b, "%s: Envoy applied the update (%s)", name, k)
			continue
		}
		assert.Equal(t, before["EDS/"+name+" port"], after["EDS/"+name+" port"], "%s: endpoint untouched", name)
		assert.Equal(t, statsBefore[k], statsAfter[k], "%s: Envoy applied no update to it (%s)", name, k)
	}
	if t.Failed() {
		b, _ := json.MarshalIndent(after, "", "  ")
		t.Logf("config dump versions after: %s", b)
	}
}
