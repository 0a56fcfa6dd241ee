package runner

import (
	"context"
	"encoding/json"
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
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
	"github.com/xds-workbench/lab/shared/xdslog/xdslogtest"
)

// TestRemovingAListenerKeepsItsRoute checks with real Envoy what goes with a removed
// parent. A removed cluster takes its endpoints: Envoy unsubscribes from them (the
// recorder then counts them as no longer held; TestRunEnvoy). A removed listener does not
// take its route configuration, in either protocol: Envoy 1.40 ACKs the LDS response
// without the listener and the RDS response without (or, in delta, removing) the route,
// sends no RDS unsubscribe, and keeps the route in its config dump while the listener is
// gone. So the recorder keeps the route held, and re-sending it with the restored
// listener is redundant: Envoy already runs it.
func TestRemovingAListenerKeepsItsRoute(t *testing.T) {
	bin := envoytest.Require(t)
	for _, mode := range []protocol.Mode{protocol.SotW, protocol.Delta} {
		t.Run(mode.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			acc := analysis.NewAccumulator()
			var log xdslogtest.Log
			rec := xdslog.NewRecorder(&log, mode, xdslog.WithObserver(acc.Observe))
			cp, err := controlplane.Start(ctx, controlplane.Options{Mode: mode, Addr: loopback.Addr(0), Recorder: rec})
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
			full := resources.State{InventoryPort: b.Port(), ListenerPort: lp}
			step := func(name, version string, dropListener bool) {
				t.Helper()
				rec.SetStep(name)
				s := full
				s.Version = version
				set, err := resources.Build(s)
				require.NoError(t, err)
				if dropListener {
					delete(set.ByType, resources.LDS)
					delete(set.ByType, resources.RDS) // nothing references it: Consistent wants it gone too
				}
				require.NoError(t, cp.Publisher().Publish(ctx, set))
			}
			acks := func(step, typ string) int {
				if st := acc.Step(step); st != nil && st.Types[typ] != nil {
					return st.Types[typ].Acks
				}
				return 0
			}
			events := func(step string) []xdslog.Event {
				var out []xdslog.Event
				for _, e := range log.Events(t) {
					if e.Step == step {
						out = append(out, e)
					}
				}
				return out
			}

			step("full", "1", false)
			p, err := newEnvoyClient(bin, mode, t.TempDir(), bootstrap.Params{XDSAddr: cp.Addr()}, lp, "", nil, nil)
			require.NoError(t, err)
			require.NoError(t, p.Start(ctx))
			defer func() { _ = p.Stop(context.Background()) }()
			require.Eventually(t, func() bool { return acks("full", "RDS") >= 1 && acks("full", "EDS") >= 1 }, 30*time.Second, 20*time.Millisecond)

			step("listener-removed", "2", true)
			require.Eventually(t, func() bool { return acks("listener-removed", "LDS") >= 1 && acks("listener-removed", "RDS") >= 1 },
				30*time.Second, 20*time.Millisecond, "Envoy ACKs the responses without the listener and its route")
			require.Eventually(t, func() bool {
				dump, err := p.ConfigDump(ctx)
				return err == nil && !listenerActive(t, dump)
			}, 30*time.Second, 50*time.Millisecond, "the listener is no longer active")
			// An absence over a bounded window: Envoy sends no RDS unsubscribe and keeps the
			// route while the listener is gone.
			assert.Never(t, func() bool {
				for _, e := range events("listener-removed") {
					if e.Type == "RDS" && len(e.Removed) > 0 && (e.Event == xdslog.EventRequest || e.Event == xdslog.EventStale) {
						return true
					}
				}
				dump, err := p.ConfigDump(ctx)
				return err == nil && !routeInDump(t, dump)
			}, 2*time.Second, 100*time.Millisecond, "Envoy keeps its route subscription and the route")

			step("listener-restored", "3", false)
			require.Eventually(t, func() bool { return acks("listener-restored", "RDS") >= 1 }, 30*time.Second, 20*time.Millisecond)
			var route []xdslog.Resource
			for _, e := range events("listener-restored") {
				if e.Event == xdslog.EventSend && e.Type == "RDS" {
					route = append(route, e.Resources...)
				}
			}
			require.NotEmpty(t, route, "the route is sent with the restored listener")
			for _, r := range route {
				assert.True(t, r.IsRedundant(), "Envoy still runs exactly this route: redundant")
			}
		})
	}
}

// routeInDump reports whether Envoy's config dump still has the teaching route.
func routeInDump(t *testing.T, dump []byte) bool {
	t.Helper()
	var doc struct {
		Configs []struct {
			Type    string `json:"@type"`
			Dynamic []struct {
				RouteConfig struct {
					Name string `json:"name"`
				} `json:"route_config"`
			} `json:"dynamic_route_configs"`
		} `json:"configs"`
	}
	require.NoError(t, json.Unmarshal(dump, &doc))
	for _, c := range doc.Configs {
		for _, r := range c.Dynamic {
			if r.RouteConfig.Name == resources.RouteName {
				return true
			}
		}
	}
	return false
}

// listenerActive reports whether the teaching listener is active in Envoy's config dump.
func listenerActive(t *testing.T, dump []byte) bool {
	t.Helper()
	var doc struct {
		Configs []struct {
			Dynamic []struct {
				Name        string          `json:"name"`
				ActiveState json.RawMessage `json:"active_state"`
			} `json:"dynamic_listeners"`
		} `json:"configs"`
	}
	require.NoError(t, json.Unmarshal(dump, &doc))
	for _, c := range doc.Configs {
		for _, l := range c.Dynamic {
			if l.Name == resources.ListenerName && len(l.ActiveState) > 0 {
				return true
			}
		}
	}
	return false
}
